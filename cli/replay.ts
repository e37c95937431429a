/**
 * `tierbench replay`: a plan run as a workload on the real tiers, measured
 * beside predicted.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { formatTierSpec, parseTimeout } from "../core/config.ts";
import { ConfigError, InputError } from "../core/errors.ts";
import { readJsonFile } from "../core/json_file.ts";
import { replayPlan, setupOfPlan } from "../bench/replay.ts";
import type { PlanDocument } from "../schema/plan.ts";
import { checkPlanDocument } from "../solver/plan_check.ts";
import { SETUP_DEFAULTS } from "../workloads/setup.ts";
import { formatReplay } from "./plan_table.ts";
import { addCheckOptions, addOutputOptions, addS3Options } from "./_options.ts";
import { parseTierList, resolvePath } from "./_paths.ts";
import { reportSession } from "./_session.ts";

/** Reads a plan document, or says in one line why it is not one, naming the file as given. */
async function readPlan(path: string, shown: string): Promise<PlanDocument> {
  // every field replay reads, so a damaged plan is refused naming the field (exit 2)
  return checkPlanDocument(await readJsonFile(path, shown), shown);
}

/** The `replay` command. */
export function replayCommand() {
  const cmd = new Command("replay")
    .description("run a plan as a workload on the real tiers and set measured beside predicted")
    .argument("<plan>", "a plan JSON written by `tierbench plan`")
    .requiredOption(
      "--tiers <specs>",
      "comma list: memory:DIR, file:DIR (the plan's local path), pfs:DIR or s3://BUCKET (its remote path)",
    )
    .option("--scale <f>", "factor on every byte count and think time, in (0, 1]", "0.01")
    .option(
      "--activations",
      "also run the activation plan as ssdtrain on the file tier, and every layer offloaded",
      false,
    )
    .option("--iterations <n>", "measured iterations", String(SETUP_DEFAULTS.iterations))
    .option("--warmup <n>", "iterations run first, left out", String(SETUP_DEFAULTS.warmup));
  const checked = addCheckOptions(
    cmd,
    "every byte written is a pattern of its object, write and offset; every object read back " +
      "is checked against it",
  );
  return addOutputOptions(addS3Options(checked)).action(async (planFile, o) => {
    const plan = await readPlan(resolvePath(planFile), planFile);
    const scale = Number(o.scale);
    if (!(scale > 0 && scale <= 1)) {
      throw new ConfigError("scale", `"${o.scale}" is not in (0, 1]`, "e.g. 0.01");
    }
    const specs = parseTierList(o.tiers);
    const timeoutMs = parseTimeout(o.timeout);
    if (o.activations && !plan.activations?.phases) {
      throw new InputError(
        planFile,
        "has no activation phases for --activations: write it again with `tierbench plan`",
      );
    }
    // the setup is checked now, before any I/O, naming the plan's fields
    setupOfPlan(plan, scale, Number(o.iterations), Number(o.warmup), planFile);
    await reportSession(o, async ({ runId, signal, progress }) => {
      const outcome = await replayPlan(plan, specs, {
        scale,
        activations: o.activations,
        source: planFile,
        iterations: Number(o.iterations),
        warmup: Number(o.warmup),
        signal,
        runId,
        onProgress: (p) => progress.updateWorkload("replay", p),
        s3: { endpoint: o.endpoint, region: o.region },
        timeoutMs,
        verify: o.verify,
        config: {
          command: "replay",
          plan: resolvePath(planFile),
          tiers: specs.map(formatTierSpec),
          scale,
          timeout_ms: timeoutMs,
          ...(o.verify ? { verify: true } : {}),
        },
      });
      // the comparison under the line, before the tables
      progress.stop();
      const r = outcome.doc.replay;
      if (r) console.log(formatReplay(r));
      return outcome;
    });
  });
}
