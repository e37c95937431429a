import assert from "node:assert/strict";
import { parseJobOptions, parseTierSpec } from "../core/config.ts";
import { openTier } from "../tiers/mod.ts";
import { runJob, WORKER_URL } from "./runner.ts";
import { WorkerPool } from "./_worker_pool.ts";

const job = (numjobs: string) =>
  parseJobOptions({ tier: "null:", rw: "randread", bs: "4k", runtime: "100ms", numjobs });

Deno.test("a job's Workers take the session's next job after a clean end, and none after an interrupted one", async () => {
  await using tier = openTier(parseTierSpec("null:"), "pool-test");
  await tier.setup();
  using pool = new WorkerPool(WORKER_URL);
  const first = await runJob(tier, job("3"), { workers: pool });
  assert.equal(first.status, "ok");
  assert.equal(pool.idle, 3, "all three Workers kept");
  // the next run takes them (and starts one more): the same results, as many Workers kept
  const second = await runJob(tier, job("4"), { workers: pool });
  assert.equal(second.status, "ok");
  assert.ok(second.read.total_ios > 0);
  assert.equal(pool.idle, 4);
  // interrupted: its Workers end, never reused
  const abort = new AbortController();
  const run = runJob(tier, parseJobOptions({ ...rawOf("2"), runtime: "10" }), {
    workers: pool,
    signal: abort.signal,
  });
  setTimeout(() => abort.abort("test"), 300);
  assert.equal((await run).status, "interrupted");
  assert.equal(pool.idle, 2, "the two it took are gone, the other two still wait");
});

function rawOf(numjobs: string) {
  return { tier: "null:", rw: "randread", bs: "4k", numjobs };
}
