/**
 * The real recordings (testdata/deepspeed/: DeepSpeed 0.14.5 ZeRO-3 with
 * NVMe offload under strace) imported, checked line by line against the
 * published schema, and held against what the raw logs say when counted
 * another way (regular expressions over the text).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Ajv } from "ajv";
import { ROOT } from "../tests/_helpers.ts";
import { importStrace } from "./import.ts";
import { TraceReader } from "./reader.ts";
import { traceStats } from "./stats.ts";

const DIR = join(ROOT, "trace", "testdata", "deepspeed", "recordings");
const RECORDINGS = [
  "strace-ds0.14.5-tiny-opt_nvme.txt.gz",
  "strace-ds0.14.5-tiny-opt_nvme_sg1e7.txt.gz",
  "strace-ds0.14.5-tiny-opt_nvme_pipeline.txt.gz",
  "strace-ds0.14.5-tiny-opt_param_nvme_maxcpu0.txt.gz",
];

async function gunzipText(path: string): Promise<string> {
  const f = await Deno.open(path);
  return await new Response(f.readable.pipeThrough(new DecompressionStream("gzip"))).text();
}

/** What the raw log holds, counted with regular expressions: every iocb and every marker. */
function rawCounts(text: string) {
  const writes = [
    ...text.matchAll(
      /IOCB_CMD_PWRITE, aio_fildes=\d+, aio_buf=(?:"(?:[^"\\]|\\.)*"(?:\.\.\.)?|0x[0-9a-f]+), aio_nbytes=(\d+)/g,
    ),
  ];
  const reads = [
    ...text.matchAll(/IOCB_CMD_PREAD, aio_fildes=\d+, aio_buf=0x[0-9a-f]+, aio_nbytes=(\d+)/g),
  ];
  return {
    writeBytes: writes.reduce((t, m) => t + Number(m[1]), 0),
    writeIocbs: writes.length,
    readBytes: reads.reduce((t, m) => t + Number(m[1]), 0),
    readIocbs: reads.length,
    markers: new Set([...text.matchAll(/"(TBMARK [^"]*)"/g)].map((m) => m[1])).size,
  };
}

const ajv = new Ajv({ strict: true, allErrors: true });
const validate = ajv.compile(
  JSON.parse(await Deno.readTextFile(join(ROOT, "schemas", "trace.schema.json"))),
);

for (const name of RECORDINGS) {
  Deno.test(`${name}: imported, every line valid against schemas/trace.schema.json, iocbs and markers as in the raw log`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      const out = join(dir, "t.trace");
      await importStrace(join(DIR, name), out, { only: "/var/tmp/dsnvme" });
      const lines = (await Deno.readTextFile(out)).trimEnd().split("\n");
      for (const [i, line] of lines.entries()) {
        assert.ok(validate(JSON.parse(line)), `line ${i + 1}: ${ajv.errorsText(validate.errors)}`);
      }
      const raw = rawCounts(await gunzipText(join(DIR, name)));
      let writeBytes = 0, readBytes = 0, writeIocbs = 0, readIocbs = 0, phases = 0;
      for await (const e of (await TraceReader.open(out)).events()) {
        if (e.kind === "phase") phases++;
        if (e.kind !== "submit") continue;
        for (const i of e.iocbs) {
          if (i.op === "write") (writeBytes += i.length, writeIocbs++);
          if (i.op === "read") (readBytes += i.length, readIocbs++);
        }
      }
      assert.deepEqual(
        { writeBytes, writeIocbs, readBytes, readIocbs, markers: phases },
        raw,
      );
      assert.ok(raw.writeIocbs > 100 && raw.readIocbs > 100);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("the serial swapper: one context, one thread submitting up to 8 iocbs, 1 MiB requests, at most 8 in flight", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = join(dir, "t.trace.gz");
    await importStrace(join(DIR, RECORDINGS[0]!), out, { only: "/var/tmp/dsnvme" });
    const stats = await traceStats(await TraceReader.open(out));
    const step = stats.phases.filter((p) => p.name.endsWith("optimizer-step"));
    assert.deepEqual(step.map((p) => p.name), [1, 2, 3, 4].map((n) => `STEP ${n} optimizer-step`));
    for (const p of step) {
      assert.equal(p.contexts.length, 1, p.name);
      assert.equal(p.contexts[0]!.submitters.length, 1);
      assert.equal(p.contexts[0]!.max_in_flight, 8);
      assert.ok(Object.keys(p.iocbs_per_submit).every((k) => Number(k) >= 1 && Number(k) <= 8));
      const sizes = Object.entries(p.write.sizes).sort((a, b) => b[1] - a[1]);
      assert.equal(sizes[0]![0], String(1 << 20));
      // gradients leave in ascending order at the start of step()
      assert.equal(p.order[p.contexts[0]!.submitters[0]!]![0]!.direction, "ascending");
    }
    // the first step reads no m and v (they do not exist yet); later steps read both
    const mv = (p: (typeof step)[0]) =>
      Object.entries(p.groups).filter(([g]) => g.includes("exp_avg")).map(([, s]) => s.read.bytes);
    assert.deepEqual(mv(step[0]!), [0, 0]);
    assert.ok(mv(step[1]!).every((b) => b > 0));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
