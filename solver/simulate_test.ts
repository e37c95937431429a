import assert from "node:assert/strict";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "../workloads/ops.ts";
import { simulate } from "./simulate.ts";

const at = { iteration: 0, phase: "update" };
const read = (b: ProgramBuilder, object: string, bytes: number, after: number[] = []) =>
  b.add({
    ...at,
    kind: "read",
    stream: "local:read",
    path: "local",
    object,
    bytes,
    label: object,
    after,
  });
const write = (b: ProgramBuilder, object: string, bytes: number, after: number[] = []) =>
  b.add({
    ...at,
    kind: "write",
    stream: "local:write",
    path: "local",
    object,
    bytes,
    label: object,
    after,
  });
const compute = (b: ProgramBuilder, ms: number, after: number[] = []) =>
  b.add({ ...at, kind: "compute", stream: "compute", ms, label: "adam", after });
const program = (ranks: RankProgram[], readers?: number): WorkloadProgram => ({
  workload: "test",
  paths: [{
    name: "local",
    role: "local",
    bs: 1 << 20,
    iodepth: 8,
    ...(readers ? { readers } : {}),
  }],
  ranks,
  warmupIterations: 0,
  iterations: 1,
  derived: {},
  notes: [],
});
const update = (p: WorkloadProgram, rate: Parameters<typeof simulate>[1] = () => 1e9) =>
  simulate(p, rate).phases.find((x) => x.phase === "update")!;

Deno.test("simulate() lets one rank at a time read a path with readers 1, in the order they asked", () => {
  // rank 0 reads A, computes 3 s, reads B; rank 1 reads C, twice as large
  const r0 = new ProgramBuilder(0);
  const c = compute(r0, 3000, [read(r0, "A", 1e9)]);
  read(r0, "B", 1e9, [c]);
  const r1 = new ProgramBuilder(1);
  read(r1, "C", 2e9);
  const ranks = [r0.build(), r1.build()];
  // one reader: A [0, 1], C [1, 3] while rank 0 computes [1, 4], B [4, 5]
  const one = update(program(ranks, 1));
  assert.ok(Math.abs(one.time_s - 5) < 1e-9, `${one.time_s}`);
  // busy from when an op asks for the path: C waits from 0
  assert.ok(Math.abs(one.busy_s.local! - 4) < 1e-9, `${one.busy_s.local}`);
  // no limit: A and C share the path, A done at 2, compute [2, 5], B [5, 6]
  const shared = update(program(ranks));
  assert.ok(Math.abs(shared.time_s - 6) < 1e-9, `${shared.time_s}`);
  // the path idles while rank 0 computes alone
  assert.ok(Math.abs(shared.busy_s.local! - 4) < 1e-9, `${shared.busy_s.local}`);
});

Deno.test("simulate() moves each transfer at the rate rateOf gives for what moves beside it", () => {
  const b = new ProgramBuilder(0);
  read(b, "A", 1e9);
  write(b, "B", 2e9);
  const seen: string[] = [];
  const u = update(program([b.build()]), (path, direction, active) => {
    seen.push(`${path}:${direction} [${[...active].sort()}]`);
    return active.size > 1 ? 0.5e9 : 1e9;
  });
  // both at half rate until the read is done at 2 s, then the write's last 1e9 alone
  assert.ok(Math.abs(u.time_s - 3) < 1e-9, `${u.time_s}`);
  assert.deepEqual([...new Set(seen)], [
    "local:read [local:read,local:write]",
    "local:write [local:read,local:write]",
    "local:write [local:write]",
  ]);
});

Deno.test("simulate() opens a phase when every rank reaches its barrier; background ops do not hold it", () => {
  const r0 = new ProgramBuilder(0);
  r0.add({
    iteration: 0,
    phase: "backward",
    kind: "compute",
    stream: "compute",
    ms: 1000,
    label: "bwd",
  });
  r0.barrier({ iteration: 0, phase: "update" });
  const c = compute(r0, 500);
  r0.add({
    ...at,
    kind: "write",
    stream: "local:write",
    path: "local",
    object: "flush",
    bytes: 5e9,
    label: "flush",
    background: true,
    after: [c],
  });
  const r1 = new ProgramBuilder(1);
  r1.barrier({ iteration: 0, phase: "update" });
  compute(r1, 250);
  const sim = simulate(program([r0.build(), r1.build()]), () => 1e9);
  const u = sim.phases.find((x) => x.phase === "update")!;
  // rank 1 waits at the barrier until rank 0's backward is done at 1 s; the phase is [1, 1.5]
  assert.ok(Math.abs(u.time_s - 0.5) < 1e-9, `${u.time_s}`);
  // the flush runs on past it
  assert.ok(Math.abs(sim.end_s - 6.5) < 1e-9, `${sim.end_s}`);
});

