/**
 * `tierbench run JOB.fio`: a fio job file's jobs, validated all before any
 * runs, then run in fio's groups (bench/job_groups.ts) and reported with the
 * file's options (fio-json's `global options` and `job options`). Under a
 * launcher every process runs the jobs, one after another, each started
 * together on every process (a file whose jobs run at once is refused there).
 *
 * @module
 */

import { type JobOptions, parseJobOptions } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { type FileJob, JobFileError, readJobFile } from "../core/jobfile.ts";
import { chooseAsyncEngine } from "../engines/engine_choice.ts";
import { runJobGroups } from "../bench/job_groups.ts";
import type { RunProgress } from "../bench/runner.ts";
import { resolvePath } from "./_paths.ts";
import { reportSession, type ReportTo } from "./_session.ts";
import type { LaunchInfo } from "../cluster/mod.ts";
import { runAcross } from "./_cluster.ts";

/** Field names of ConfigError as parseJobOptions says them → the job file's field keys. */
const FIELD_OF: Record<string, string> = { "io-size": "io-size", "rate-iops": "rate-iops" };

/** `job`'s options checked; a ConfigError said at the line of the key at fault. */
export function checkFileJob(job: FileJob): JobOptions {
  const raw = job.raw.filename === undefined
    ? job.raw
    : { ...job.raw, filename: resolvePath(job.raw.filename) };
  try {
    return parseJobOptions(raw, chooseAsyncEngine);
  } catch (e) {
    if (!(e instanceof ConfigError) || e instanceof JobFileError) throw e;
    const at = job.origin[FIELD_OF[e.field] ?? e.field];
    const where = at?.where ?? `${job.where} [${job.name}]`;
    throw new JobFileError(where, at?.key ?? e.field, e.message.replace(/^--[^:]+: /, ""), {
      cause: e,
    });
  }
}

/**
 * Runs the job file at `path` as one session, reported as `o` says; with
 * `launch`, across the processes it started (one document, by the root).
 *
 * @throws {JobFileError} for a key or value the file gets wrong, and under
 * a launcher for jobs that would run at once.
 */
export async function runJobFile(path: string, o: ReportTo, launch?: LaunchInfo): Promise<void> {
  const file = await readJobFile(path);
  const jobs = file.jobs.map(checkFileJob);
  const groups: JobOptions[][] = [];
  for (const [i, fj] of file.jobs.entries()) (groups[fj.run] ??= []).push(jobs[i]!);
  const fioSource = {
    global: file.global,
    jobs: file.jobs.map((j) => ({ options: j.options, groupid: j.groupid })),
  };
  const config = { command: "run", jobfile: path, jobs };
  if (launch) {
    const together = file.jobs.find((fj, i) => i > 0 && fj.run === file.jobs[i - 1]!.run);
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
  await reportSession(
    { ...o, fioSource },
    async ({ runId, signal, progress }) =>
      await runJobGroups(groups, {
        kind: "run",
        runId,
        config,
        signal,
        onProgress: (p: RunProgress) => progress.update(p),
      }),
  );
}
