/**
 * `tierbench run JOB.fio`: a fio job file's jobs, validated all before any
 * runs, then run in fio's groups (bench/job_groups.ts) and reported with the
 * file's options (fio-json's `global options` and `job options`).
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

/** Field names of ConfigError as parseJobOptions says them → the job file's field keys. */
const FIELD_OF: Record<string, string> = { "io-size": "io-size", "rate-iops": "rate-iops" };

/** `job`'s options checked; a ConfigError said at the line of the key at fault. */
function checked(job: FileJob): JobOptions {
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

/** Runs the job file at `path` as one session, reported as `o` says. */
export async function runJobFile(path: string, o: ReportTo): Promise<void> {
  const file = await readJobFile(path);
  const jobs = file.jobs.map(checked);
  const groups: JobOptions[][] = [];
  for (const [i, fj] of file.jobs.entries()) (groups[fj.run] ??= []).push(jobs[i]!);
  await reportSession({
    ...o,
    fioSource: {
      global: file.global,
      jobs: file.jobs.map((j) => ({ options: j.options, groupid: j.groupid })),
    },
  }, async ({ runId, signal, progress }) =>
    await runJobGroups(groups, {
      kind: "run",
      runId,
      config: { command: "run", jobfile: path, jobs },
      signal,
      onProgress: (p: RunProgress) => progress.update(p),
    }));
}
