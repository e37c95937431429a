/**
 * `workload`'s options, past the setup's, and their parsing: numbers
 * checked, sizes parsed, each fault named by its option.
 *
 * @module
 */

import { type Command, Option, type OptionValues } from "@commander-js/extra-typings";
import { ConfigError } from "../core/errors.ts";
import { badSize, parseSize } from "../core/units.ts";
import { STREAM_ENGINES } from "../bench/workload.ts";
import type { WorkloadOptions } from "../workloads/common.ts";
import { iodepthOption, ioengineOption, parseInteger } from "./_options.ts";

/**
 * The options of the streams after `--bs`: their depth, engine, the node-wide
 * read and write limits, the swapper's pipeline, threads and buffers, and
 * mlp-offload's remote share, locks and caches.
 */
export function addStreamOptions<
  A extends unknown[],
  O extends OptionValues,
  G extends OptionValues,
>(cmd: Command<A, O, G>) {
  return cmd
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
    );
}

/**
 * The options one workload or two read: deep-optimizer-states' stride, the
 * activations' prefetch, the checkpoints' cadence, cache and flush, a user's
 * model tensors and DeepSpeed config, and the background I/O's rate.
 */
export function addWorkloadOnlyOptions<
  A extends unknown[],
  O extends OptionValues,
  G extends OptionValues,
>(cmd: Command<A, O, G>) {
  return cmd
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
}

/** The options {@linkcode parseWorkloadOptions} reads, as commander gives them. */
interface WorkloadFlags {
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
}

/** Workload options from the CLI: numbers checked, sizes parsed. */
export function parseWorkloadOptions(o: WorkloadFlags): WorkloadOptions {
  const out: Record<string, number | boolean | string> = {};
  if (o.bs !== undefined) out.bs = parseStreamBs(o.bs);
  const int = (flag: string, key: string, v: string | undefined, min: number) => {
    if (v !== undefined) out[key] = parseInteger(flag, v, min);
  };
  int("iodepth", "iodepth", o.iodepth, 1);
  int("readers", "readers", o.readers, 0);
  int("writers", "writers", o.writers, 0);
  int("cache-subgroups", "cacheSubgroups", o.cacheSubgroups, 0);
  int("remote-cache-subgroups", "remoteCacheSubgroups", o.remoteCacheSubgroups, 0);
  int("stride", "stride", o.stride, 1);
  int("prefetch", "prefetch", o.prefetch, 1);
  int("checkpoint-every", "checkpointEvery", o.checkpointEvery, 1);
  if (o.hostCacheSize !== undefined) out.hostCacheBytes = parseHostCacheSize(o.hostCacheSize);
  if (o.offloadOptimizer) out.offloadOptimizer = true;
  int("buffer-count", "bufferCount", o.bufferCount, 1);
  int("threads", "threads", o.threads, 1);
  if (o.pipeline) out.pipeline = true;
  if (o.locks !== undefined) out.locks = o.locks;
  if (o.lockScope !== undefined) out.lockScope = o.lockScope;
  if (o.snapshotBlocking !== undefined) out.snapshotBlocking = o.snapshotBlocking;
  if (o.flushMode !== undefined) out.flushMode = o.flushMode;
  if (o.checkpointSubgroupSize !== undefined) {
    out.checkpointSubgroupSize = parseCheckpointSubgroupSize(o.checkpointSubgroupSize);
  }
  if (o.remoteRatio !== undefined) out.distOptRatio = parseRemoteRatio(o.remoteRatio);
  return out as WorkloadOptions;
}

/** `--bs`: a size of whole 4 KiB blocks, in bytes. */
function parseStreamBs(v: string): number {
  const bs = parseSize(v);
  if (bs === undefined || bs < 4096 || bs % 4096 !== 0) {
    throw new ConfigError(
      "bs",
      badSize(v, "a size of whole 4 KiB blocks"),
      "e.g. 128k, 1m, 2m",
    );
  }
  return bs;
}

/** `--host-cache-size`: a size above zero, in bytes. */
function parseHostCacheSize(v: string): number {
  const size = parseSize(v);
  if (size === undefined || size <= 0) {
    throw new ConfigError(
      "host-cache-size",
      badSize(v),
      "e.g. 4g, 512m",
    );
  }
  return size;
}

/** `--checkpoint-subgroup-size`: elements, an integer ≥ 1. */
function parseCheckpointSubgroupSize(v: string): number {
  return parseInteger(
    "checkpoint-subgroup-size",
    v,
    1,
    "elements, e.g. 1e9 (DeepSpeed's sub_group_size)",
  );
}

/**
 * `--remote-ratio`: the fork's dist_opt_ratio, an integer K, subgroup i
 * remote when i % K == 0; a share (the option's old meaning) is refused with
 * the K that comes closest.
 */
function parseRemoteRatio(v: string): number {
  const r = Number(v);
  if (r > 0 && r < 1) {
    throw new ConfigError(
      "remote-ratio",
      `"${v}" is a share, and --remote-ratio is now MLP-Offload's integer ` +
        `dist_opt_ratio K (subgroup i is remote when i % K == 0): for about ${v} use ${
          Math.round(1 / r)
        }`,
      "an integer ≥ 0, e.g. 3 for one in three; 0 for none",
    );
  }
  return parseInteger("remote-ratio", v, 0, "e.g. 3 for one in three; 0 for none");
}

/** `--background-rate`: bytes/s (size suffixes, an optional `/s`), or undefined when not given. */
export function parseBackgroundRate(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const perSecond = v.replace(/\/s$/i, "");
  const n = parseSize(perSecond);
  if (n === undefined || n < 1) {
    throw new ConfigError(
      "background-rate",
      badSize(v, "a rate in bytes/s", perSecond),
      "a size per second, e.g. 50m or 1g/s",
    );
  }
  return n;
}
