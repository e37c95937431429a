/**
 * The end of a run: its result file written, its tables printed, and the
 * exit status its outcome calls for.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import type { SessionOutcome } from "../bench/session.ts";
import { type ResultDocument, writeResult } from "../schema/result.ts";
import { formatClusterTable } from "./cluster_table.ts";
import { formatContentionTable } from "./contention_table.ts";
import { formatScheduleNotes, formatTable } from "./run_table.ts";
import { formatSweep } from "./sweep_table.ts";
import { formatWorkloadSummaries, formatWorkloadTable } from "./workload_table.ts";
import { EXIT_FAILED, EXIT_USAGE, fail } from "./_exit.ts";

/** The tables printed after a run: the runs, and the contention matrix when there is one. */
export function formatTables(doc: ResultDocument): string {
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
  return [...runs, ...cluster, ...sweep, ...workload, ...matrix, ...workloads].join("\n");
}

/** Writes the results, prints the table, and exits with the right status. */
export async function finish(
  outcome: SessionOutcome,
  output: string,
  signal: AbortSignal,
): Promise<void> {
  const { doc, error } = outcome;
  if (error instanceof ConfigError) fail(error.message, EXIT_USAGE);
  // a workload that got as far as setting its tiers up has something to show
  const wrote = doc.runs.length > 0 || (doc.workload?.paths.length ?? 0) > 0 ||
    doc.cluster !== undefined;
  if (wrote) {
    await writeResult(output, doc);
    console.log(formatTables(doc));
  }
  const where = wrote ? `; ${doc.status === "ok" ? "" : "partial "}results in ${output}` : "";
  if (doc.status === "interrupted" || signal.aborted) {
    fail(
      `interrupted by ${String(signal.reason ?? "a signal")}${where}; scratch files removed`,
      EXIT_FAILED,
    );
  }
  if (doc.status !== "ok") {
    const cause = error instanceof Error ? error.message : doc.error ?? "run failed";
    fail(`${cause}${where}`, EXIT_FAILED);
  }
  for (const line of formatScheduleNotes(doc.runs)) console.log(line);
  console.log(`results: ${output}`);
}
