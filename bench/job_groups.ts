/**
 * Jobs in groups, as a fio job file runs them: the jobs of a group at the
 * same time, each group after the one before it has ended (fio's
 * `stonewall`).
 *
 * @module
 */

import type { JobOptions } from "../core/config.ts";
import type { RunResult } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import { runJob } from "./runner.ts";
import { checkSpace } from "../tiers/space.ts";
import {
  type SessionOptions,
  type SessionOutcome,
  sessionTimeout,
  withSession,
} from "./session.ts";

/**
 * Runs `groups` one after another, the jobs of each at once (each on its own
 * scratch directory of its tier), and gathers their results in the order
 * given. A job that fails or throws stops the others of its group (they end
 * "interrupted") and no later group starts.
 *
 * @example
 * ```ts
 * import { parseJobOptions } from "../core/config.ts";
 * import { runJobGroups } from "./job_groups.ts";
 * const job = (name: string) => parseJobOptions({ name, tier: "null:", size: "1m" });
 * const { doc } = await runJobGroups([[job("a"), job("b")], [job("c")]], {
 *   kind: "run",
 *   config: {},
 * });
 * console.assert(doc.status === "ok" && doc.runs.map((r) => r.name).join() === "a,b,c");
 * ```
 */
export function runJobGroups(
  groups: readonly (readonly JobOptions[])[],
  opts: SessionOptions,
): Promise<SessionOutcome> {
  checkSpace(groups, false); // each job has a scratch directory of its own
  const timeoutMs = opts.timeoutMs ?? sessionTimeout(groups.flat());
  return withSession({ ...opts, timeoutMs }, async ({ doc, tier: open, runId }) => {
    let index = 0;
    for (const group of groups) {
      if (opts.signal?.aborted) return "interrupted";
      const stop = new AbortController();
      const relay = () => stop.abort(opts.signal?.reason);
      opts.signal?.addEventListener("abort", relay);
      try {
        const first = index;
        const settled = await Promise.allSettled(group.map(async (job, k) => {
          const tier = await open(job.tier, job.s3, `${runId}-j${first + k}`);
          opts.onRunStart?.(job, first + k);
          const r = await runJob(tier, job, {
            signal: stop.signal,
            ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
          }).catch((e) => {
            stop.abort(e);
            throw e;
          });
          if (r.status === "failed") stop.abort(r.error);
          return r;
        }));
        index += group.length;
        const thrown = settled.find((s) => s.status === "rejected");
        if (thrown) throw thrown.reason;
        const results = settled.map((s) => (s as PromiseFulfilledResult<RunResult>).value);
        doc.runs.push(...results);
        const bad = results.find((r) => r.status === "failed") ??
          results.find((r) => r.status !== "ok");
        if (bad) {
          if (bad.error !== undefined) doc.error = bad.error;
          return bad.status as RunStatus;
        }
      } finally {
        opts.signal?.removeEventListener("abort", relay);
      }
    }
    return "ok";
  });
}
