import assert from "node:assert/strict";
import { activationRows, describePlan, replayTable } from "./replay_table.ts";
import type { PlanDocument } from "../../schema/plan.ts";

function plan(host: number, paths: [string, number, number][], cacheBytes: number): PlanDocument {
  return {
    setup: { model: "7b" },
    inputs: { host_cache_bytes: cacheBytes },
    placement: {
      host_subgroups: host,
      paths: paths.map(([tier, subgroups, cache_subgroups], i) => ({
        name: i === 0 ? "local" : "remote",
        tier,
        subgroups,
        cache_subgroups,
      })),
    },
  } as unknown as PlanDocument;
}

Deno.test("describePlan() names every tier the plan uses and leaves out empty paths", () => {
  assert.equal(
    describePlan(plan(2, [["file", 10, 1], ["pfs", 5, 0]], 8 * 2 ** 30)),
    "7B, 8 GiB host cache: 2 in host memory, 10 on file (1 cached), 5 on pfs",
  );
  assert.equal(
    describePlan(plan(0, [["file", 17, 0], ["pfs", 0, 0]], 1.5 * 2 ** 30)),
    "7B, 1.50 GiB host cache: 17 subgroups per rank on file",
  );
});

Deno.test("replayTable() puts the replays of one plan on one row, in order, with their median error", () => {
  const t = replayTable([
    { plan: "a", predicted_s: 1, measured_s: 1.1, error: 0.1 },
    { plan: "b", predicted_s: 2, measured_s: null, error: null },
    { plan: "a", predicted_s: 1, measured_s: 0.95, error: -0.05 },
    { plan: "a", predicted_s: 1, measured_s: 1.2, error: 0.2 },
  ]).split("\n");
  assert.equal(t.length, 4);
  assert.equal(
    t[2],
    "| a | 1.000 s | 1.100, 0.950, 1.200 s | +10.0 %, −5.0 %, +20.0 % | +10.0 % |",
  );
  assert.equal(t[3], "| b | 2.000 s | — s | — | — |");
});

Deno.test("activationRows() gives forward and backward of each run that offloads a layer", () => {
  const run = (offloaded: number, fwd: number | null) => ({
    offloaded,
    prefetch: 2,
    status: "ok" as const,
    predicted: { forward_s: 1, backward_s: 2 },
    measured: { forward_s: fwd, backward_s: 2.2 },
    error: { forward: fwd === null ? null : fwd - 1, backward: 0.1 },
  });
  const rows = activationRows({ layers: 32, plan: run(4, null), all: run(31, 1.05) });
  assert.deepEqual(rows.map((r) => r.plan), [
    "activations, the activation plan (4 of 32 layers, ssdtrain): forward",
    "activations, the activation plan (4 of 32 layers, ssdtrain): backward",
    "activations, every layer offloaded (31 of 32 layers, ssdtrain): forward",
    "activations, every layer offloaded (31 of 32 layers, ssdtrain): backward",
  ]);
  assert.equal(rows[0]!.measured_s, null);
  assert.equal(rows[2]!.predicted_s, 1);
  assert.ok(Math.abs(rows[2]!.error! - 0.05) < 1e-12);
  assert.equal(activationRows({ layers: 32, plan: run(0, 1), all: run(0, 1) }).length, 0);
});
