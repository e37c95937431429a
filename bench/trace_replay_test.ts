/**
 * fio's recordings (trace/testdata/fio/) replayed on tmpfs and on the disk,
 * the replay itself recorded under strace: the replay issues the same
 * requests — count, file, offset, size, in order per thread, and io_submit
 * batches of the recorded size — as fio did. Then the refusals, think
 * times and --verify.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, tempDirOnDisk } from "../tests/_helpers.ts";
import { fio } from "../tests/_fio.ts";
import { needing } from "../tests/_requirements.ts";
import { recordTrace } from "./trace_record.ts";
import { TraceReader } from "../trace/reader.ts";
import { parseTierSpec } from "../core/config.ts";
import { replayTrace } from "./trace_replay.ts";
import type { TraceEvent } from "../trace/events.ts";
import { TraceWriter } from "../trace/writer.ts";
import { importStrace } from "../trace/import.ts";

/** Per file name (the path's last part): each request in order, and the io_submit batch sizes. */
async function requests(
  trace: string,
  after?: string,
): Promise<{ ops: Record<string, string[]>; batches: number[] }> {
  const ops: Record<string, string[]> = {};
  let on = after === undefined;
  const batches: number[] = [];
  const add = (file: string, op: string, offset: number, length: number) =>
    (ops[file.slice(file.lastIndexOf("/") + 1)] ??= []).push(`${op} ${offset} ${length}`);
  for await (const e of (await TraceReader.open(trace)).events()) {
    if (e.kind === "phase" && e.name === after) on = true;
    if (!on) continue;
    if (e.kind === "read" || e.kind === "write") add(e.file, e.kind, e.offset, e.length);
    if (e.kind === "submit" && e.res > 0) {
      batches.push(e.res);
      for (const i of e.iocbs.slice(0, e.res)) add(i.file, i.op, i.offset, i.length);
    }
  }
  return { ops, batches };
}

/** fio's recordings (trace/testdata/fio/: strace logs of fio, with fio's own iologs). */
const FIO = join(ROOT, "trace", "testdata", "fio");
const FIO_DATA = "/var/tmp/tierbench-fio/data";
const RECORDINGS = [
  "fio-libaio-1m-d8-direct",
  "fio-psync-4k-randrw",
  "fio-libaio-1m-d8-batch8-write",
];

const PLACES = [
  {
    name: "tmpfs",
    dir: async () => await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tb-trace-" }),
    kind: "memory",
  },
  { name: "the disk", dir: tempDirOnDisk, kind: "file" },
];

for (const name of RECORDINGS) {
  for (const place of PLACES) {
    Deno.test(needing(["strace"], {
      name:
        `${name} replayed on ${place.name}, the replay under strace: fio's requests, in order, in batches of the recorded size`,
      async fn() {
        const dir = await place.dir();
        try {
          const target = join(dir, "replay"), out = join(dir, "out");
          for (const d of [target, out]) await Deno.mkdir(d);
          const recorded = join(out, "fio.trace.gz");
          await importStrace(join(FIO, `${name}.strace.gz`), recorded, { only: FIO_DATA });
          // the replay, in its own process, recorded in turn
          const replayed = join(out, "replay.trace.gz");
          const again = await recordTrace(
            [
              Deno.execPath(),
              "run",
              "--allow-all",
              join(ROOT, "main.ts"),
              "trace",
              "replay",
              recorded,
              "--map",
              `${FIO_DATA}=${place.kind}:${target}`,
              "--quiet",
              "--output",
              join(out, "result.json"),
            ],
            replayed,
            target,
          );
          assert.equal(again.code, 0);
          // what the replay did once its threads started (it marks the moment)
          const want = await requests(recorded), got = await requests(replayed, "replay");
          assert.ok(Object.values(want.ops)[0]!.length >= 32, "fio made requests");
          // beside the trace's files, the tier reads its own scratch marker when it cleans up
          delete got.ops[".tierbench-scratch"];
          assert.deepEqual(got.ops, want.ops);
          assert.deepEqual(got.batches, want.batches);
          const doc = JSON.parse(await Deno.readTextFile(join(out, "result.json")));
          assert.equal(doc.status, "ok");
          const tier = doc.trace_replay.tiers[0];
          const ios = Object.values(want.ops).flat();
          assert.equal(tier.read.total_ios + tier.write.total_ios, ios.length);
          assert.equal(
            tier.read.io_bytes + tier.write.io_bytes,
            ios.reduce((t, r) => t + Number(r.split(" ")[2]), 0),
          );
        } finally {
          await Deno.remove(dir, { recursive: true });
        }
      },
    }));
  }
}