Deno.test("simulate() names the op that never runs when a rank misses a barrier", () => {
  const r0 = new ProgramBuilder(0);
  r0.barrier({ iteration: 0, phase: "update" });
  compute(r0, 1);
  const r1 = new ProgramBuilder(1);
  compute(r1, 1);
  assert.throws(
    () => simulate(program([r0.build(), r1.build()]), () => 1e9),
    (e) =>
      e instanceof RangeError &&
      /adam of rank 0 never ran|update of rank 0 never ran/.test(e.message),
  );
});

Deno.test("simulate() rejects a rate that is not positive", () => {
  const b = new ProgramBuilder(0);
  read(b, "A", 1);
  assert.throws(() => simulate(program([b.build()]), () => 0), RangeError);
});

Deno.test("simulate() asks rateOf at the count of transfers in flight, shared evenly by them", () => {
  // two ranks read 1 GB each at once; the tier moves 1.5 GB/s in all with two readers, 1 GB/s with one
  const ranks = [0, 1].map((r) => {
    const b = new ProgramBuilder(r);
    read(b, `x${r}`, 1e9);
    return b.build();
  });
  const counts: number[] = [];
  const rate: Parameters<typeof simulate>[1] = (_p, _d, _a, inflight) => {
    const n = inflight?.get("local:read") ?? 1;
    counts.push(n);
    return n === 2 ? 1.5e9 : 1e9;
  };
  // together: 2 GB at 1.5 GB/s, each at 0.75 GB/s
  const all = update(program(ranks), rate);
  assert.ok(Math.abs(all.time_s - 2e9 / 1.5e9) < 1e-9, `${all.time_s}`);
  assert.deepEqual(counts, [2]);
  // one reader at a time: 1 GB at 1 GB/s, twice
  const one = update(program(ranks, 1), rate);
  assert.ok(Math.abs(one.time_s - 2) < 1e-9, `${one.time_s}`);
});

Deno.test("simulate() lets one rank at a time hold a node-wide lock, the transfers it waits for inside it", () => {
  // each rank: take the lock, read 1e9 B (1 s alone), release once the read is in, compute 1 s
  const rank = (r: number) => {
    const b = new ProgramBuilder(r);
    const l = b.add({ ...at, kind: "lock", stream: "compute", lock: "read", label: "lock" });
    const x = read(b, `x${r}`, 1e9, [l]);
    b.add({ ...at, kind: "unlock", stream: "compute", lock: "read", label: "unlock", after: [x] });
    compute(b, 1000);
    return b.build();
  };
  // rank 0 reads [0, 1] and computes [1, 2]; rank 1 takes the lock at 1, reads [1, 2], computes [2, 3]
  const u = update(program([rank(0), rank(1)]));
  assert.ok(Math.abs(u.time_s - 3) < 1e-9, `${u.time_s}`);
  // without the lock both reads share the path: done at 2, computes to 3 as well but in parallel
  const free = (r: number) => {
    const b = new ProgramBuilder(r);
    compute(b, 1000, [read(b, `x${r}`, 1e9)]);
    return b.build();
  };
  assert.ok(Math.abs(update(program([free(0), free(1)])).time_s - 3) < 1e-9);
  // three ranks under the lock: one second of reading each, one after another, then 1 s of Adam
  const three = update(program([rank(0), rank(1), rank(2)]));
  assert.ok(Math.abs(three.time_s - 4) < 1e-9, `${three.time_s}`);
});

Deno.test("simulate() keeps the ops of the iterations asked for as timeline spans, ms from each one's start", () => {
  const b = new ProgramBuilder(0);
  for (const iteration of [0, 1]) {
    const r = b.add({
      iteration,
      phase: "update",
      kind: "read",
      stream: "local:read",
      path: "local",
      object: "A",
      bytes: 1e9,
      label: `A${iteration}`,
      after: [],
    });
    b.add({
      iteration,
      phase: "update",
      kind: "compute",
      stream: "compute",
      ms: 500,
      label: "adam",
      after: [r],
    });
  }
  const sim = simulate({ ...program([b.build()]), iterations: 2 }, () => 1e9, {
    timelineIterations: [1],
  });
  // iteration 0: A0 [0, 1], adam [1, 1.5]; iteration 1's read waits for A0 on its stream
  assert.deepEqual(sim.timeline!.spans, [
    [1, 0, "local:read", "read", "A1", 1e9, 0, 1000],
    [1, 0, "compute", "compute", "adam", 0, 1000, 1500],
  ]);
  assert.equal(sim.timeline!.cut, false);
  assert.equal(simulate(program([b.build()]), () => 1e9).timeline, undefined);
});
