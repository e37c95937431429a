import assert from "node:assert/strict";
import type { IterationResult, WorkloadResult } from "../schema/workload.ts";
import { aggregateWorkloads } from "./workload_aggregate.ts";

/** A node's result with the given iteration times (the first a warm-up) and bytes per iteration. */
function nodeResult(times: number[], bytes: number, peak: number): WorkloadResult {
  const iterations: IterationResult[] = times.map((t, i) => ({
    iteration: i,
    warmup: i === 0,
    iteration_s: t,
    stall_s: t / 4,
    phases: {
      update: {
        time_s: t / 2,
        stall_s: 0,
        background: false,
        io: {
          "remote:write": { bytes, ops: 4, bw_bytes: bytes / (t / 2), busy_s: 1, slot_wait_s: 0.5 },
        },
      },
    },
  }));
  return {
    name: "mlp-offload",
    setup: { model: "7b", ranks_per_node: 2 },
    options: {},
    derived: { subgroups: 8 },
    notes: ["a note every node has"],
    paths: [{
      name: "remote",
      role: "remote",
      bs: 1 << 20,
      iodepth: 8,
      readers: 1,
      writers: 1,
      direct: false,
      tier: { kind: "pfs" } as unknown as WorkloadResult["paths"][number]["tier"],
      peak_readers: peak,
      peak_writers: 1,
    }],
    summary: {
      iterations: times.length - 1,
      iteration_s: times[1]!,
      update_s: times[1]! / 2,
      stall_s: 0,
      bytes: { "remote:write": bytes },
    },
    iterations,
    ranks: [0, 1].map((rank) => ({ rank, phases: [] })),
    timeline: {
      iteration: times.length - 1,
      columns: ["rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"],
      spans: [[1, "remote:write", "write", "sg0", bytes, 0, 5]],
    },
  };
}

Deno.test("aggregateWorkloads() takes the slowest node's times, sums bytes, and rates summed bytes over the aggregate time", () => {
  const a = nodeResult([5, 2, 4], 100, 1);
  const b = nodeResult([1, 3, 1], 300, 1);
  const all = aggregateWorkloads([
    { rank: 0, node: "n0", workload: a },
    { rank: 1, node: "n1", workload: b },
  ]);
  assert.deepEqual(all.iterations.map((it) => it.iteration_s), [5, 3, 4]);
  assert.deepEqual(all.iterations.map((it) => it.warmup), [true, false, false]);
  const update = all.iterations[1]!.phases.update!;
  assert.equal(update.time_s, 1.5);
  assert.deepEqual(update.io["remote:write"], {
    bytes: 400,
    ops: 8,
    bw_bytes: 400 / 1.5,
    busy_s: 2,
    slot_wait_s: 1,
  });
  assert.deepEqual(all.summary, {
    iterations: 2,
    iteration_s: 3.5,
    update_s: 1.75,
    stall_s: 0.875,
    bytes: { "remote:write": 400 },
  });
  // shape kept; ranks and spans numbered across nodes
  assert.equal(all.name, "mlp-offload");
  assert.deepEqual(all.ranks.map((r) => r.rank), [0, 1, 2, 3]);
  assert.deepEqual(all.timeline.spans.map((s) => s[0]), [1, 3]);
  assert.equal(all.paths[0]!.peak_readers, 1);
  assert.equal(all.notes.filter((n) => n === "a note every node has").length, 1);
  assert.match(all.notes.at(-1)!, /2 nodes \(n0, n1\)/);
  // the inputs are left as they were
  assert.equal(a.iterations[1]!.phases.update!.io["remote:write"]!.bytes, 100);
});

Deno.test("aggregateWorkloads() of one node keeps its figures, and refuses none", () => {
  const a = nodeResult([5, 2, 4], 100, 1);
  const one = aggregateWorkloads([{ rank: 0, node: "n0", workload: a }]);
  assert.deepEqual(one.iterations, a.iterations);
  assert.deepEqual(one.summary, { ...a.summary, iteration_s: 3, update_s: 1.5, stall_s: 0.75 });
  assert.throws(() => aggregateWorkloads([]), RangeError);
});

Deno.test("aggregateWorkloads() keeps every node's background schedules, ranks numbered across nodes, met only if all were", () => {
  const schedule = (rank: number, met: boolean) => ({
    rank,
    path: "remote",
    requests: 10,
    bytes: 1 << 20,
    max_lag_ms: met ? 1 : 500,
    end_lag_ms: met ? 0 : 400,
    interval_ms: 125,
    met,
  });
  const a = nodeResult([5, 2], 100, 1);
  const b = nodeResult([1, 3], 300, 1);
  a.background_rate = {
    bytes_per_s: 8 << 20,
    met: true,
    schedules: [0, 1].map((r) => schedule(r, true)),
  };
  b.background_rate = {
    bytes_per_s: 8 << 20,
    met: false,
    schedules: [schedule(0, true), schedule(1, false)],
  };
  const all = aggregateWorkloads([
    { rank: 0, node: "n0", workload: a },
    { rank: 1, node: "n1", workload: b },
  ]);
  assert.equal(all.background_rate!.bytes_per_s, 8 << 20);
  assert.equal(all.background_rate!.met, false);
  assert.deepEqual(all.background_rate!.schedules.map((x) => [x.rank, x.met]), [
    [0, true],
    [1, true],
    [2, true],
    [3, false],
  ]);
  // Without --background-rate there is no such section.
  assert.equal(
    aggregateWorkloads([{ rank: 0, node: "n0", workload: nodeResult([5, 2], 100, 1) }])
      .background_rate,
    undefined,
  );
});
