/**
 * `tierbench trace stats TRACE`: per phase, what the trace did.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { ConfigError } from "../core/errors.ts";
import { parseDuration } from "../core/units.ts";
import { TraceReader } from "../trace/reader.ts";
import { traceStats } from "../trace/stats.ts";
import { formatTraceStats } from "./trace_table.ts";
import { resolvePath } from "./_paths.ts";

/** `trace stats`. */
export function traceStatsCommand() {
  return new Command("stats")
    .description(
      "per phase: files, bytes per file group, request sizes, iocbs per submit, in flight, " +
        "contexts, threads, order, failures, padding",
    )
    .argument("<trace>", "a trace (or a fio iolog)")
    .option(
      "--gap <duration>",
      "without markers, a pause this long starts a phase (s, or ms/s/m suffix)",
      "1",
    )
    .option("--json", "print the statistics as JSON instead of tables")
    .action(async (trace, o) => {
      const gapMs = parseDuration(o.gap);
      if (gapMs === undefined || gapMs <= 0) {
        throw new ConfigError("gap", `"${o.gap}" is not a duration above 0`, "e.g. 500ms, 2");
      }
      const path = resolvePath(trace);
      const stats = await traceStats(await TraceReader.open(path), { gapUs: gapMs * 1000 });
      console.log(o.json ? JSON.stringify(stats, null, 2) : formatTraceStats(stats, trace));
    });
}
