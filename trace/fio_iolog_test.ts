import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { fio } from "../tests/_fio.ts";
import { needing } from "../tests/_requirements.ts";
import type { TraceEvent } from "./events.ts";
import { exportIolog } from "./export.ts";
import { convertTrace, importStrace } from "./import.ts";
import { TraceReader } from "./reader.ts";
import { TraceWriter } from "./writer.ts";

/** The I/O lines of an iolog (any version): `[action, offset, length]` per read or write. */
async function iologIo(path: string): Promise<string[]> {
  const lines = (await Deno.readTextFile(path)).trimEnd().split("\n").slice(1);
  return lines.map((l) => l.trim().split(/\s+/)).filter((f) =>
    f.includes("read") || f.includes("write")
  )
    .map((f) => f.slice(-3).join(" "));
}

async function events(path: string): Promise<TraceEvent[]> {
  const out: TraceEvent[] = [];
  for await (const e of (await TraceReader.open(path)).events()) out.push(e);
  return out;
}

Deno.test(needing(["fio"], {
  name:
    "fio's write_iolog read as a trace: every request, its offset and size, in order, and µs times",
  async fn() {
    const dir = await tempDirOnDisk();
    try {
      const data = join(dir, "f"), log = join(dir, "w.iolog");
      await fio([
        "--name=j",
        `--filename=${data}`,
        "--size=1m",
        "--bs=4k",
        "--rw=randrw",
        "--ioengine=psync",
        `--write_iolog=${log}`,
        "--output-format=terse",
      ]);
      assert.match(await Deno.readTextFile(log), /^fio version 3 iolog\n/);
      const trace = join(dir, "t.trace");
      await convertTrace(log, trace);
      const ev = await events(trace);
      const io = ev.filter((e) => e.kind === "read" || e.kind === "write");
      assert.deepEqual(
        io.map((e) =>
          e.kind === "read" || e.kind === "write" ? `${e.kind} ${e.offset} ${e.length}` : ""
        ),
        await iologIo(log),
      );
      assert.equal(io.length, 256);
      assert.ok(io.every((e, i) => i === 0 || e.t >= io[i - 1]!.t), "times never step back");
      assert.ok(ev.some((e) => e.kind === "open") && ev.some((e) => e.kind === "close"));
      // the reader takes the iolog itself too
      assert.equal((await events(log)).length, ev.length);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
}));

for (const version of [3, 2] as const) {
  Deno.test(needing(["fio", "strace"], {
    name:
      `a trace exported as an iolog of version ${version} is replayed by fio's read_iolog request for request`,
    async fn() {
      const dir = await tempDirOnDisk();
      try {
        const data = join(dir, "f"), first = join(dir, "first.iolog");
        await fio([
          "--name=j",
          `--filename=${data}`,
          "--size=2m",
          "--bs=8k",
          "--rw=randwrite",
          "--ioengine=psync",
          `--write_iolog=${first}`,
          "--output-format=terse",
        ]);
        const trace = join(dir, "t.trace.gz"), ours = join(dir, "ours.iolog");
        await convertTrace(first, trace);
        await exportIolog(trace, ours, version);
        assert.match(await Deno.readTextFile(ours), new RegExp(`^fio version ${version} iolog\n`));
        // fio replays our log (it keeps no iolog while it reads one): strace sees what it does
        const seen = join(dir, "replay.strace");
        const out = await new Deno.Command("strace", {
          args: [
            "-f",
            "-tt",
            "-T",
            "-e",
            "trace=openat,pwrite64,close",
            "-o",
            seen,
            "fio",
            "--name=replay",
            `--read_iolog=${ours}`,
            "--ioengine=psync",
            "--output-format=terse",
          ],
          stdout: "null",
          stderr: "piped",
        }).output();
        const stderr = new TextDecoder().decode(out.stderr);
        assert.equal(out.code, 0, stderr);
        assert.doesNotMatch(stderr, /bad iolog|ignoring/); // fio read every line
        const replayed = join(dir, "replay.trace");
        await importStrace(seen, replayed, { only: data });
        const did = (await events(replayed)).flatMap((e) =>
          e.kind === "write" ? [`write ${e.offset} ${e.length}`] : []
        );
        const want = await iologIo(first);
        assert.equal(want.length, 256);
        assert.deepEqual(did, want);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  }));
}

Deno.test("an iolog line fio would not read is refused naming its line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const log = join(dir, "x.iolog");
    await Deno.writeTextFile(log, "fio version 2 iolog\n/f add\n/f open\n/f read 0\n");
    await assert.rejects(
      events(log),
      /x\.iolog: line 4: "\/f read 0": read takes an offset and a length/,
    );
    await Deno.writeTextFile(log, "fio version 3 iolog\n0 /g read 0 4096\n");
    await assert.rejects(events(log), /line 2: \/g is used before its add line/);
    await Deno.writeTextFile(log, "fio version 1 iolog\n");
    await assert.rejects(
      events(log),
      /line 1: is a fio iolog of version 1; versions 2 and 3 are read/,
    );
    await Deno.writeTextFile(
      log,
      "fio version 2 iolog\n/f add\n/f open\n/f wait 5 0\n/f write 0 4096\n/f trim 0 4096\n/f close\n",
    );
    const r = await TraceReader.open(log);
    const ev: TraceEvent[] = [];
    for await (const e of r.events()) ev.push(e);
    assert.deepEqual(ev.map((e) => [e.kind, e.t]), [["open", 0], ["write", 5000], ["close", 5000]]);
    assert.deepEqual(r.notes, ["1 trims of the iolog left out"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an iolog of version 2 carries the time on wait lines, in whole ms, read back as such", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const trace = join(dir, "t.trace"), log = join(dir, "t.iolog");
    const w = await TraceWriter.create(trace, { source: { kind: "generator" }, origin: "" });
    const io = (t: number, offset: number): TraceEvent => ({
      kind: "write",
      t,
      thread: "1",
      dur: 1,
      file: "/d/f",
      offset,
      length: 4096,
      res: 4096,
    });
    for (const e of [io(500, 0), io(900, 4096), io(2_700, 8192), io(2_800, 12288)]) {
      await w.write(e);
    }
    await w.close();
    await exportIolog(trace, log, 2);
    assert.equal(
      await Deno.readTextFile(log),
      [
        "fio version 2 iolog",
        "/d/f add",
        "/d/f open",
        "/d/f write 0 4096",
        "/d/f write 4096 4096",
        "/d/f wait 2 0",
        "/d/f write 8192 4096",
        "/d/f write 12288 4096",
        "/d/f close",
        "",
      ].join("\n"),
    );
    assert.deepEqual(
      (await events(log)).map((e) => [e.kind, e.t]),
      [["open", 0], ["write", 0], ["write", 0], ["write", 2000], ["write", 2000], ["close", 2000]],
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
