/**
 * `tierbench clean`: removes the scratch directories (or S3 prefixes) that
 * runs left behind, e.g. after a crash.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { DEFAULT_TIMEOUT_MS, parseTierSpec, parseTimeout } from "../core/config.ts";
import { cleanScratch, formatCleanReport } from "../tiers/clean.ts";
import { EXIT_FAILED, fail } from "./_exit.ts";
import { addS3Options } from "./_options.ts";
import { resolvePath } from "./_paths.ts";

/** The `clean` command. */
export function cleanCommand() {
  const cmd = new Command("clean")
    .description(
      "remove scratch directories (or S3 prefixes) that runs left behind, e.g. after a crash",
    )
    .requiredOption(
      "--tier <spec>",
      "where runs worked: file:DIR, memory:[DIR], pfs:DIR, s3://BUCKET[/PREFIX]",
    );
  return addS3Options(cmd)
    .option("--run-id <id>", "only the scratch area of this run (its results' run_id)")
    .option(
      "--timeout <seconds>",
      "give up on a storage that takes longer than this for one request (a file-system call, " +
        "an S3 request), listing what is left",
      String(DEFAULT_TIMEOUT_MS / 1000),
    )
    .action(async (o) => {
      const spec = parseTierSpec(o.tier);
      const timeoutMs = parseTimeout(o.timeout);
      const report = await cleanScratch(
        spec.kind === "s3" ? spec : { ...spec, path: resolvePath(spec.path) },
        { endpoint: o.endpoint, region: o.region, runId: o.runId, timeoutMs },
      );
      for (const line of formatCleanReport(report)) console.log(line);
      const failed = report.failed[0];
      if (failed) fail(`could not remove ${failed.path}: ${failed.error}`, EXIT_FAILED);
    });
}
