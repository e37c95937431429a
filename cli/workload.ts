/**
 * `tierbench workload`: a training workload's per-iteration I/O (optimizer,
 * activation or checkpoint state), one Worker per rank, on several tiers.
 *
 * @module
 */

import { Command, Option } from "@commander-js/extra-typings";
import { DEFAULT_TIMEOUT_MS, formatTierSpec, parseTimeout } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { parseSize } from "../core/units.ts";
import { runClusterWorkload } from "../bench/cluster_workload.ts";
import { runWorkload, STREAM_ENGINES } from "../bench/workload.ts";
import type { WorkloadOptions } from "../workloads/common.ts";
import { WORKLOAD_NAMES, workloadByName } from "../workloads/registry.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { EXIT_USAGE, fail } from "./_exit.ts";
import {
  addCheckOptions,
  addOutputOptions,
  addS3Options,
  addSetupOptions,
  bsOption,
  iodepthOption,
  ioengineOption,
  setupOf,
} from "./_options.ts";
import { parseTierList } from "./_paths.ts";
import { reportSession } from "./_session.ts";
import { acrossProcesses, launchedBy } from "./_cluster.ts";
import { optionsWithDeepSpeed, readDeepSpeedInputs, setupWithDeepSpeed } from "./_deepspeed.ts";

/** Workload options from the CLI: numbers checked, sizes parsed. */
function parseWorkloadOptions(o: {
  bs?: string | undefined;
  iodepth?: string | undefined;
  readers?: string | undefined;
  writers?: string | undefined;
  remoteRatio?: string | undefined;
  cacheSubgroups?: string | undefined;
  remoteCacheSubgroups?: string | undefined;
  stride?: string | undefined;
  prefetch?: string | undefined;
  checkpointEvery?: string | undefined;
  hostCacheSize?: string | undefined;
  offloadOptimizer?: boolean | undefined;
  bufferCount?: string | undefined;
  threads?: string | undefined;
  pipeline?: boolean | undefined;
  locks?: "remote" | "both" | "none" | undefined;
  lockScope?: "wait-issue" | "transfer" | undefined;
  snapshotBlocking?: "copy" | "none" | undefined;
  flushMode?: "ofstream" | "pwrite-fsync" | undefined;
  checkpointSubgroupSize?: string | undefined;
}): WorkloadOptions {
  const out: Record<string, number | boolean | string> = {};
  if (o.bs !== undefined) {
    const bs = parseSize(o.bs);
    if (bs === undefined || bs < 4096 || bs % 4096 !== 0) {
      throw new ConfigError(
        "bs",
        `"${o.bs}" is not a size of whole 4 KiB blocks`,
        "e.g. 128k, 1m, 2m",
      );
    }
    out.bs = bs;
  }
  const int = (flag: string, key: string, v: string | undefined, min: number) => {
    if (v === undefined) return;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) {
      throw new ConfigError(flag, `"${v}" is not an integer ≥ ${min}`);
    }
    out[key] = n;
  };
  int("iodepth", "iodepth", o.iodepth, 1);
  int("readers", "readers", o.readers, 0);
  int("writers", "writers", o.writers, 0);
  int("cache-subgroups", "cacheSubgroups", o.cacheSubgroups, 0);
  int("remote-cache-subgroups", "remoteCacheSubgroups", o.remoteCacheSubgroups, 0);
  int("stride", "stride", o.stride, 1);
  int("prefetch", "prefetch", o.prefetch, 1);
  int("checkpoint-every", "checkpointEvery", o.checkpointEvery, 1);
  if (o.hostCacheSize !== undefined) {
    const size = parseSize(o.hostCacheSize);
    if (size === undefined || size <= 0) {
      throw new ConfigError(
        "host-cache-size",
        `"${o.hostCacheSize}" is not a size`,
        "e.g. 4g, 512m",
      );
    }
    out.hostCacheBytes = size;
  }
  if (o.offloadOptimizer) out.offloadOptimizer = true;
  int("buffer-count", "bufferCount", o.bufferCount, 1);
  int("threads", "threads", o.threads, 1);
  if (o.pipeline) out.pipeline = true;
  if (o.locks !== undefined) out.locks = o.locks;
  if (o.lockScope !== undefined) out.lockScope = o.lockScope;
  if (o.snapshotBlocking !== undefined) out.snapshotBlocking = o.snapshotBlocking;
  if (o.flushMode !== undefined) out.flushMode = o.flushMode;
  if (o.checkpointSubgroupSize !== undefined) {
    const n = Number(o.checkpointSubgroupSize);
    if (!Number.isInteger(n) || n < 1) {
      throw new ConfigError(
        "checkpoint-subgroup-size",
        `"${o.checkpointSubgroupSize}" is not an integer ≥ 1`,
        "elements, e.g. 1e9 (DeepSpeed's sub_group_size)",
      );
    }
    out.checkpointSubgroupSize = n;
  }
  if (o.remoteRatio !== undefined) {
    // the fork's dist_opt_ratio: an integer K, subgroup i remote when i % K == 0
    const r = Number(o.remoteRatio);
    if (Number.isInteger(r) && r >= 0) out.distOptRatio = r;
    else if (r > 0 && r < 1) {
      throw new ConfigError(
        "remote-ratio",
        `"${o.remoteRatio}" is a share, and --remote-ratio is now MLP-Offload's integer ` +
          `dist_opt_ratio K (subgroup i is remote when i % K == 0): for about ${o.remoteRatio} use ${
            Math.round(1 / r)
          }`,
        "an integer ≥ 0, e.g. 3 for one in three; 0 for none",
      );
    } else {
      throw new ConfigError(
        "remote-ratio",
        `"${o.remoteRatio}" is not an integer ≥ 0`,
        "e.g. 3 for one in three; 0 for none",
      );
    }
  }
  return out as WorkloadOptions;
}

