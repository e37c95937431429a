/**
 * The end of a run: its result file written, its tables printed, and the
 * exit status its outcome calls for.
 *
 * @module
 */

import { ConfigError, errorLine, sizeHintNaming } from "../core/errors.ts";
import type { SessionOutcome } from "../bench/session.ts";
import { type ResultDocument, stringifyResult } from "../schema/result.ts";
import { partialPathOf, writeFileAtomic, writeFileNew } from "../core/output_file.ts";
import { redactSecrets } from "../core/secrets.ts";
import {
  type FioJobSource,
  type FioJsonOptions,
  type OutputFormat,
  toFioJson,
} from "../schema/fio_json.ts";
import { contentionRunGroups } from "../bench/contention_groups.ts";
import { formatClusterTable } from "./cluster_table.ts";
import { formatContentionTable } from "./contention_table.ts";
import { formatBenchSummary } from "./bench_summary.ts";
import { formatScheduleNotes, formatTable } from "./run_table.ts";
import { formatSweep } from "./sweep_table.ts";
import { formatTraceReplay } from "./trace_table.ts";
import { formatWorkloadSummaries, formatWorkloadTable } from "./workload_table.ts";
import { EXIT_FAILED, EXIT_USAGE, fail } from "./_exit.ts";
import { resultLine } from "./_next.ts";

/**
 * The tables printed after a run: the runs, and the contention matrix when
 * there is one; for a profile (`bench`), its summary unless `verbose`.
 */
export function formatTables(doc: ResultDocument, verbose = true): string {
  if (doc.kind === "profile" && !verbose) return formatBenchSummary(doc);
  const runs = doc.runs.length > 0 && doc.kind !== "contention" && doc.kind !== "sweep"
    ? [formatTable(doc.runs)]
    : [];
  const sweep = doc.sweep && doc.sweep.tiers.length > 0
    ? [formatSweep(doc.sweep, String(doc.config.deepspeed_version ?? ""))]
    : [];
  const workload = doc.workload && doc.workload.iterations.length > 0
    ? [formatWorkloadTable(doc.workload)]
    : [];
  const matrix = doc.contention && doc.contention.groups.length > 0
    ? [formatContentionTable(doc.contention)]
    : [];
  const workloads = doc.workloads && doc.workloads.length > 0
    ? [formatWorkloadSummaries(doc.workloads)]
    : [];
  const cluster = doc.cluster ? [formatClusterTable(doc.cluster, doc.kind !== "contention")] : [];
  const replay = doc.trace_replay ? [formatTraceReplay(doc.trace_replay)] : [];
  return [...runs, ...cluster, ...sweep, ...workload, ...matrix, ...workloads, ...replay].join(
    "\n",
  );
}

/** How the result is written: its format and, for fio's formats, the job file's options. */
export interface FinishFormat {
  readonly format?: OutputFormat | undefined;
  readonly source?: FioJobSource | undefined;
  /** A profile's every run, rather than its summary. */
  readonly verbose?: boolean | undefined;
  /** What sets the run's size as the user started it, for the full-disk hint (default --size). */
  readonly sizeOption?: string | undefined;
}

/** `output` when it means standard output. */
export const STDOUT = "-";

/** How fio's layout groups the document's runs: a job file's groups, or a contention matrix's. */
function fioOptions(doc: ResultDocument, f: FinishFormat, plus: boolean): FioJsonOptions {
  if (f.source) return { plus, source: f.source };
  if (doc.kind === "contention") {
    return { plus, groups: contentionRunGroups(doc.runs.map((r) => r.name)) };
  }
  return { plus };
}

/** The document as `format` has it (`normal` has none). */
function documentText(doc: ResultDocument, f: FinishFormat): string | undefined {
  switch (f.format ?? "json") {
    case "normal":
      return undefined;
    case "json":
      return stringifyResult(doc);
    case "fio-json":
      return JSON.stringify(toFioJson(doc, fioOptions(doc, f, false)), null, 2);
    case "json+":
      return JSON.stringify(toFioJson(doc, fioOptions(doc, f, true)), null, 2);
  }
}

/**
 * Writes the document's text: a complete result atomically to `output`; a
 * failed or interrupted run's beside it (`NAME.partial.json`), never over an
 * existing file. Returns the path written.
 */
async function writeOutput(output: string, text: string, complete: boolean): Promise<string> {
  try {
    if (!complete) return await writeFileNew(partialPathOf(output), text);
    await writeFileAtomic(output, text);
    return output;
  } catch (e) {
    const why = errorLine(e);
    return fail(`could not write the results to ${output}: ${why}`, EXIT_FAILED);
  }
}

/**
 * Writes the results, prints the table, and exits with the right status
 * (never returns).
 * With `output` "-" the document goes to stdout and every other line to
 * stderr; with format `normal` the tables are the output (to `output`, or
 * stdout when it is absent or "-") and no document is written. A run that
 * failed or was interrupted writes its partial results beside `output`
 * (`NAME.partial.json`), so `output` only ever holds a complete result, and
 * an existing file is never replaced by a partial one. Secrets are removed
 * from everything written or printed.
 */
export async function finish(
  outcome: SessionOutcome,
  output: string,
  signal: AbortSignal,
  f: FinishFormat = {},
): Promise<never> {
  const { doc, error } = outcome;
  if (error instanceof ConfigError) fail(error.message, EXIT_USAGE);
  const sized = (line: string) => f.sizeOption ? sizeHintNaming(line, f.sizeOption) : line;
  if (doc.error !== undefined) doc.error = sized(doc.error);
  for (const run of doc.runs) if (run.error !== undefined) run.error = sized(run.error);
  const toStdout = output === STDOUT;
  const say = (line: string) => (toStdout ? console.error : console.log)(redactSecrets(line));
  const complete = doc.status === "ok" && !signal.aborted;
  // a workload that got as far as setting its tiers up has something to show
  const wrote = doc.runs.length > 0 || (doc.workload?.paths.length ?? 0) > 0 ||
    doc.cluster !== undefined || doc.trace_replay !== undefined;
  const text = documentText(doc, f);
  let written = output;
  if (wrote) {
    const tables = formatTables(doc, f.verbose ?? true);
    const body = redactSecrets(text ?? tables);
    if (toStdout) console.log(body);
    else written = await writeOutput(output, body + "\n", complete);
    if (text !== undefined) say(tables);
  }
  const place = toStdout ? "on stdout" : `in ${written}`;
  const where = wrote ? `; ${complete ? "" : "partial "}results ${place}` : "";
  if (doc.status === "interrupted" || signal.aborted) {
    fail(
      `interrupted by ${String(signal.reason ?? "a signal")}${where}; scratch files removed`,
      EXIT_FAILED,
    );
  }
  if (doc.status !== "ok") {
    const cause = sized(error instanceof Error ? error.message : doc.error ?? "run failed");
    fail(`${cause}${where}`, EXIT_FAILED);
  }
  for (const line of formatScheduleNotes(doc.runs)) say(line);
  if (!toStdout) say(resultLine("results", output, ["report", output]));
  // now, not when every pending call has returned: a clean-up given up on a storage that
  // stopped answering leaves a thread blocked in the kernel, which must not hold the exit
  Deno.exit(0);
}
