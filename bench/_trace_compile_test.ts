import assert from "node:assert/strict";
import { join } from "node:path";
import { TraceCompiler } from "./_trace_compile.ts";
import { TraceReader } from "../trace/reader.ts";
import { TraceWriter } from "../trace/writer.ts";
import type { TraceEvent } from "../trace/events.ts";

const io = (kind: "read" | "write", t: number, offset: number, length: number): TraceEvent => ({
  kind,
  t,
  thread: "1",
  dur: 0,
  file: "/d/f",
  offset,
  length,
  res: length,
});

/** The layout the first pass finds for `events`: [file, bytes] pairs. */
async function layoutOf(events: TraceEvent[]): Promise<[number, number][]> {
  const dir = await Deno.makeTempDir();
  try {
    const trace = join(dir, "t.trace");
    const w = await TraceWriter.create(trace, { source: { kind: "generator" }, origin: "" });
    for (const e of events) await w.write(e);
    await w.close();
    const out = join(dir, "ops");
    await Deno.mkdir(out);
    const c = await new TraceCompiler(trace, [{
      prefix: "/d",
      root: "/r/tierbench-scratch-t",
      direct: false,
    }], out)
      .compile(await TraceReader.open(trace));
    return [...c.layout];
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("layout: a read of pages the trace wrote first needs none; of others, the file laid out to its end", async () => {
  assert.deepEqual(
    await layoutOf([io("write", 0, 1 << 20, 8192), io("read", 1, 1 << 20, 8192)]),
    [],
  );
  assert.deepEqual(
    await layoutOf([io("write", 0, 1 << 20, 8192), io("read", 1, 3 << 20, 4096)]),
    [[0, (3 << 20) + 4096]],
  );
  // a page written in part is not written: its read is laid out first, then written over
  assert.deepEqual(
    await layoutOf([io("write", 0, 8 << 20, 1000), io("read", 1, 8 << 20, 1000)]),
    [[0, (8 << 20) + 1000]],
  );
});

Deno.test("a map whose root is not a scratch directory is refused before any file is named", () => {
  for (const root of ["", "relative/tierbench-scratch-t", "/data"]) {
    assert.throws(
      () => new TraceCompiler("t.trace", [{ prefix: "/d", root, direct: false }], "/tmp"),
      /the replay's files must go in a scratch directory/,
      JSON.stringify(root),
    );
  }
});
