/**
 * `tierbench report`: a self-contained HTML report with charts, a Markdown
 * summary and CSV tables of a result or a plan.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { writeReport } from "../report/report.ts";
import { resolvePath, userCwd } from "./_paths.ts";
import { resultLine, shownPath } from "./_next.ts";

/**
 * What to run after drawing `result`: a profile (`bench`, `contention`)
 * feeds `plan`; anything else is compared with another result.
 */
async function nextAfter(result: string): Promise<string[]> {
  let kind: unknown;
  try {
    kind = JSON.parse(await Deno.readTextFile(resolvePath(result))).kind;
  } catch {
    kind = undefined;
  }
  return kind === "profile" || kind === "contention"
    ? ["plan", "--profile", resolvePath(result), "--model", "70b"]
    : ["compare", resolvePath(result), "OTHER.json"];
}

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
      console.log(`summary: ${shownPath(files.markdown)}`);
      if (files.csv.length > 0) {
        console.log(`tables: ${files.csv.map((f) => shownPath(f)).join(", ")}`);
      }
      console.log(resultLine("report", files.html, await nextAfter(result)));
    });
}
