/**
 * A resolved fio job file's jobs run as fio runs them: the third step of
 * parse (core/jobfile.ts) → resolve (core/jobfile_resolve.ts) → run. Each
 * job keeps the place resolving gave it (stonewall, wait_for, startdelay,
 * groupid, exitall); the jobs of one flow_id share its counters.
 *
 * @module
 */

import type { ResolvedJob, ResolvedJobFile } from "../core/jobfile_resolve.ts";
import { runJobSchedule, type ScheduledJob } from "./job_groups.ts";
import type { SessionOptions, SessionOutcome } from "./session.ts";

/**
 * Each resolved job with its place in the run, as runJobSchedule takes it.
 *
 * @example
 * ```ts
 * import { parseJobFileText } from "../core/jobfile.ts";
 * import { hostResolveContext, resolveJobFile } from "../core/jobfile_resolve.ts";
 * import { scheduledJobs } from "./job_file.ts";
 * const text = "[a]\nioengine=null\nsize=1m\n[b]\nioengine=null\nsize=1m\nwait_for=a\n";
 * const keywords = { pagesize: 4096, mbMemory: 1024, ncpus: 1 };
 * const file = resolveJobFile(parseJobFileText(text, "x.fio", { keywords }), hostResolveContext());
 * console.assert(scheduledJobs(file.jobs)[1]!.waitFor === 0);
 * ```
 */
export function scheduledJobs(jobs: readonly ResolvedJob[]): ScheduledJob[] {
  return jobs.map(({ job, schedule: s }) => ({
    job,
    stonewall: s.stonewall,
    ...(s.waitForJob !== undefined ? { waitFor: s.waitForJob } : {}),
    startDelayMs: s.startDelayMs,
    groupid: s.groupid,
    ...(s.exitall ? { exitall: s.exitall } : {}),
    exitallOnError: s.exitallOnError,
  }));
}

/**
 * The shared counters of each flow_id: [the flow's I/Os, the weight of all
 * its clones], the first starting at 1 as fio's flow counter does.
 *
 * @example
 * ```ts
 * import { flowCounters } from "./job_file.ts";
 * console.assert(flowCounters([]).size === 0);
 * ```
 */
export function flowCounters(
  jobs: readonly ResolvedJob[],
): Map<number, BigInt64Array<SharedArrayBuffer>> {
  const out = new Map<number, BigInt64Array<SharedArrayBuffer>>();
  for (const j of jobs) {
    const f = j.job.fio?.flow;
    if (!f) continue;
    let shared = out.get(f.id);
    if (!shared) {
      shared = new BigInt64Array(new SharedArrayBuffer(16));
      shared[0] = 1n; // fio's flow counter starts at 1
      out.set(f.id, shared);
    }
    shared[1]! += BigInt(f.weight * j.job.numjobs);
  }
  return out;
}

/**
 * Runs a resolved job file's jobs in one session (bench/job_groups.ts says
 * how they start and end).
 *
 * @example
 * ```ts
 * import { parseJobFileText } from "../core/jobfile.ts";
 * import { hostResolveContext, resolveJobFile } from "../core/jobfile_resolve.ts";
 * import { runResolvedJobFile } from "./job_file.ts";
 * const text = "[global]\nioengine=null\nsize=1m\n[a]\n[b]\nstonewall\n";
 * const keywords = { pagesize: 4096, mbMemory: 1024, ncpus: 1 };
 * const file = resolveJobFile(parseJobFileText(text, "x.fio", { keywords }), hostResolveContext());
 * const { doc } = await runResolvedJobFile(file, { kind: "run", config: {} });
 * console.assert(doc.status === "ok" && doc.runs.length === 2);
 * ```
 */
export function runResolvedJobFile(
  file: ResolvedJobFile,
  opts: SessionOptions & {
    /** fio's --trigger-timeout, ms (bench/job_groups.ts). */
    readonly triggerTimeoutMs?: number;
  },
): Promise<SessionOutcome> {
  return runJobSchedule(scheduledJobs(file.jobs), { ...opts, flows: flowCounters(file.jobs) });
}
