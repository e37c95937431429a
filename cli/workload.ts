/**
 * `tierbench workload`: a training workload's per-iteration I/O (optimizer,
 * activation or checkpoint state), one Worker per rank, on several tiers.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { DEFAULT_TIMEOUT_MS, formatTierSpec, parseTimeout } from "../core/config.ts";
import { type ClusterWorkloadOptions, runClusterWorkload } from "../bench/cluster_workload.ts";
import { runWorkload } from "../bench/workload.ts";
import type { WorkloadDefinition } from "../workloads/common.ts";
import { WORKLOAD_NAMES, workloadByName } from "../workloads/registry.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { EXIT_USAGE, fail } from "./_exit.ts";
import {
  addCheckOptions,
  addOutputOptions,
  addS3Options,
  addSetupOptions,
  bsOption,
  setupOf,
} from "./_options.ts";
import { parseTierList } from "./_paths.ts";
import { reportSession, type SessionContext } from "./_session.ts";
import { acrossProcesses, launchedBy } from "./_cluster.ts";
import {
  type FlagSource,
  optionsWithDeepSpeed,
  readDeepSpeedInputs,
  setupWithDeepSpeed,
} from "./_deepspeed.ts";
import {
  addStreamOptions,
  addWorkloadOnlyOptions,
  parseBackgroundRate,
  parseWorkloadOptions,
} from "./_workload_options.ts";

/** What sets a workload's size, for the full-disk hint. */
const SIZE_OPTION = "--scale";

/** The `workload` command's options, after parsing. */
type WorkloadFlags = ReturnType<ReturnType<typeof workloadOptions>["opts"]>;

/** The `workload` command with its argument and options and no action yet. */
function workloadOptions() {
  const cmd = new Command("workload")
    .description(
      "run a training workload (optimizer, activation or checkpoint I/O) on several tiers",
    )
    .argument("<name>", `one of ${WORKLOAD_NAMES.join(", ")}`)
    .requiredOption(
      "--tiers <specs>",
      "comma list: memory:DIR (host), file:DIR (node-local, one or more), pfs:DIR or s3://BUCKET (remote)",
    );
  // --bs here: commander types an option table's flags only once a chain has added to them
  const sized = addSetupOptions(cmd, "workload")
    .addOption(bsOption("request size on storage paths (default: the workload's)"));
  const tuned = addWorkloadOnlyOptions(addStreamOptions(sized));
  const checked = addCheckOptions(
    tuned,
    "every byte a rank writes is a pattern of its object, write and offset; every object read " +
      "back is checked against it, a mismatch named at its offset",
  );
  return addOutputOptions(addS3Options(checked));
}

/** The `workload` command. */
export function workloadCommand() {
  return workloadOptions().action(async (name, o, command) => {
    let def;
    try {
      def = workloadByName(name);
    } catch (e) {
      fail((e as Error).message, EXIT_USAGE);
    }
    const given = (flag: string) =>
      command.getOptionValueSource(flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()));
    await workload(name, def, o, given);
  });
}

/**
 * `workload`'s action once the name is known: the setup and options with a
 * DeepSpeed config's, the tiers, then the run, on this node or across the
 * launcher's processes.
 */
async function workload(
  name: string,
  def: WorkloadDefinition,
  o: WorkloadFlags,
  given: FlagSource,
): Promise<void> {
  const engine = o.ioengine ?? o.engine;
  const inputs = await readDeepSpeedInputs(name, o);
  const setup = resolveSetup(setupWithDeepSpeed(setupOf(o), inputs, given));
  const specs = parseTierList(o.tiers);
  const options = optionsWithDeepSpeed(parseWorkloadOptions(o), setup, inputs, given);
  const backgroundRate = parseBackgroundRate(o.backgroundRate);
  const timeoutMs = parseTimeout(o.timeout);
  const s3 = { endpoint: o.endpoint, region: o.region };
  const config = {
    command: "workload",
    workload: name,
    tiers: specs.map(formatTierSpec),
    // a user's tensor list is in the files it names, not repeated in every result
    setup: setup.tensors === undefined
      ? setup
      : { ...setup, tensors: { label: setup.tensors.label, count: setup.tensors.list.length } },
    options,
    engine,
    ...(backgroundRate === undefined ? {} : { background_rate: backgroundRate }),
    timeout_ms: timeoutMs,
    ...(o.verify ? { verify: true } : {}),
  };
  // one session's run options, the same on this node and across the launcher's processes
  const runOptions = ({ runId, signal, progress }: SessionContext): ClusterWorkloadOptions => ({
    signal,
    runId,
    onProgress: (p) => progress.updateWorkload(name, p),
    s3,
    config,
    engine,
    ...(backgroundRate === undefined ? {} : { backgroundRate }),
    timeoutMs,
    verify: o.verify,
  });
  const launch = launchedBy();
  if (launch) {
    // Each process is one node's share; the root writes the one document.
    await acrossProcesses(
      launch,
      { ...o, sizeOption: SIZE_OPTION },
      DEFAULT_TIMEOUT_MS,
      (session) =>
        runClusterWorkload(session.group, def, setup, specs, options, runOptions(session)),
    );
    return;
  }
  await reportSession(
    { ...o, sizeOption: SIZE_OPTION },
    (session) => runWorkload(def, setup, specs, options, runOptions(session)),
  );
}
