import assert from "node:assert/strict";
import type { TraceEvent } from "./events.ts";
import { PhaseCutter } from "./phases.ts";
import { alignmentOf, fileGroup, MAX_RUNS, StatsCollector } from "./stats.ts";

const w = (t: number, file: string, offset: number, length: number, thread = "1"): TraceEvent => ({
  kind: "write",
  t,
  thread,
  dur: 10,
  file,
  offset,
  length,
  res: length,
});

Deno.test("without markers, phases are cut at pauses; after the first marker, only at markers", () => {
  const cut = new PhaseCutter(1000);
  const names = [
    w(0, "/a", 0, 1),
    w(500, "/a", 0, 1),
    w(2000, "/a", 0, 1), // 1490 µs after the last end
    { kind: "phase", t: 3000, name: "update", marker: "TBMARK update" },
    w(3100, "/a", 0, 1),
    w(9000, "/a", 0, 1), // a pause, but markers rule now
    w(2999, "/a", 0, 1, "2"), // ended late: it started in the phase before
  ].map((e) => cut.place(e as TraceEvent).name);
  assert.deepEqual(names, ["part 1", "part 1", "part 2", "update", "update", "update", "part 2"]);
});

Deno.test("stats: bytes per group, order runs ascending or not, ends' alignment, read past write", () => {
  const s = new StatsCollector();
  s.add({ kind: "phase", t: 0, name: "init", marker: "" });
  for (const [i, f] of ["/d/0_9.swp", "/d/10_19.swp", "/d/20_29.swp"].entries()) {
    s.add(w(i, f, 0, 1024 * 5));
  }
  s.add(w(10, "/d/m-5.swp", 0, 4096));
  s.add(w(11, "/d/m-2.swp", 0, 4096));
  s.add(w(12, "/d/m-9.swp", 0, 4096));
  s.add({ kind: "phase", t: 100, name: "step", marker: "" });
  s.add({
    kind: "read",
    t: 101,
    thread: "1",
    dur: 1,
    file: "/d/0_9.swp",
    offset: 0,
    length: 8192,
    res: 5120,
  });
  s.add({
    kind: "read",
    t: 102,
    thread: "1",
    dur: 1,
    file: "/d/x.swp",
    offset: 0,
    length: 8,
    res: -5,
  });
  const st = s.finish();
  const [init, step] = st.phases;
  assert.deepEqual(init!.order["1"]!.map((r) => [r.group, r.files, r.direction]), [
    ["/d/#_#.swp", 3, "ascending"],
    ["/d/m-#.swp", 3, "mixed"],
  ]);
  assert.deepEqual(init!.groups["/d/#_#.swp"]!.write_end_alignment, { "1024": 3 });
  assert.deepEqual(init!.write.sizes, { "5120": 3, "4096": 3 });
  assert.deepEqual(step!.groups["/d/#_#.swp"]!.read_past_write, { "3072": 1 });
  assert.deepEqual(step!.failures, [{ call: "read", errno: "EIO", where: "/d/x.swp", count: 1 }]);
  assert.equal(st.write.bytes, 3 * 5120 + 3 * 4096);
  assert.equal(st.read.bytes, 5120);
});

Deno.test("stats: in flight follows submits and reaps per context; contexts name their threads", () => {
  const s = new StatsCollector();
  const sub = (t: number, ctx: number, n: number, thread: string): TraceEvent => ({
    kind: "submit",
    t,
    thread,
    dur: 1,
    ctx,
    asked: n,
    res: n,
    iocbs: Array.from(
      { length: n },
      (_, i) => ({ op: "read" as const, file: "/f", offset: i * 4096, length: 4096 }),
    ),
  });
  const reap = (t: number, ctx: number, n: number, thread: string): TraceEvent => ({
    kind: "reap",
    t,
    thread,
    dur: 1,
    ctx,
    min: 1,
    max: 8,
    res: n,
    results: Array(n).fill(4096),
  });
  for (const e of [sub(0, 0, 8, "a"), reap(1, 0, 3, "b"), sub(2, 0, 2, "a"), sub(3, 1, 1, "c")]) {
    s.add(e);
  }
  const p = s.finish().phases[0]!;
  assert.deepEqual(p.in_flight, { "8": 1, "7": 1, "1": 1 });
  assert.deepEqual(p.iocbs_per_submit, { "8": 1, "2": 1, "1": 1 });
  assert.deepEqual(p.contexts.map((c) => [c.ctx, c.submitters, c.reapers, c.max_in_flight]), [
    [0, ["a"], ["b"], 8],
    [1, ["c"], [], 1],
  ]);
});

Deno.test("stats stay bounded: a thread's order keeps at most MAX_RUNS runs and says it was cut", () => {
  const s = new StatsCollector();
  for (let i = 0; i < MAX_RUNS * 3; i++) s.add(w(i, i % 2 ? "/a/x" : "/b/y", 0, 1));
  const p = s.finish().phases[0]!;
  assert.equal(p.order["1"]!.length, MAX_RUNS);
  assert.equal(p.order_cut, true);
});

Deno.test("file groups and alignments", () => {
  assert.equal(
    fileGroup("/v/rank12/exp_avg_sq-3_4.tensor.swp"),
    "/v/rank#/exp_avg_sq-#_#.tensor.swp",
  );
  assert.equal(alignmentOf(243490816), 8192);
  assert.equal(alignmentOf(1 << 30), 1 << 20);
  assert.equal(alignmentOf(1025), 1);
});