/** `--background-rate`: bytes/s (size suffixes, an optional `/s`), or undefined when not given. */
function parseBackgroundRate(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = parseSize(v.replace(/\/s$/i, ""));
  if (n === undefined || n < 1) {
    throw new ConfigError(
      "background-rate",
      `"${v}" is not a rate in bytes/s`,
      "a size per second, e.g. 50m or 1g/s",
    );
  }
  return n;
}

/** The `workload` command. */
export function workloadCommand() {
  const cmd = new Command("workload")
    .description(
      "run a training workload (optimizer, activation or checkpoint I/O) on several tiers",
    )
    .argument("<name>", `one of ${WORKLOAD_NAMES.join(", ")}`)
    .requiredOption(
      "--tiers <specs>",
      "comma list: memory:DIR (host), file:DIR (node-local, one or more), pfs:DIR or s3://BUCKET (remote)",
    );
  const tuned = addSetupOptions(cmd, "workload")
    .addOption(bsOption("request size on storage paths (default: the workload's)"))
    .addOption(iodepthOption("requests in flight per stream (default: the workload's)"))
    .addOption(
      new Option("--engine <name>", "I/O engine of the streams on memory, file and pfs paths")
        .choices(STREAM_ENGINES).default("libaio" as const),
    )
    .addOption(ioengineOption(STREAM_ENGINES))
    .option(
      "--readers <n>",
      "node-wide: at most n ranks read a storage path at once, 0 for no limit (default: no limit)",
    )
    .option(
      "--writers <n>",
      "node-wide: at most n ranks write a storage path at once, 0 for no limit (default: no limit)",
    )
    .option("--pipeline", "zero-infinity: DeepSpeed's pipelined swapper (default: serial)")
    .option(
      "--threads <n>",
      "aio intra_op_parallelism: each swap in n slices on their own contexts (zero-infinity 1, mlp-offload 4)",
    )
    .option(
      "--buffer-count <n>",
      "offload_optimizer.buffer_count: zero-infinity's gradient buffers (4); mlp-offload caches n // 3 subgroups per path (25)",
    )
    .option(
      "--remote-ratio <k>",
      "mlp-offload: dist_opt_ratio K, subgroup i on the remote path when i % K == 0 (3; 0 for none)",
    )
    .addOption(
      new Option(
        "--locks <paths>",
        "mlp-offload: paths whose subgroups take the node-wide read and write locks (default: remote)",
      ).choices(["remote", "both", "none"] as const),
    )
    .addOption(
      new Option(
        "--lock-scope <scope>",
        "mlp-offload: a lock covers waiting for one transfer and issuing the next (wait-issue, default) or a whole transfer (transfer)",
      ).choices(["wait-issue", "transfer"] as const),
    )
    .option(
      "--cache-subgroups <n>",
      "mlp-offload: subgroups per path kept in host memory (default: --buffer-count // 3)",
    )
    .option(
      "--remote-cache-subgroups <n>",
      "mlp-offload: subgroups of the remote path kept in host memory (default: --cache-subgroups)",
    )
    .option("--stride <k>", "deep-optimizer-states: every K-th subgroup updates on the device")
    .option("--prefetch <n>", "ssdtrain, teraio: layers read ahead in backward")
    .option(
      "--checkpoint-every <n>",
      "datastates, deepspeed-checkpoint: checkpoint every N iterations",
    )
    .option(
      "--host-cache-size <size>",
      "datastates: pinned host ring buffer per rank, before --scale (default: one checkpoint of the rank)",
    )
    .addOption(
      new Option(
        "--snapshot-blocking <mode>",
        "datastates: training waits for the GPU→host copies (copy, default: DataStates-LLM's DeepSpeed fork) or never (none: DeepSpeed master's engine)",
      ).choices(["copy", "none"] as const),
    )
    .addOption(
      new Option(
        "--flush-mode <mode>",
        "datastates: each tensor written buffered (ofstream, default: datastates-llm 32960317) or with an fsync after it (pwrite-fsync: the engine DeepSpeed master imports)",
      ).choices(["ofstream", "pwrite-fsync"] as const),
    )
    .option(
      "--checkpoint-subgroup-size <n>",
      "datastates: elements of DeepSpeed's subgroups, whose m, v and params are the checkpoint's tensors (default 1e9, DeepSpeed's; with --offload-optimizer --subgroup-size)",
    )
    .option(
      "--offload-optimizer",
      "datastates: run it on zero-infinity's optimizer offload to file: (DataStates-LLM itself refuses offload_optimizer)",
    )
    .option(
      "--model-tensors <file>",
      "zero-infinity, deepspeed-checkpoint: your model's parameters (name, shape) in registration order, JSON (docs/workloads.md has the PyTorch lines that write it)",
    )
    .option(
      "--deepspeed-config <file>",
      "zero-infinity, deepspeed-checkpoint: a DeepSpeed config file; its zero_optimization, aio, fp16/bf16 and batch sizes drive the workload, refused where DeepSpeed refuses it",
    )
    .option(
      "--background-rate <size/s>",
      "each rank moves the background I/O (datastates' lazy flush) to each path at this many " +
        "bytes/s (k, m, g), each request at its intended start (open loop); default: as fast " +
        "as the tier allows",
    );
  const checked = addCheckOptions(
    tuned,
    "every byte a rank writes is a pattern of its object, write and offset; every object read " +
      "back is checked against it, a mismatch named at its offset",
  );
  return addOutputOptions(addS3Options(checked)).action(async (name, o, command) => {
    let def;
    try {
      def = workloadByName(name);
    } catch (e) {
      fail((e as Error).message, EXIT_USAGE);
    }
    const engine = o.ioengine ?? o.engine;
    const inputs = await readDeepSpeedInputs(name, o);
    const given = (flag: string) =>
      command.getOptionValueSource(flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()));
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
    const paced = {
      ...(backgroundRate === undefined ? {} : { backgroundRate }),
      timeoutMs,
      verify: o.verify,
    };
    const launch = launchedBy();
    if (launch) {
      // Each process is one node's share; the root writes the one document.
      await acrossProcesses(
        launch,
        o,
        DEFAULT_TIMEOUT_MS,
        ({ group, runId, signal, progress }) =>
          runClusterWorkload(group, def, setup, specs, options, {
            signal,
            runId,
            onProgress: (p) => progress.updateWorkload(name, p),
            s3,
            config,
            engine,
            ...paced,
          }),
      );
      return;
    }
    await reportSession(
      o,
      ({ runId, signal, progress }) =>
        runWorkload(def, setup, specs, options, {
          signal,
          runId,
          onProgress: (p) => progress.updateWorkload(name, p),
          s3,
          config,
          engine,
          ...paced,
        }),
    );
  });
}
