/**
 * Test helper: one job run from its options as a user gives them, on a tier
 * opened and set up for it alone.
 *
 * @module
 */

import { parseJobOptions, type RawJobOptions } from "../core/config.ts";
import type { RunResult } from "../schema/result.ts";
import { openTier } from "../tiers/mod.ts";
import { runJob } from "../bench/runner.ts";

/** Parses `raw`, opens and sets up its tier, runs the job and closes the tier again. */
export async function runRawJob(raw: RawJobOptions): Promise<RunResult> {
  const job = parseJobOptions(raw);
  await using tier = openTier(job.tier);
  await tier.setup();
  return await runJob(tier, job);
}
