/**
 * `tierbench plan`: where optimizer state lives, from a node profile, with
 * predictions and DeepSpeed exports.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { dirname, join } from "node:path";
import { ConfigError } from "../core/errors.ts";
import { parseSize } from "../core/units.ts";
import { stringifyResult } from "../schema/result.ts";
import { DEEPSPEED_VERSIONS, type DeepSpeedVersion } from "../solver/export.ts";
import { makePlan } from "../solver/planner.ts";
import { readProfile } from "../solver/profile.ts";
import { newRunId } from "../tiers/scratch.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { formatPlan } from "./plan_table.ts";
import { addSetupOptions, outputOption, setupOf } from "./_options.ts";
import { resolvePath, userCwd } from "./_paths.ts";

/** The `plan` command. */
export function planCommand() {
  const cmd = new Command("plan")
    .description("plan where optimizer state lives from a profile, with predictions and exports")
    .requiredOption(
      "--profile <file>",
      "a result JSON of bench/contention, or a tierbench/profile@1 document",
    );
  return addSetupOptions(cmd, "plan")
    .option("--host-cache <size>", "host memory the optimizer state may use as cache", "64g")
    .option(
      "--deepspeed-version <v>",
      `DeepSpeed version of the export: ${DEEPSPEED_VERSIONS.join(", ")}`,
    )
    .option(
      "--local-dir <dir>",
      "directory of the node-local path on the training nodes (default: the profile's)",
    )
    .option(
      "--remote-dir <dir>",
      "directory of the remote path on the training nodes (default: the profile's)",
    )
    .addOption(outputOption("plan JSON (default results/plan-<run id>.json)"))
    .action(async (o) => {
      const setup = resolveSetup(setupOf(o));
      const hostCache = parseSize(o.hostCache);
      if (hostCache === undefined) {
        throw new ConfigError("host-cache", `"${o.hostCache}" is not a size`, "e.g. 64g, 512g, 0");
      }
      const version = o.deepspeedVersion;
      if (version !== undefined && !(DEEPSPEED_VERSIONS as readonly string[]).includes(version)) {
        throw new ConfigError(
          "deepspeed-version",
          `"${version}" has no verified key set`,
          DEEPSPEED_VERSIONS.join(", "),
        );
      }
      const profile = await readProfile(resolvePath(o.profile));
      const dirs: Record<string, string> = {};
      if (o.localDir) dirs.local = o.localDir;
      if (o.remoteDir) dirs.remote = o.remoteDir;
      const plan = await makePlan(profile, setup, {
        hostCacheBytes: hostCache,
        ...(o.adamRate !== undefined ? { adamRate: setup.adamParamsPerSec } : {}),
        ...(version !== undefined ? { deepspeedVersion: version as DeepSpeedVersion } : {}),
        ...(Object.keys(dirs).length > 0 ? { dirs } : {}),
      });
      const output = o.output
        ? resolvePath(o.output)
        : join(userCwd(), "results", `plan-${newRunId()}.json`);
      await Deno.mkdir(dirname(output), { recursive: true });
      await Deno.writeTextFile(output, stringifyResult(plan) + "\n");
      console.log(formatPlan(plan));
      console.log(`plan: ${output}`);
    });
}
