import assert from "node:assert/strict";
import { join } from "node:path";
import type { TraceEvent } from "./events.ts";
import { TraceError } from "./errors.ts";
import { TraceReader } from "./reader.ts";
import { TraceWriter } from "./writer.ts";

const EVENTS: TraceEvent[] = [
  { kind: "phase", t: 0, name: "update", marker: "TBMARK update" },
  { kind: "open", t: 1, thread: "7", dur: 2, file: "/n/a b", flags: "O_RDWR|O_DIRECT", res: 3 },
  { kind: "io_setup", t: 2, thread: "7", dur: 1, ctx: 0, nr: 8, res: 0 },
  {
    kind: "submit",
    t: 3,
    thread: "8",
    dur: 5,
    ctx: 0,
    asked: 2,
    res: 2,
    iocbs: [
      { op: "write", file: "/n/a b", offset: 0, length: 1 << 20 },
      { op: "fsync", file: "/n/a b", offset: 0, length: 0 },
    ],
  },
  {
    kind: "reap",
    t: 9,
    thread: "8",
    dur: 1,
    ctx: 0,
    min: 1,
    max: 8,
    res: 2,
    results: [1 << 20, -5],
  },
  { kind: "read", t: 10, thread: "7", dur: 3, file: "/n/c", offset: 4096, length: 4096, res: 4096 },
  { kind: "rename", t: 11, thread: "7", dur: 1, file: "/n/c", to: "/n/d", res: 0 },
  {
    kind: "fallocate",
    t: 12,
    thread: "7",
    dur: 1,
    file: "/n/d",
    mode: 1,
    offset: 0,
    length: 9,
    res: 0,
  },
  { kind: "close", t: 13, thread: "7", dur: 1, file: "/n/a b", res: 0 },
];

async function write(path: string, events: TraceEvent[] = EVENTS): Promise<void> {
  const w = await TraceWriter.create(path, { source: { kind: "generator" }, origin: "x" });
  w.thread("8", "7");
  for (const e of events) await w.write(e);
  await w.close(["a note at the end"]);
}

async function readAll(path: string): Promise<{ events: TraceEvent[]; r: TraceReader }> {
  const r = await TraceReader.open(path);
  const events: TraceEvent[] = [];
  for await (const e of r.events()) events.push(e);
  return { events, r };
}

Deno.test("a trace written and read back gives the same events, plain and gzipped", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const name of ["t.trace", "t.trace.gz"]) {
      await write(join(dir, name));
      const { events, r } = await readAll(join(dir, name));
      assert.deepEqual(events, EVENTS);
      assert.equal(r.threads.get("8")?.process, "7");
      assert.deepEqual(r.notes, ["a note at the end"]);
    }
    const gz = await Deno.readFile(join(dir, "t.trace.gz"));
    assert.equal(gz[0], 0x1f, "a .gz name is gzipped");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the writer refuses an existing file and leaves nothing behind on abort", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "t.trace");
    await Deno.writeTextFile(path, "mine");
    await assert.rejects(
      TraceWriter.create(path, { source: { kind: "generator" }, origin: "" }),
      /t\.trace: exists already; give another --output/,
    );
    assert.equal(await Deno.readTextFile(path), "mine");
    const w = await TraceWriter.create(join(dir, "u.trace"), {
      source: { kind: "generator" },
      origin: "",
    });
    await w.write(EVENTS[0]!);
    await w.abort();
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["t.trace"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Reads `text` (written to a file) as a trace and returns the one-line error. */
async function refusal(text: string | Uint8Array, name = "bad.trace"): Promise<string> {
  const dir = await Deno.makeTempDir();
  const path = join(dir, name);
  try {
    if (typeof text === "string") await Deno.writeTextFile(path, text);
    else await Deno.writeFile(path, text);
    try {
      await readAll(path);
    } catch (e) {
      assert.ok(e instanceof TraceError, String(e));
      assert.ok(!e.message.includes("\n"), "one line");
      return e.message.replace(path, "FILE");
    }
    throw new Error("read without error");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("bad traces are refused in one line naming the file, the line and what is wrong", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await write(join(dir, "t.trace"));
    const lines = (await Deno.readTextFile(join(dir, "t.trace"))).trimEnd().split("\n");
    assert.equal(
      await refusal(lines.slice(0, -1).join("\n")),
      `FILE: is truncated: it ends at line ${lines.length - 1} without its end record`,
    );
    assert.equal(
      await refusal(lines.slice(0, -3).join("\n") + "\n" + lines.at(-1)),
      `FILE: line ${lines.length - 2}: the end record counts ${lines.length - 2} records, ` +
        `the trace has ${lines.length - 4}`,
    );
    assert.equal(
      await refusal([lines[0]!.replace("trace@1", "trace@2"), ...lines.slice(1)].join("\n")),
      "FILE: line 1: is tierbench/trace@2; this tierbench reads tierbench/trace@1",
    );
    assert.equal(
      await refusal('{"schema":"tierbench/result@1"}\n'),
      'FILE: line 1: is not a tierbench trace (schema "tierbench/result@1", not "tierbench/trace@1")',
    );
    assert.equal(
      await refusal([lines[0], '["read",1,0,1,0,0,4096,4096]'].join("\n")),
      "FILE: line 2: thread 0 is not declared before its use",
    );
    assert.equal(
      await refusal([lines[0], '["bogus",1]'].join("\n")),
      'FILE: line 2: unknown record kind "bogus"',
    );
    assert.equal(
      await refusal(
        [lines[0], '["thread",0,"1","1"]', '["file",0,"/f"]', '["read",1.5,0,1,0,0,4096,4096]']
          .join("\n"),
      ),
      "FILE: line 4: read record: element 1 (1.5) is not an integer",
    );
    assert.equal(
      await refusal([lines[0], '["file",0,'].join("\n")),
      "FILE: line 2: is not JSON (a damaged or cut-short trace)",
    );
    assert.equal(await refusal(""), "FILE: is empty: not a trace");
    assert.equal(
      await refusal("28784 18:46:48.268273 close(3) = 0 <0.000007>\n"),
      "FILE: line 1: is an strace log, not a trace: import it with `tierbench trace import strace`",
    );
    // a gzipped trace cut in the middle of its stream
    await write(join(dir, "t.trace.gz"));
    const gz = await Deno.readFile(join(dir, "t.trace.gz"));
    assert.match(
      await refusal(gz.subarray(0, gz.length - 12), "cut.trace.gz"),
      /^FILE: is truncated or damaged: /,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
