/**
 * A command's session: a run id, signals relayed to an abort signal, a
 * progress line, and at the end the results written and reported.
 *
 * @module
 */

import type { JobOptions } from "../core/config.ts";
import type { RunProgress } from "../bench/runner.ts";
import type { SteadyCriterion } from "../bench/steady.ts";
import { runSession, type SessionOutcome } from "../bench/session.ts";
import type { ResultDocument } from "../schema/result.ts";
import { newRunId } from "../tiers/scratch.ts";
import { ProgressLine } from "./progress.ts";
import { finish, type FinishFormat, STDOUT } from "./_finish.ts";
import { outputPath } from "./_paths.ts";
import { checkOutputPath } from "../core/output_file.ts";
import { withSignals } from "./_signals.ts";

/** What a session's body works with. */
export interface SessionContext {
  readonly runId: string;
  /** Aborted by SIGINT or SIGTERM. */
  readonly signal: AbortSignal;
  /** Stopped after the body; a body that prints may stop it first. */
  readonly progress: ProgressLine;
}

/** Where a session's result goes, and how. */
export interface ReportTo {
  readonly output?: string | undefined;
  readonly quiet: boolean;
  /** `--output-format` (default json); fio's formats with the job file's options, if any. */
  readonly outputFormat?: FinishFormat["format"];
  readonly fioSource?: FinishFormat["source"];
  /** `bench --verbose`: every run's row instead of the summary. */
  readonly verbose?: boolean | undefined;
  /** What sets the run's size, as the user started it (default `--size`). */
  readonly sizeOption?: string | undefined;
}

/**
 * Where the result of run `runId` goes: {@linkcode STDOUT}, or the file,
 * checked before any I/O (its parent is a directory that may be written to).
 *
 * @throws {ConfigError} naming `--output` when the file cannot be written.
 */
export function outputOf(o: ReportTo, runId: string): string {
  if (o.output === STDOUT || (o.output === undefined && o.outputFormat === "normal")) {
    return STDOUT;
  }
  const output = outputPath(o.output, runId);
  checkOutputPath(output);
  return output;
}

/**
 * Runs `body` under signal handling with a progress line (none when
 * `o.quiet`), then writes its outcome to `o.output` (default
 * results/<host>-<run id>.json; "-" or, for format normal, absent: stdout),
 * prints its tables and exits as it calls for. `announce` (what the run is
 * about to do) is called once the output is checked, so that bad input is
 * refused in one line.
 */
export async function reportSession(
  o: ReportTo,
  body: (session: SessionContext) => Promise<SessionOutcome>,
  announce?: () => void,
): Promise<void> {
  const runId = newRunId();
  const output = outputOf(o, runId);
  announce?.();
  const progress = new ProgressLine(o.quiet);
  await withSignals(async (signal) => {
    const outcome = await body({ runId, signal, progress });
    progress.stop();
    await finish(outcome, output, signal, {
      format: o.outputFormat,
      source: o.fioSource,
      verbose: o.verbose,
      sizeOption: o.sizeOption,
    });
  });
}

/** A step after the runs (the contention matrix of `bench`), on a document that ended ok. */
export type AfterRuns = (
  doc: ResultDocument,
  signal: AbortSignal,
  onProgress: (p: RunProgress) => void,
) => Promise<SessionOutcome>;

/**
 * Runs fio-style jobs as a session (`run`, `bench`), each stopped once
 * `steady` holds when given, then `after` when they ended ok.
 */
export async function runAndReport(
  jobs: JobOptions[],
  kind: ResultDocument["kind"],
  o: ReportTo,
  remote?: ResultDocument["remote"],
  after?: AfterRuns,
  steady?: SteadyCriterion,
): Promise<void> {
  await reportSession(o, async ({ runId, signal, progress }) => {
    const onProgress = (p: RunProgress) => progress.update(p);
    const outcome = await runSession(jobs, {
      kind,
      runId,
      config: { command: kind === "run" ? "run" : "bench", jobs },
      signal,
      onProgress,
      ...(remote ? { remote } : {}),
      ...(steady ? { steady } : {}),
    });
    if (after && outcome.doc.status === "ok" && !signal.aborted) {
      return await after(outcome.doc, signal, onProgress);
    }
    return outcome;
  });
}
