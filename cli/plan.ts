/**
 * `tierbench plan`: where optimizer state lives, from a node profile, with
 * predictions and DeepSpeed exports.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { join } from "node:path";
import { ConfigError } from "../core/errors.ts";
import { badSize, parseSize } from "../core/units.ts";
import { stringifyResult } from "../schema/result.ts";
import { checkOutputPath, writeFileAtomic } from "../core/output_file.ts";
import { DEFAULT_DEEPSPEED_VERSION, parseDeepSpeedVersion } from "../solver/export.ts";
import { makePlan } from "../solver/planner.ts";
import { DEFAULT_HOST_RESERVE, parseHostReserve } from "../solver/host_memory.ts";
import { readProfile } from "../solver/profile.ts";
import { newRunId } from "../tiers/scratch.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { formatPlan } from "./plan_table.ts";
import { resultLine } from "./_next.ts";
import { addSetupOptions, outputOption, setupOf } from "./_options.ts";
import { resolvePath, userCwd } from "./_paths.ts";

/** The `plan` command. */
export function planCommand() {
  const cmd = new Command("plan")
    .description("plan where optimizer state lives from a profile, with predictions and exports")
    .requiredOption(
      "--profile <file>",
      "a result JSON of bench/contention or fio (json, json+), or a tierbench/profile@1 document",
    );
  return addSetupOptions(cmd, "plan")
    .option("--host-cache <size>", "host memory the optimizer state may use as cache", "64g")
    .option(
      "--host-reserve <share|size>",
      "host memory held back from the plan (OS, framework): a share or a size",
      DEFAULT_HOST_RESERVE,
    )
    .option(
      "--deepspeed-version <v>",
      `DeepSpeed release of the export, any x.y.z (default ${DEFAULT_DEEPSPEED_VERSION})`,
    )
    .option(
      "--local-dir <dir>",
      "directory of the node-local path on the training nodes (default: the profile's)",
    )
    .option(
      "--remote-dir <dir>",
      "directory of the remote path on the training nodes (default: the profile's)",
    )
    .option(
      "--nodes <n[,n…]>",
      "nodes of the job sharing the remote tier; a list (1,2,4,8) also plans each count",
      "1",
    )
    .addOption(outputOption("plan JSON (default results/plan-<run id>.json)"))
    .action(async (o) => {
      const output = o.output
        ? resolvePath(o.output)
        : join(userCwd(), "results", `plan-${newRunId()}.json`);
      checkOutputPath(output);
      const setup = resolveSetup(setupOf(o));
      const hostCache = parseSize(o.hostCache);
      if (hostCache === undefined) {
        throw new ConfigError("host-cache", badSize(o.hostCache), "e.g. 64g, 512g, 0");
      }
      const version = o.deepspeedVersion;
      if (version !== undefined) parseDeepSpeedVersion(version);
      const hostReserve = parseHostReserve(o.hostReserve);
      const nodes = parseNodes(o.nodes);
      const profile = await readProfile(resolvePath(o.profile));
      const dirs: Record<string, string> = {};
      if (o.localDir) dirs.local = o.localDir;
      if (o.remoteDir) dirs.remote = o.remoteDir;
      const plan = await makePlan(profile, setup, {
        hostCacheBytes: hostCache,
        hostReserve,
        ...(o.adamRate !== undefined ? { adamRate: setup.adamParamsPerSec } : {}),
        ...(version !== undefined ? { deepspeedVersion: version } : {}),
        ...(Object.keys(dirs).length > 0 ? { dirs } : {}),
        nodes: nodes[0]!,
        ...(nodes.length > 1 ? { nodesSweep: nodes } : {}),
      });
      await writeFileAtomic(output, stringifyResult(plan) + "\n");
      console.log(formatPlan(plan));
      console.log(resultLine("plan", output, ["report", output]));
    });
}

/** The most nodes `--nodes` takes. */
const MAX_NODES = 100_000;
const NODES_ALLOWED = `a whole number of nodes from 1 to ${MAX_NODES}, or an ascending ` +
  "comma-separated list of them, e.g. 8 or 1,2,4,8";

/**
 * `--nodes` as node counts: one count, or an ascending list (a sweep whose
 * first count is the plan's).
 *
 * @throws {ConfigError} naming --nodes and what it takes.
 */
export function parseNodes(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(",")) {
    const t = part.trim();
    const n = /^\d+$/.test(t) ? Number(t) : NaN;
    if (!(n >= 1 && n <= MAX_NODES)) {
      const what = t === "" ? `"${text}" has an empty count` : `"${t}" is not a node count`;
      throw new ConfigError("nodes", what, NODES_ALLOWED);
    }
    const before = out[out.length - 1];
    if (before !== undefined && n <= before) {
      throw new ConfigError("nodes", `"${text}": ${n} does not follow ${before}`, NODES_ALLOWED);
    }
    out.push(n);
  }
  return out;
}
