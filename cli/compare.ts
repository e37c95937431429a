/**
 * `tierbench compare`: result files side by side per tier and pattern, with
 * ratios and better/worse marks.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { MATCH_MODES, runCompare } from "../report/compare.ts";
import { resolvePath } from "./_paths.ts";
import { shownPath } from "./_next.ts";

/** The `compare` command. */
export function compareCommand() {
  return new Command("compare")
    .description(
      "result files side by side per tier and pattern, with ratios and better/worse marks",
    )
    .argument("<files...>", "two result JSONs or more; the first is the baseline")
    .option("--match <how>", `match runs by: ${MATCH_MODES.join(", ")}`, "pattern")
    .option("--html <file>", "also write an HTML page with the report's charts overlaid")
    .action(async (files, o) => {
      const html = o.html === undefined ? undefined : resolvePath(o.html);
      const { text } = await runCompare(files.map(resolvePath), { match: o.match, html });
      console.log(text);
      if (html !== undefined) console.log(`html: ${shownPath(html)}`);
    });
}
