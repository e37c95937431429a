/**
 * `tierbench run JOB.fio`: a fio job file parsed (core/jobfile.ts), resolved
 * with fio's meaning for every option (core/jobfile_resolve.ts), all before
 * any I/O, then run as fio runs its jobs (bench/job_groups.ts) and reported
 * with the file's options (fio-json's `global options` and `job options`).
 * Options given beside the file are fio's command-line options: defaults for
 * every job, under the file's own. Under a launcher every process runs the
 * jobs, one after another, each started together on every process (a file
 * whose jobs run at once is refused there).
 *
 * @module
 */

import { readJobFileText } from "../core/jobfile.ts";
import { hostResolveContext, type ResolvedJob, resolveJobFile } from "../core/jobfile_resolve.ts";
import { JobFileError } from "../core/jobfile.ts";
import { ConfigError } from "../core/errors.ts";
import { hostKeywords } from "../core/fio_values.ts";
import { runJobSchedule, type ScheduledJob } from "../bench/job_groups.ts";
import type { RunProgress } from "../bench/runner.ts";
import { reportSession, type ReportTo } from "./_session.ts";
import type { LaunchInfo } from "../cluster/mod.ts";
import { runAcross } from "./_cluster.ts";
import { userCwd } from "./_paths.ts";
import { isAbsolute, join } from "node:path";

/** How a job file is run besides where its results go. */
export interface JobFileRun {
  /** fio's --section: only these jobs. */
  readonly sections?: readonly string[];
  /**
   * fio's --trigger-timeout: every job ends this long after the jobs began
   * (once the files are laid out), ms (a normal end).
   */
  readonly triggerTimeoutMs?: number;
  /** fio options given beside the file, in order: defaults under the file's own. */
  readonly commandLine?: readonly { readonly key: string; readonly value: string | undefined }[];
}

/** fio's groupid of each job: a new group at a stonewall or new_group after a group with jobs. */
function groupids(jobs: readonly ResolvedJob[]): number[] {
  let groupid = 0, inGroup = 0;
  return jobs.map((j) => {
    if ((j.schedule.stonewall || j.schedule.newGroup) && inGroup > 0) {
      groupid++;
      inGroup = 0;
    }
    inGroup += j.job.numjobs;
    return groupid;
  });
}

/** The shared counters of each flow_id: [the flow's I/Os, the weight of all its clones]. */
function flows(jobs: readonly ResolvedJob[]): Map<number, BigInt64Array<SharedArrayBuffer>> {
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
 * Runs the job file at `path` as one session, reported as `o` says; with
 * `launch`, across the processes it started (one document, by the root).
 *
 * @throws {JobFileError} for a key or value the file gets wrong (or fio
 * would refuse), and under a launcher for jobs that would run at once.
 */
export async function runJobFile(
  path: string,
  o: ReportTo,
  run: JobFileRun = {},
  launch?: LaunchInfo,
): Promise<void> {
  const cwd = userCwd();
  const parsed = readJobFileText(path, {
    keywords: hostKeywords(),
    exists: (p) => {
      try {
        Deno.statSync(isAbsolute(p) ? p : join(cwd, p));
        return true;
      } catch {
        return false;
      }
    },
    readFile: (p) => Deno.readTextFileSync(isAbsolute(p) ? p : join(cwd, p)),
    ...(run.sections ? { sections: run.sections } : {}),
    ...(run.commandLine ? { commandLine: run.commandLine } : {}),
  });
  // relative names are relative to where the user stands, as fio's are to its directory
  const file = resolveJobFile(parsed, {
    ...hostResolveContext(),
    cwd,
    readFile: (p) => Deno.readFileSync(isAbsolute(p) ? p : join(cwd, p)),
  });
  const jobs = file.jobs.map((j) => j.job);
  const ids = groupids(file.jobs);
  const fioSource = {
    global: file.global,
    jobs: file.jobs.map((j, i) => ({ options: j.options, groupid: ids[i]! })),
  };
  const config = { command: "run", jobfile: path, jobs };
  if (launch) {
    if (run.triggerTimeoutMs !== undefined) {
      throw new ConfigError(
        "trigger-timeout",
        "applies to one process: across processes a job ends by its own runtime or size",
      );
    }
    const together = file.jobs.find((j, i) => i > 0 && !j.schedule.stonewall);
    if (together) {
      throw new JobFileError(
        `${together.where} [${together.name}]`,
        "stonewall",
        "across processes each job runs alone, started together on every process: " +
          "give each job but the first stonewall",
      );
    }
    await runAcross(launch, jobs, "run", { ...o, fioSource }, false, config);
    return;
  }
  const index = new Map(file.jobs.map((j, i) => [j.name, i]));
  const scheduled: ScheduledJob[] = file.jobs.map((j, i) => ({
    job: j.job,
    stonewall: j.schedule.stonewall,
    ...(j.schedule.waitFor !== undefined ? { waitFor: index.get(j.schedule.waitFor)! } : {}),
    startDelayMs: j.schedule.startDelayMs,
    groupid: ids[i]!,
    ...(j.schedule.exitall ? { exitall: j.schedule.exitall } : {}),
    exitallOnError: j.schedule.exitallOnError,
  }));
  await reportSession(
    { ...o, fioSource },
    async ({ runId, signal, progress }) =>
      await runJobSchedule(scheduled, {
        kind: "run",
        runId,
        config,
        signal,
        ...(run.triggerTimeoutMs !== undefined ? { triggerTimeoutMs: run.triggerTimeoutMs } : {}),
        flows: flows(file.jobs),
        onProgress: (p: RunProgress) => progress.update(p),
      }),
  );
}