Deno.test(needing(["fio", "strace"], {
  name: "trace record of a fio run holds the requests fio's own write_iolog lists, in its order",
  async fn() {
    const dir = await tempDirOnDisk();
    try {
      const data = join(dir, "data");
      await Deno.mkdir(data);
      const job = [
        "--name=j",
        `--filename=${join(data, "f")}`,
        "--rw=randrw",
        "--bs=8k",
        "--iodepth=4",
        "--ioengine=libaio",
        "--direct=1",
        "--size=2m",
        `--write_iolog=${join(dir, "fio.iolog")}`,
        "--output-format=terse",
      ];
      await fio(["--name=l", `--filename=${join(data, "f")}`, "--size=2m", "--rw=write"]);
      const trace = join(dir, "fio.trace.gz");
      const rec = await recordTrace(["fio", ...job], trace, data);
      assert.equal(rec.code, 0);
      const log = (await Deno.readTextFile(join(dir, "fio.iolog"))).trimEnd().split("\n");
      const want = log.map((l) => l.split(" ")).filter((f) => f[2] === "read" || f[2] === "write")
        .map((f) => f.slice(2).join(" "));
      assert.equal(want.length, 256);
      assert.deepEqual(Object.values((await requests(trace)).ops)[0], want);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
}));

const HEADER = JSON.stringify({
  schema: "tierbench/trace@1",
  source: { kind: "generator" },
  origin: "",
  time_unit: "us",
});
const BODY = [
  '["thread",0,"1","1"]',
  '["file",0,"/data/a"]',
  '["write",0,0,1,0,0,4096,4096]',
];

/** Bad traces, and the one line each is refused with (FILE: the trace's path). */
const BAD: [string, string[], string][] = [
  [
    "a path outside every --map",
    [HEADER, ...BODY, '["file",1,"/etc/passwd"]', '["read",5,0,1,1,0,100,100]', '["end",5,6,[]]'],
    "FILE: /etc/passwd is under no --map prefix (/data): map its directory too, or import the trace again with --only",
  ],
  [
    "a trace cut short",
    [HEADER, ...BODY],
    "FILE: is truncated: it ends at line 4 without its end record",
  ],
  [
    "another version",
    [HEADER.replace("trace@1", "trace@9"), ...BODY, '["end",3,1,[]]'],
    "FILE: line 1: is tierbench/trace@9; this tierbench reads tierbench/trace@1",
  ],
];

for (const [what, lines, message] of BAD) {
  Deno.test(`replay refuses ${what} in one line, exit status 2, before any I/O, leaving nothing`, async () => {
    const dir = await tempDirOnDisk();
    try {
      const trace = join(dir, "t.trace");
      await Deno.writeTextFile(trace, lines.join("\n") + "\n");
      const tierDir = join(dir, "tier");
      await Deno.mkdir(tierDir);
      const { doc, error } = await replayTrace({
        trace,
        maps: [{ prefix: "/data", tier: parseTierSpec(`file:${tierDir}`) }],
        speed: "max",
        timeoutMs: 30_000,
      });
      assert.equal(doc.status, "failed");
      assert.equal((error as Error).message, message.replace("FILE", trace));
      assert.deepEqual([...Deno.readDirSync(tierDir)], [], "the scratch directory is gone");
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          join(ROOT, "main.ts"),
          "trace",
          "replay",
          trace,
          "--map",
          `/data=file:${tierDir}`,
          "--output",
          join(dir, "r.json"),
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 2, stderr);
      assert.equal(stderr, `tierbench: ${message.replace("FILE", trace)}\n`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

/** A trace of `events` (generator form) written to `path`. */
async function writeTrace(path: string, events: TraceEvent[]): Promise<void> {
  const w = await TraceWriter.create(path, { source: { kind: "generator" }, origin: "" });
  for (const e of events) await w.write(e);
  await w.close();
}

const io = (
  kind: "read" | "write",
  t: number,
  offset: number,
  length: number,
  file = "/data/a",
  thread = "1",
): TraceEvent => ({
  kind,
  t,
  thread,
  dur: 0,
  file,
  offset,
  length,
  res: length,
});

/** `trace` replayed at --speed max with `prefix` on memory:`dir`: its result (status ok). */
async function replayAtMax(trace: string, prefix: string, dir: string, timeoutMs = 30_000) {
  const { doc } = await replayTrace({
    trace,
    maps: [{ prefix, tier: parseTierSpec(`memory:${dir}`) }],
    speed: "max",
    timeoutMs,
  });
  assert.equal(doc.status, "ok", doc.error);
  return doc.trace_replay!;
}

/** A replay of `events` on tmpfs at --speed max: its result (status ok). */
async function replayOnTmpfs(events: TraceEvent[]) {
  const dir = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tb-trace-" });
  try {
    const trace = join(dir, "t.trace");
    await writeTrace(trace, events);
    return await replayAtMax(trace, "/data", dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a read of bytes another thread wrote waits for that write, as in the recording", async () => {
  // thread 1 writes 256 MiB elsewhere first, then /data/a; thread 2 reads /data/a after that
  const events: TraceEvent[] = [];
  for (let k = 0; k < 256; k++) events.push(io("write", k, k << 20, 1 << 20, "/data/big"));
  events.push(io("write", 300, 0, 65536));
  for (let k = 0; k < 4; k++) events.push(io("read", 400 + k, k * 16384, 16384, "/data/a", "2"));
  const r = await replayOnTmpfs(events);
  assert.equal(r.tiers[0]!.read.total_ios, 4);
  assert.equal(r.tiers[0]!.read.short_reads, 0);
  assert.equal(r.tiers[0]!.read.io_bytes, 65536);
  assert.ok(
    r.notes.includes(
      "4 reads of bytes another thread wrote wait for that write, as in the recording",
    ),
    r.notes.join("\n"),
  );
});

Deno.test("a read the recording made while another thread's aio write of its bytes was in flight is said to have raced", async () => {
  const write = { op: "write" as const, file: "/data/a", offset: 0, length: 65536 };
  const r = await replayOnTmpfs([
    { kind: "io_setup", t: 0, thread: "1", dur: 0, ctx: 0, nr: 4, res: 0 },
    { kind: "submit", t: 10, thread: "1", dur: 5, ctx: 0, asked: 1, res: 1, iocbs: [write] },
    // thread 2 reads at 100 µs; thread 1's io_getevents returns the write only at 510 µs
    io("read", 100, 0, 65536, "/data/a", "2"),
    {
      kind: "reap",
      t: 200,
      thread: "1",
      dur: 310,
      ctx: 0,
      min: 1,
      max: 4,
      res: 1,
      results: [65536],
    },
    // after the reap: ordered, not raced
    io("read", 600, 0, 65536, "/data/a", "2"),
  ]);
  assert.equal(r.tiers[0]!.read.total_ios, 2);
  assert.ok(
    r.notes.includes(
      "1 reads began in the recording before another thread's write of their bytes was seen " +
        "done (the threads raced, or a third thread reaped the write): the replay orders them " +
        "after that write's issue only, and what they read can vary from run to run",
    ),
    r.notes.join("\n"),
  );
  assert.ok(
    r.notes.includes(
      "2 reads of bytes another thread wrote wait for that write, as in the recording",
    ),
    r.notes.join("\n"),
  );
});

Deno.test("--speed 1x keeps the recorded think time between calls; max removes it", async () => {
  const dir = await tempDirOnDisk();
  try {
    const trace = join(dir, "t.trace");
    await writeTrace(trace, [
      io("write", 0, 0, 4096),
      io("write", 400_000, 4096, 4096),
      io("read", 400_100, 0, 8192),
    ]);
    const run = async (speed: "max" | "1x") => {
      const { doc } = await replayTrace({
        trace,
        maps: [{ prefix: "/data", tier: parseTierSpec(`file:${dir}`) }],
        speed,
        timeoutMs: 30_000,
      });
      assert.equal(doc.status, "ok", doc.error);
      return doc.trace_replay!.total;
    };
    const slow = await run("1x"), fast = await run("max");
    assert.equal(slow.recorded_s, 0.4001);
    // 1x waits the recorded 0.4 s, max does not: three small I/Os take far less even under
    // load; the slack above is for a loaded machine, not for a second wait
    assert.ok(slow.replayed_s >= 0.4 && slow.replayed_s < 1.5, String(slow.replayed_s));
    assert.ok(fast.replayed_s < 0.4, String(fast.replayed_s));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("--verify checks what is read against what was written, and names a corrupted byte", async () => {
  const dir = await tempDirOnDisk();
  try {
    const trace = join(dir, "t.trace");
    const events: TraceEvent[] = [
      io("read", 0, 0, 8192, "/data/old"), // laid out first, then checked
      io("write", 10, 0, 65536),
      { kind: "io_setup", t: 20, thread: "1", dur: 0, ctx: 0, nr: 4, res: 0 },
      {
        kind: "submit",
        t: 30,
        thread: "1",
        dur: 0,
        ctx: 0,
        asked: 2,
        res: 2,
        iocbs: [
          { op: "write", file: "/data/b", offset: 0, length: 4096 },
          { op: "read", file: "/data/a", offset: 4096, length: 4096 },
        ],
      },
      {
        kind: "reap",
        t: 40,
        thread: "1",
        dur: 0,
        ctx: 0,
        min: 2,
        max: 4,
        res: 2,
        results: [4096, 4096],
      },
      io("read", 600_000, 100, 7000), // after a pause the test uses
    ];
    await writeTrace(trace, events);
    const tierDir = join(dir, "tier");
    await Deno.mkdir(tierDir);
    const ok = await replayTrace({
      trace,
      maps: [{ prefix: "/data", tier: parseTierSpec(`file:${tierDir}`) }],
      speed: "max",
      verify: true,
      timeoutMs: 30_000,
    });
    assert.equal(ok.doc.status, "ok", ok.doc.error);
    assert.deepEqual(ok.doc.trace_replay!.verify, {
      checked_bytes: 8192 + 4096 + 7000,
      unchecked_bytes: 0,
    });
    // the same at 1x, with a byte of /data/a spoilt during the pause before the last read: once
    // the replay's one write of /data/a is in (however long the replay takes to start)
    const spoil = (async () => {
      for (const until = Date.now() + 20_000; Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 10));
        for await (const e of Deno.readDir(tierDir)) {
          const a = join(tierDir, e.name, "a");
          if (((await Deno.stat(a).catch(() => undefined))?.size ?? 0) < 65536) continue;
          const f = await Deno.open(a, { write: true });
          await f.seek(5000, Deno.SeekMode.Start);
          await f.write(new Uint8Array([0xff, 0xfe]));
          f.close();
          return;
        }
      }
      throw new Error("the replay never wrote /data/a");
    })();
    const bad = await replayTrace({
      trace,
      maps: [{ prefix: "/data", tier: parseTierSpec(`file:${tierDir}`) }],
      speed: "1x",
      verify: true,
      timeoutMs: 30_000,
    });
    await spoil;
    assert.equal(bad.doc.status, "failed");
    assert.match(
      (bad.error as Error).message,
      /^verify .*\/a at offset 500[01]: EIO \(the data read back is not what the replay wrote there\)/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a DeepSpeed recording replays: aio contexts set up on the main thread, submitted on by four others, reads after the writes they read; its failed completions said", async () => {
  const dir = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tb-trace-" });
  try {
    // DeepSpeed 0.14.5, pipelined swapper, thread_count 2: the main thread sets up every context
    const trace = join(ROOT, "trace", "testdata", "deepspeed", "more", "h1000_pipe_t2.trace.gz");
    const want = { read: 0, write: 0, setups: 0, failed: 0 };
    const setUpBy = new Set<string>(), submitters = new Set<string>();
    for await (const e of (await TraceReader.open(trace)).events()) {
      if (e.kind === "io_setup") {
        want.setups++;
        setUpBy.add(e.thread);
      }
      if (e.kind === "submit") {
        submitters.add(e.thread);
        for (const i of e.iocbs.slice(0, e.res)) {
          if (i.op === "read" || i.op === "write") want[i.op]++;
        }
      }
      if ((e.kind === "read" || e.kind === "write") && e.res >= 0) want[e.kind]++;
      if (e.kind === "reap") want.failed += e.results.filter((r) => r < 0).length;
    }
    assert.equal(setUpBy.size, 1);
    assert.ok(submitters.size >= 4 && !submitters.has([...setUpBy][0]!), [...submitters].join());
    const r = await replayAtMax(trace, "/var/tmp/dsnvme", dir, 60_000);
    assert.equal(r.tiers[0]!.read.total_ios, want.read);
    assert.equal(r.tiers[0]!.write.total_ios, want.write);
    assert.equal(r.ops["io_setup"], want.setups);
    assert.equal(r.threads.length, submitters.size + 1);
    // its readers read what the other threads wrote before: whole, every run
    assert.equal(r.tiers[0]!.read.short_reads, 0);
    // DeepSpeed's reads into tensor views off O_DIRECT's grid failed; the replay says so
    assert.ok(want.failed > 0);
    assert.ok(
      r.notes.includes(
        `${want.failed} aio completions failed in the recording; their requests are replayed ` +
          "(strace ties no completion to its iocb) and may succeed here",
      ),
      r.notes.join("\n"),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
