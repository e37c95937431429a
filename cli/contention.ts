/**
 * `tierbench contention`: each tier alone, in pairs and all together, and
 * each tier's slowdown when others run.
 *
 * ```sh
 * deno task tierbench contention --tiers memory:/dev/shm,file:/mnt/nvme
 * ```
 *
 * @module
 */

import { Command, Option } from "@commander-js/extra-typings";
import { formatTierSpec } from "../core/config.ts";
import {
  CONTENTION_DEFAULTS,
  CONTENTION_ENGINES,
  type ContentionOptions,
  runContentionSession,
} from "../bench/contention.ts";
import { CONCURRENCY_DEFAULTS, shorterTime } from "../bench/concurrency.ts";
import {
  addCheckOptions,
  addConcurrencyOptions,
  addMeasureOptions,
  addOutputOptions,
  addS3Options,
  bsOption,
  checkOutputTarget,
  iodepthOption,
  ioengineOption,
  outputFormatOption,
  rampOf,
} from "./_options.ts";
import { parseTierList } from "./_paths.ts";
import { reportSession } from "./_session.ts";
import { contentionAcross, launchedBy } from "./_cluster.ts";

/** The `contention` command. */
export function contentionCommand() {
  const cmd = new Command("contention")
    .description(
      "measure each tier alone, in pairs and all together (reads, then writes), then each " +
        "pair with one reading while the other writes, and report each tier's slowdown when others " +
        "run; then each tier's concurrency curves (1 … R processes at once)",
    )
    .requiredOption(
      "--tiers <specs>",
      "two tiers or more, comma-separated: memory:[DIR], file:DIR, pfs:DIR, s3://BUCKET[/PREFIX]",
    );
  const measured = addMeasureOptions(cmd, {
    runtime: ["measured time per group", CONTENTION_DEFAULTS.runtime],
    ramp: ["warm-up per group, excluded", CONTENTION_DEFAULTS.ramp],
    size: ["each tier's file (objects for s3)", CONTENTION_DEFAULTS.size],
  })
    .addOption(bsOption("block size of the sequential I/O").default(CONTENTION_DEFAULTS.bs))
    .addOption(
      iodepthOption("I/Os (requests for s3) in flight per tier").default(
        CONTENTION_DEFAULTS.iodepth,
      ),
    )
    .addOption(
      new Option("--engine <name>", "I/O engine of memory, file and pfs tiers")
        .choices(CONTENTION_ENGINES).default("libaio" as const),
    )
    .addOption(ioengineOption(CONTENTION_ENGINES));
  const checked = addCheckOptions(
    measured,
    "stamp every block written with a header and checksum, check every block read",
  );
  return addOutputOptions(
    addConcurrencyOptions(
      addS3Options(checked)
        .option("--no-mixed", "skip the mixed pairs (one tier reading while another writes)"),
    ),
  ).addOption(outputFormatOption()).action(async (o) => {
    checkOutputTarget(o);
    const tiers = parseTierList(o.tiers);
    const options: ContentionOptions = {
      runtime: o.runtime,
      ramp: rampOf(o),
      size: o.size,
      bs: o.bs,
      iodepth: o.iodepth,
      engine: o.ioengine ?? o.engine,
      endpoint: o.endpoint,
      region: o.region,
      mixed: o.mixed,
      timeout: o.timeout,
      verify: o.verify,
      concurrency: o.concurrency
        ? {
          ranksPerNode: o.ranksPerNode,
          processes: o.processes,
          bs: o.concurrencyBs,
          runtime: shorterTime(o.runtime, CONCURRENCY_DEFAULTS.runtime),
          ramp: shorterTime(o.ramp, CONCURRENCY_DEFAULTS.ramp),
        }
        : undefined,
    };
    const config = { command: "contention", tiers: tiers.map(formatTierSpec), ...options };
    const launch = launchedBy();
    if (launch) {
      // across processes, the matrix only: the curves are one node's own processes
      await contentionAcross(launch, tiers, { ...options, concurrency: undefined }, config, o);
      return;
    }
    await reportSession(o, ({ runId, signal, progress }) =>
      runContentionSession(
        tiers,
        { ...options, runId, signal, onProgress: (p) => progress.update(p) },
        config,
      ));
  });
}
