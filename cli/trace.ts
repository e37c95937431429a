/**
 * `tierbench trace`: record any process's file I/O, import strace logs and
 * fio iologs, look at a trace phase by phase, diff it against a generator,
 * replay it on the tiers, draw any timeline for Perfetto.
 * Each subcommand lives in its own file (cli/trace_*.ts).
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { traceExportCommand, traceImportCommand } from "./trace_import.ts";
import { traceRecordCommand } from "./trace_record.ts";
import { traceReplayCommand } from "./trace_replay.ts";
import { traceStatsCommand } from "./trace_stats.ts";
import { traceDiffCommand } from "./trace_diff.ts";
import { traceTimelineCommand } from "./trace_timeline.ts";

/** The subcommands of `trace`, in the order `--help` lists them. */
export function traceSubcommands(): Command[] {
  return [
    traceRecordCommand(),
    traceImportCommand(),
    traceExportCommand(),
    traceStatsCommand(),
    traceDiffCommand(),
    traceReplayCommand(),
    traceTimelineCommand(),
  ] as Command[];
}

/** The `trace` command. */
export function traceCommand() {
  const cmd = new Command("trace").description(
    "record a process's file I/O, import strace logs and fio iologs; stats, diff, replay and timelines of traces",
  );
  for (const sub of traceSubcommands()) cmd.addCommand(sub);
  return cmd;
}
