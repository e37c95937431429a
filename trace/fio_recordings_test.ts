/**
 * fio recorded under strace (testdata/fio/), each beside the iolog fio wrote
 * of the same run: the imported trace holds the requests fio says it issued,
 * in its order, and io_submit batches as strace saw them.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../tests/_helpers.ts";
import { importStrace } from "./import.ts";
import { TraceReader } from "./reader.ts";
import { traceStats } from "./stats.ts";

/** Where the fio recordings are, and the prefix of their data files. */
const FIO_RECORDINGS = join(ROOT, "trace", "testdata", "fio");
const FIO_DATA = "/var/tmp/tierbench-fio/data";

/** `op offset length` of every read and write an iolog lists, in its order. */
async function iologRequests(path: string): Promise<string[]> {
  const lines = (await Deno.readTextFile(path)).trimEnd().split("\n").slice(1);
  return lines.map((l) => l.split(" ")).filter((f) => f[2] === "read" || f[2] === "write")
    .map((f) => f.slice(2).join(" "));
}

/** `op offset length` of every read, write and submitted iocb of a trace, and the batch sizes. */
async function traceRequests(path: string): Promise<{ requests: string[]; batches: number[] }> {
  const requests: string[] = [], batches: number[] = [];
  for await (const e of (await TraceReader.open(path)).events()) {
    if (e.kind === "read" || e.kind === "write") {
      requests.push(`${e.kind} ${e.offset} ${e.length}`);
    }
    if (e.kind === "submit" && e.res > 0) {
      batches.push(e.res);
      for (const i of e.iocbs.slice(0, e.res)) requests.push(`${i.op} ${i.offset} ${i.length}`);
    }
  }
  return { requests, batches };
}

const CASES = [
  { name: "fio-libaio-1m-d8-direct", requests: 32, batches: Array(32).fill(1), inFlight: 8 },
  { name: "fio-psync-4k-randrw", requests: 1024, batches: [], inFlight: 0 },
  { name: "fio-libaio-1m-d8-batch8-write", requests: 32, batches: [8, 8, 8, 8], inFlight: 8 },
];

for (const c of CASES) {
  Deno.test(`${c.name}: imported, the requests fio's own iolog lists, in its order`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      const trace = join(dir, "t.trace.gz");
      await importStrace(join(FIO_RECORDINGS, `${c.name}.strace.gz`), trace, { only: FIO_DATA });
      const want = await iologRequests(join(FIO_RECORDINGS, `${c.name}.iolog`));
      const got = await traceRequests(trace);
      assert.equal(want.length, c.requests);
      assert.deepEqual(got.requests, want);
      assert.deepEqual(got.batches, c.batches);
      const stats = await traceStats(await TraceReader.open(trace));
      const inFlight = Math.max(
        0,
        ...stats.phases.flatMap((p) => Object.keys(p.in_flight)).map(Number),
      );
      assert.equal(inFlight, c.inFlight);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
