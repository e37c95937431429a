/**
 * `tierbench report`: a self-contained HTML report with charts, a Markdown
 * summary and CSV tables of a result or a plan.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { writeReport } from "../report/report.ts";
import { resolvePath, userCwd } from "./_paths.ts";

/** The `report` command. */
export function reportCommand() {
  return new Command("report")
    .description("a self-contained HTML report with charts, a Markdown summary and CSV tables")
    .argument("<result>", "a result JSON (run, bench, contention, workload, sweep) or a plan JSON")
    .argument("[plan]", "a plan JSON written by `tierbench plan`, drawn beside the result")
    .option(
      "--output <dir>",
      "directory of report.html, report.md and the CSVs (default results/report-<name>)",
    )
    .action(async (result, plan, o) => {
      const files = await writeReport(
        [result, ...(plan === undefined ? [] : [plan])].map(resolvePath),
        { outDir: o.output === undefined ? undefined : resolvePath(o.output), cwd: userCwd() },
      );
      console.log(`report: ${files.html}`);
      console.log(`summary: ${files.markdown}`);
      if (files.csv.length > 0) console.log(`tables: ${files.csv.join(", ")}`);
    });
}
