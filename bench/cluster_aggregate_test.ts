import assert from "node:assert/strict";
import { parseJobOptions } from "../core/config.ts";
import {
  decodeLatency,
  latencyStats,
  mergeLatency,
  newLatencyHistograms,
} from "../core/recorder.ts";
import { openTier } from "../tiers/mod.ts";
import { aggregateRun, commonWindow, type ProcessRun } from "./cluster_aggregate.ts";
import { runJob } from "./runner.ts";

/** Three real runs on the null tier, as three processes would report them. */
async function threeProcesses(): Promise<ProcessRun[]> {
  const job = parseJobOptions({
    tier: "null:",
    rw: "randrw",
    bs: "4k",
    size: "16m",
    runtime: "0.6",
    logAvgMsec: "50",
  });
  await using tier = openTier(job.tier);
  await tier.setup();
  const parts: ProcessRun[] = [];
  for (const [rank, node, startMs] of [[0, "a", 3], [1, "a", 11], [2, "b", 7]] as const) {
    parts.push({ rank, node, startMs, run: await runJob(tier, job) });
  }
  return parts;
}

const parts = await threeProcesses();

Deno.test("aggregateRun: the aggregate bandwidth is the sum of each process's over the common window", () => {
  const { run, section } = aggregateRun(parts);
  assert.deepEqual(section.window, { start_ms: 11, end_ms: 603 });
  for (const dir of ["read", "write"] as const) {
    const key = `${dir}_bw_bytes` as const;
    const sum = section.per_process.reduce((a, p) => a + p[key], 0);
    assert.deepEqual(section[dir].common_bw_bytes, sum);
    assert.deepEqual(run[dir].bw_bytes, sum);
    assert(sum > 0);
    const nodes = section.per_node.reduce((a, n) => a + n[key], 0);
    assert.deepEqual(nodes, sum);
  }
  assert.deepEqual(section.per_node.map((n) => [n.node, n.processes]), [["a", 2], ["b", 1]]);
  assert.deepEqual(run.jobs.map((j) => j.job), [0, 1, 2]);
});

Deno.test("aggregateRun: merged percentiles are the percentiles of the merged histograms", () => {
  const { run, section } = aggregateRun(parts);
  for (const dir of ["read", "write"] as const) {
    const merged = newLatencyHistograms();
    for (const p of parts) mergeLatency(merged, decodeLatency(p.run[dir].hist!));
    const expected = latencyStats(merged.lat);
    assert.deepEqual(section[dir].lat_ns, expected);
    assert.deepEqual(run[dir].lat_ns, expected);
    assert.deepEqual(expected.N, parts.reduce((a, p) => a + p.run[dir].lat_ns.N, 0));
  }
});

Deno.test("aggregateRun: last-done is every byte over the slowest process's time, first-done stops at the first end", () => {
  const { section } = aggregateRun(parts);
  const total = parts.reduce((a, p) => a + p.run.read.io_bytes, 0);
  assert.deepEqual(section.read.io_bytes, total);
  assert.deepEqual(section.read.last_done.io_bytes, total);
  // starts 3, 7, 11 ms after the barrier, each measuring 600 ms
  assert.deepEqual(section.read.last_done.runtime, 608);
  assert.deepEqual(section.read.first_done.runtime, 600);
  assert(section.read.first_done.io_bytes <= total);
  assert(section.read.common_io_bytes <= section.read.first_done.io_bytes);
});

Deno.test("commonWindow: windows that do not overlap leave an empty window", () => {
  assert.deepEqual(commonWindow([{ start: 0, end: 5 }, { start: 10, end: 20 }]), {
    start: 10,
    end: 10,
  });
});

Deno.test("aggregateRun: refuses an empty list", () => {
  let threw = false;
  try {
    aggregateRun([]);
  } catch (e) {
    threw = e instanceof RangeError;
  }
  assert(threw);
});
