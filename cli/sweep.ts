/**
 * `tierbench sweep`: a grid of bs × iodepth × numjobs on each tier, the best
 * setting per tier and its DeepSpeed aio block.
 *
 * @module
 */

import { Command, Option } from "@commander-js/extra-typings";
import { formatTierSpec } from "../core/config.ts";
import { planSweep, runSweep, SWEEP_DEFAULTS, SWEEP_ENGINES } from "../bench/sweep.ts";
import { DEFAULT_DEEPSPEED_VERSION } from "../solver/export.ts";
import {
  addCheckOptions,
  addOutputOptions,
  addS3Options,
  checkOutputTarget,
  directOption,
  ioengineOption,
  outputFormatOption,
  rampOf,
  rampOption,
  rampTimeOption,
  runtimeOption,
  sizeOption,
} from "./_options.ts";
import { parseTierList } from "./_paths.ts";
import { reportSession } from "./_session.ts";

/** The `sweep` command's options, after parsing. */
type SweepFlags = ReturnType<ReturnType<typeof sweepOptions>["opts"]>;

/** The `sweep` command with its options and no action yet. */
function sweepOptions() {
  const cmd = new Command("sweep")
    .description(
      "run a grid of bs × iodepth × numjobs on each tier (fixed time or to steady state), " +
        "pick the best setting per tier and print its DeepSpeed aio block",
    )
    .option(
      "--tier <spec>",
      "tier to sweep (repeat it, or a comma list): file:DIR, memory:[DIR], pfs:DIR, s3://BUCKET[/PREFIX], null:",
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .option("--rw <modes>", "access pattern(s), comma list: read, write, randread, …", "read")
    .option("--bs <sizes>", "block sizes, comma list", SWEEP_DEFAULTS.bs)
    .option("--iodepth <list>", "I/Os in flight per job, comma list", SWEEP_DEFAULTS.iodepth)
    .option("--numjobs <list>", "parallel jobs, comma list", SWEEP_DEFAULTS.numjobs)
    .addOption(sizeOption("each job's file").default(SWEEP_DEFAULTS.size))
    .addOption(
      runtimeOption(
        `measured time per point (default ${SWEEP_DEFAULTS.runtime}); with --steady the most a point runs (default ${SWEEP_DEFAULTS.steadyRuntime})`,
      ),
    )
    .addOption(rampOption("warm-up per point, excluded").default(SWEEP_DEFAULTS.ramp))
    .addOption(rampTimeOption())
    .option(
      "--steady",
      "run each point until its bandwidth is steady (fio's bw_slope), at most --runtime",
    )
    .option(
      "--ss-limit <pct>",
      "steady when the bandwidth slope is at most this % of the mean per second",
      SWEEP_DEFAULTS.ssLimit,
    )
    .option(
      "--ss-dur <seconds>",
      "window of the slope test, in one-second samples",
      SWEEP_DEFAULTS.ssDur,
    )
    .addOption(
      directOption("O_DIRECT on file and pfs tiers (the default); also fio's --direct=1/0")
        .default(true),
    )
    .option(
      "--no-direct",
      "buffered I/O on file and pfs tiers (default O_DIRECT, as DeepSpeed's aio)",
    )
    .addOption(
      new Option("--engine <name>", "I/O engine of memory, file and pfs tiers")
        .choices(SWEEP_ENGINES).default("libaio" as const),
    )
    .addOption(ioengineOption(SWEEP_ENGINES))
    .option(
      "--deepspeed-version <v>",
      `DeepSpeed release x.y.z the aio block is written for (keys follow its version; default ${DEFAULT_DEEPSPEED_VERSION})`,
    );
  const checked = addCheckOptions(
    cmd,
    "stamp every block written with a header and checksum, check every block read",
  );
  return addOutputOptions(addS3Options(checked)).addOption(outputFormatOption());
}

/** The `sweep` command. */
export function sweepCommand() {
  return sweepOptions().action(sweep);
}

/** `sweep`'s action: plan the grid from the options, say what runs, run it and report. */
async function sweep(o: SweepFlags): Promise<void> {
  checkOutputTarget(o);
  const ramp = rampOf(o);
  const engine = o.ioengine ?? o.engine;
  const tiers = o.tier.flatMap((t) => parseTierList(t, "tier"));
  const plan = planSweep({
    tiers,
    rw: o.rw,
    bs: o.bs,
    iodepth: o.iodepth,
    numjobs: o.numjobs,
    size: o.size,
    runtime: o.runtime,
    ramp,
    steady: o.steady ?? false,
    ssLimit: o.ssLimit,
    ssDur: o.ssDur,
    direct: o.direct,
    engine,
    deepspeedVersion: o.deepspeedVersion,
    endpoint: o.endpoint,
    region: o.region,
    timeout: o.timeout,
    verify: o.verify,
  });
  const points = plan.groups.reduce((n, g) => n + g.jobs.length, 0);
  const announce = () => {
    if (o.quiet) return;
    console.error(
      `tierbench: sweeping ${points} points (${plan.groups.length} tier/pattern grids); ${plan.criterion}`,
    );
  };
  await reportSession(o, ({ runId, signal, progress }) =>
    runSweep(plan, {
      signal,
      runId,
      onProgress: (p, step) => progress.update(p, step),
      config: {
        command: "sweep",
        tiers: tiers.map(formatTierSpec),
        rw: o.rw,
        bs: o.bs,
        iodepth: o.iodepth,
        numjobs: o.numjobs,
        size: o.size,
        ramp,
        runtime: o.runtime ?? null,
        steady: o.steady ?? false,
        ss_limit_pct: plan.ssLimitPct,
        ss_samples: plan.ssSamples,
        direct: o.direct,
        engine,
        deepspeed_version: plan.deepspeedVersion,
        criterion: plan.criterion,
        timeout: o.timeout,
        ...(o.verify ? { verify: true } : {}),
      },
    }), announce);
}
