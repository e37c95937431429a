import assert from "node:assert/strict";
import type { RankPhase, RankReport } from "./workload.ts";
import type { WorkloadProgram } from "../workloads/ops.ts";
import { median } from "../core/stats.ts";
import { aggregate } from "./workload.ts";

const program = { warmupIterations: 1, iterations: 2 } as WorkloadProgram;

function phase(
  iteration: number,
  name: string,
  start: number,
  end: number,
  extra: Partial<RankPhase> = {},
): RankPhase {
  return {
    iteration,
    phase: name,
    start,
    end,
    background: false,
    stall_ms: 0,
    barrier_ms: 0,
    io: {},
    ...extra,
  };
}

const io = (bytes: number) => ({ bytes, ops: 1, busy_ms: 100, slot_wait_ms: 10 });

function rank(r: number, shift: number, stall: number): RankReport {
  const phases: RankPhase[] = [];
  for (let it = 0; it < 3; it++) {
    const t = 1000 * it + shift;
    phases.push(phase(it, "update", t, t + 400 + 100 * it, {
      stall_ms: stall * (it + 1),
      io: { "local:read": io(1000), "local:write": io(500) },
    }));
    phases.push(
      phase(it, "flush", t + 400, t + 900, { background: true, io: { "remote:write": io(700) } }),
    );
  }
  phases.push(phase(2, "drain", 3000, 3500));
  return {
    rank: r,
    phases,
    timeline: [["compute", "compute", "sg0.adam", 0, 2050, 2060]],
    started: 0,
  };
}

Deno.test("aggregate() takes the slowest rank per phase and the medians over measured iterations only", () => {
  const reports = [rank(0, 0, 10), rank(1, 50, 30)];
  const out = aggregate(program, reports, 2);
  assert.equal(out.iterations.length, 3);
  assert.deepEqual(out.iterations.map((it) => it.warmup), [true, false, false]);
  // iteration 1: update from 1000 (rank 0) to 1050 + 500 (rank 1) = 550 ms
  assert.equal(out.iterations[1]!.phases.update!.time_s, 0.55);
  // the drain does not count in iteration 2's time: 2000 … 2050 + 600
  assert.equal(out.iterations[2]!.iteration_s, 0.65);
  // stall: the larger rank's, 30 ms × (it + 1)
  assert.equal(out.iterations[1]!.stall_s, 0.06);
  // bytes over both ranks, bandwidth over the phase's time
  assert.equal(out.iterations[1]!.phases.update!.io["local:read"]!.bytes, 2000);
  assert.equal(out.iterations[1]!.phases.update!.io["local:read"]!.bw_bytes, 2000 / 0.55);
  assert.equal(out.iterations[1]!.phases.flush!.background, true);
  const s = out.summary!;
  assert.equal(s.iterations, 2);
  assert.equal(s.update_s, median([0.55, 0.65]));
  assert.equal(s.flush_s, median([0.55, 0.55]));
  assert.equal(s.stall_s, median([0.06, 0.09]));
  assert.deepEqual(s.bytes, { "local:read": 2000, "local:write": 1000, "remote:write": 1400 });
  // per rank, relative to the earliest start
  assert.equal(out.ranks[1]!.phases[0]!.start_s, 0.05);
  // timeline in ms from the timeline iteration's first start (2000)
  assert.deepEqual(out.timeline.spans[0], [0, "compute", "compute", "sg0.adam", 0, 50, 60]);
});

Deno.test("aggregate() gives no summary when only warm-up iterations ran", () => {
  const out = aggregate(
    { warmupIterations: 3, iterations: 0 } as WorkloadProgram,
    [rank(0, 0, 0)],
    2,
  );
  assert.equal(out.summary, null);
});
