/**
 * `tierbench run JOB.fio`: a fio job file parsed (core/jobfile.ts), resolved
 * with fio's meaning for every option (core/jobfile_resolve.ts), all before
 * any I/O, then run as fio runs its jobs (bench/job_file.ts) and reported
 * with the file's options (fio-json's `global options` and `job options`).
 * Options given beside the file are fio's command-line options: defaults for
 * every job, under the file's own. Under a launcher every process runs the
 * jobs, one after another, each started together on every process (a file
 * whose jobs run at once is refused there).
 *
 * @module
 */

import { readJobFileText } from "../core/jobfile.ts";
import { hostResolveContext, resolveJobFile } from "../core/jobfile_resolve.ts";
import { JobFileError } from "../core/jobfile.ts";
import { ConfigError } from "../core/errors.ts";
import { hostKeywords } from "../core/fio_values.ts";
import { runResolvedJobFile } from "../bench/job_file.ts";
import type { RunProgress } from "../bench/runner.ts";
import { reportSession, type ReportTo } from "./_session.ts";
import type { LaunchInfo } from "../cluster/mod.ts";
import { runAcross } from "./_cluster.ts";
import { userCwd } from "./_paths.ts";

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
  // relative names are relative to where the user stands, as fio's are to its directory
  const parsed = readJobFileText(path, {
    keywords: hostKeywords(),
    cwd,
    ...(run.sections ? { sections: run.sections } : {}),
    ...(run.commandLine ? { commandLine: run.commandLine } : {}),
  });
  const file = resolveJobFile(parsed, hostResolveContext(cwd));
  const jobs = file.jobs.map((j) => j.job);
  const fioSource = {
    global: file.global,
    jobs: file.jobs.map((j) => ({ options: j.options, groupid: j.schedule.groupid })),
  };
  const config = { command: "run", jobfile: path, jobs };
  // the full-disk hint names the job file's key, not run's --size
  o = { ...o, sizeOption: `size= in ${path}` };
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
  await reportSession(
    { ...o, fioSource },
    async ({ runId, signal, progress }) =>
      await runResolvedJobFile(file, {
        kind: "run",
        runId,
        config,
        signal,
        ...(run.triggerTimeoutMs !== undefined ? { triggerTimeoutMs: run.triggerTimeoutMs } : {}),
        onProgress: (p: RunProgress) => progress.update(p),
      }),
  );
}
