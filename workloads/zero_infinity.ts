/**
 * `zero-infinity`: DeepSpeed ZeRO-3 with the optimizer offloaded to NVMe, the
 * baseline every offloading paper measures against, as DeepSpeed v0.14.5's
 * code runs it and as strace recordings of it show (docs/workloads.md cites
 * the source line of each rule).
 *
 * The model is laid out as ZeRO-3 lays it out ({@linkcode zero3Layout}):
 * whole parameter partitions form the optimizer subgroups; each swapped
 * subgroup has one file per state (`0_51.tensor.swp` for the fp32 params,
 * `exp_avg-0_51.tensor.swp`, `exp_avg_sq-0_51.tensor.swp`) and one file per
 * large gradient partition (`0_51_gradient_0_1048576.tensor.swp`), under
 * `zero_stage_3/optimizer/rank{r}/`; swaps are padded to 1 KiB × threads.
 *
 * Per rank and iteration:
 * - **forward**: the forward pass (think time); with `offload_param` on
 *   NVMe, module by module, each reading its parameters first.
 * - **backward**: the backward pass in reverse registration order (with
 *   parameter offload, each module reading its parameters first).
 *   Gradients join a reduce bucket; a full bucket, and the end of backward,
 *   hand their gradient partitions, by ds_id, to the gradient swapper:
 *   `buffer_count` buffers of the largest subgroup's size, filled in turn; a
 *   full one goes out, and with none free backward waits for every write.
 * - **update**, subgroups ascending: the last gradient buffer goes out and is
 *   waited for; then, with the serial swapper (one aio handle: one stream),
 *   read params, m, v, wait, read the gradients, wait, Adam, write, wait;
 *   with the pipelined one (a read and a write handle), read(i+1) once
 *   read(i) is done and write(i) once write(i−1) is done, as
 *   pipeline_read/pipeline_write say. The first iteration reads no m or v
 *   (the optimizer has none yet) and writes them padded.
 *
 * aio: 1 MiB blocks, depth 8, 1 thread unless the options or the DeepSpeed
 * config say otherwise; with T threads each swap is cut into T slices.
 *
 * The phases are exported ({@linkcode zeroInfinityBackward},
 * {@linkcode zeroInfinityUpdate}) for `datastates` and
 * `deepspeed-checkpoint`, which run them under their checkpoints.
 *
 * @module
 */

import {
  DEEPSPEED_BS,
  DEEPSPEED_IODEPTH,
  requirePath,
  storagePath,
  totalIterations,
  type WorkloadDefinition,
  type WorkloadOptions,
  type WorkloadPaths,
} from "./common.ts";
import { DEEPSPEED_DEFAULTS } from "./deepspeed_config.ts";
import { type PathPolicy, ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import { alignedElements, shardParameters, type TrainingSetup } from "./setup.ts";

export { checkedLayout, optimizerFolder, paramBytes, paramObject };
import {
  optimizerFolder,
  paramBytes,
  paramObject,
  settingError,
  type Zero3Layout,
  zero3Layout,
  type Zero3Settings,
} from "./zero3.ts";
import { buildRank } from "./_zero_infinity_ops.ts";
import { checkedLayout } from "./_zero_infinity_buffers.ts";

/** States of a subgroup swapped in the update and written back, in order (labels). */
export const ZERO_INFINITY_WRITES = ["params", "m", "v"] as const;
/** States read in the update, in order (`grad`: the subgroup's gradient files). */
export const ZERO_INFINITY_READS = ["params", "m", "v", "grad"] as const;
/** DeepSpeed's offload_optimizer.buffer_count (offload_config.py). */
export const DEEPSPEED_DEFAULT_BUFFER_COUNT = DEEPSPEED_DEFAULTS.bufferCount;
/** DeepSpeed's aio thread_count (swap_tensor/constants.py). */
export const DEEPSPEED_THREADS = DEEPSPEED_DEFAULTS.threadCount;

/** zero-infinity's knobs, resolved. */
export type ZeroInfinitySettings = Zero3Settings;

/**
 * The settings `options` give, checked, DeepSpeed's defaults filled in: the
 * DeepSpeed config (`options.deepspeed`) where given, else the flags.
 *
 * @example
 * ```ts
 * import { zeroInfinitySettings } from "./zero_infinity.ts";
 * const s = zeroInfinitySettings({ pipeline: true });
 * console.assert(s.pipelineRead && s.pipelineWrite && s.bufferCount === 4 && s.threads === 1);
 * ```
 */
export function zeroInfinitySettings(options: WorkloadOptions = {}): ZeroInfinitySettings {
  const ds = options.deepspeed;
  const source = ds?.source;
  const threads = options.threads ?? ds?.aio.threadCount ?? DEEPSPEED_THREADS;
  const bufferCount = options.bufferCount ?? ds?.bufferCount ?? DEEPSPEED_DEFAULT_BUFFER_COUNT;
  const at = (flag: string, key: string, n: number, min: number) => {
    if (!Number.isInteger(n) || n < min) {
      throw settingError({ source }, flag, key, `${n} is not an integer ≥ ${min}`);
    }
  };
  at("threads", "aio.thread_count", threads, 1);
  at("buffer-count", "zero_optimization.offload_optimizer.buffer_count", bufferCount, 1);
  const pipelineRead = options.pipeline ?? ds?.pipelineRead ?? false;
  const pipelineWrite = options.pipeline ?? ds?.pipelineWrite ?? false;
  const op = ds?.offloadParam;
  return {
    pipeline: pipelineRead || pipelineWrite,
    pipelineRead,
    pipelineWrite,
    threads,
    bufferCount,
    blockSize: options.bs ?? ds?.aio.blockSize ?? DEEPSPEED_BS,
    queueDepth: options.iodepth ?? ds?.aio.queueDepth ?? DEEPSPEED_IODEPTH,
    singleSubmit: ds?.aio.singleSubmit ?? false,
    overlapEvents: ds?.aio.overlapEvents ?? true,
    reduceBucketSize: ds?.reduceBucketSize ?? DEEPSPEED_DEFAULTS.reduceBucketSize,
    sortBucket: ds === undefined || ds.reduceScatter || !ds.contiguousGradients,
    gradientAccumulation: ds?.gradientAccumulationSteps ?? 1,
    states: ds?.optimizerStates ?? ["exp_avg", "exp_avg_sq"],
    offloadParam: op === undefined ? undefined : { ...op, elementBytes: ds!.modelElementBytes },
    source,
  };
}

/** One gradient file of a subgroup: one parameter partition's aligned part. */
export interface GradientFile {
  /** Object name: DeepSpeed's file under `zero_stage_3/optimizer/rank{r}/`. */
  readonly object: string;
  /** Full-size elements. */
  readonly elements: number;
  /** Bytes (scaled). */
  readonly bytes: number;
}

/** One subgroup as DeepSpeed's swapper sees it. */
export interface SwapSubgroup {
  readonly index: number;
  /** Elements of the subgroup (its partitions' sum). */
  readonly elements: number;
  /** Parameter partitions in it. */
  readonly partitions: number;
  /** Elements of each state swap, padded to the alignment. */
  readonly swapElements: number;
  /** Whether its states go to storage (false: smaller than max(1 MiB, block_size)). */
  readonly swapped: boolean;
  /** Bytes of one state's padded swap (0 when not swapped). */
  readonly stateBytes: number;
  /** Gradient files, in the order the update reads them (none when not swapped). */
  readonly gradients: readonly GradientFile[];
  /** Gradient pieces kept in host memory: small partitions and alignment remainders. */
  readonly gradientsInMemory: number;
}

/** What {@linkcode swapLayout} needs of the settings. */
export interface SwapLayoutSettings {
  readonly threads: number;
  readonly blockSize: number;
  readonly bufferCount?: number;
  readonly pipeline?: boolean;
}

/** The layout of `setup` under full zero-infinity settings (or the few a caller gives). */
export function zeroInfinityLayout(
  setup: TrainingSetup,
  settings: ZeroInfinitySettings | SwapLayoutSettings,
): Zero3Layout {
  const full = "states" in settings ? settings : {
    ...zeroInfinitySettings(),
    threads: settings.threads,
    blockSize: settings.blockSize,
    bufferCount: settings.bufferCount ?? DEEPSPEED_DEFAULT_BUFFER_COUNT,
  };
  return zero3Layout(setup, full);
}

/**
 * A rank's subgroups as DeepSpeed's optimizer swapper handles them: grouping,
 * padding, which states and gradients are swapped.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "./setup.ts";
 * import { swapLayout, zeroInfinitySettings } from "./zero_infinity.ts";
 * const layout = swapLayout(resolveSetup({ model: "70b" }), zeroInfinitySettings());
 * console.assert(layout.every((sg) => sg.swapElements % 256 === 0));
 * ```
 */
export function swapLayout(
  setup: TrainingSetup,
  settings: ZeroInfinitySettings | SwapLayoutSettings,
): SwapSubgroup[] {
  return zeroInfinityLayout(setup, settings).subgroups.map((sg) => ({
    index: sg.index,
    elements: sg.elements,
    partitions: sg.params.length,
    swapElements: sg.swapElements,
    swapped: sg.swapped,
    stateBytes: sg.stateBytes,
    gradients: sg.gradients.map((g) => ({
      object: `${optimizerFolder(0)}/${g.file}`,
      elements: g.length,
      bytes: g.bytes,
    })),
    gradientsInMemory: sg.gradientsInMemory,
  }));
}

/**
 * Builds the zero-infinity programs.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "./setup.ts";
 * import { zeroInfinity } from "./zero_infinity.ts";
 * const p = zeroInfinity.build(resolveSetup({ model: "7b", scale: 0.001 }), { local: ["local"] });
 * console.assert(p.ranks.length === 4);
 * ```
 */
export const zeroInfinity: WorkloadDefinition = {
  name: "zero-infinity",
  summary:
    "DeepSpeed ZeRO-Infinity: gradients out per reduce bucket, subgroups swapped in order in update",
  needs: ["local"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const local = requirePath("zero-infinity", "local", paths);
    const settings = zeroInfinitySettings(options);
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      const b = new ProgramBuilder(r);
      zeroInfinityInitial(b, setup, local, options);
      let last: number | undefined;
      for (let it = 0; it < totalIterations(setup); it++) {
        last = zeroInfinityBackward(b, setup, local, it, [last], options);
        last = zeroInfinityUpdate(b, setup, local, it, [last], options);
      }
      ranks.push(b.build());
    }
    return {
      workload: "zero-infinity",
      paths: [zeroInfinityPath(local, options, settings)],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: zeroInfinityDerived(setup, options),
      notes: zeroInfinityNotes(setup, settings),
    };
  },
};

/** The local path's policy: DeepSpeed's aio block, depth and threads. */
export function zeroInfinityPath(
  local: string,
  options: WorkloadOptions,
  settings: ZeroInfinitySettings = zeroInfinitySettings(options),
): PathPolicy {
  return storagePath(local, "local", {
    ...options,
    bs: settings.blockSize,
    iodepth: settings.queueDepth,
    threads: settings.threads,
  });
}

function zeroInfinityNotes(setup: TrainingSetup, s: ZeroInfinitySettings): string[] {
  const notes = [
    setup.tensors === undefined
      ? "subgroups: whole parameter partitions of a GPT-style model accumulated to ≥ sub_group_size, one optimizer parameter group"
      : `subgroups: whole parameter partitions of ${setup.tensors.label} (its tensor list) accumulated to ≥ sub_group_size, one optimizer parameter group`,
    "the initialization's I/O (the fp32 partitions written, read and written again) is laid out unmeasured as one write",
  ];
  if (s.singleSubmit || !s.overlapEvents) {
    notes.push(
      "aio single_submit/overlap_events shape the exported trace's io_submit calls; the executor submits as its engine does",
    );
  }
  if (s.offloadParam !== undefined) {
    notes.push(
      "offload_param: parameters are read module by module on demand; DeepSpeed's NVMe prefetch from the second step on is not modelled",
    );
  }
  return notes;
}

/**
 * Notes zero-infinity's swap files, which exist before the first op: the
 * fp32 partition of every swapped subgroup (written at initialization) and,
 * with parameter offload, every parameter read from NVMe.
 */
export function zeroInfinityInitial(
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  options: WorkloadOptions = {},
): void {
  const settings = zeroInfinitySettings(options);
  const layout = checkedLayout(setup, settings);
  for (const sg of layout.subgroups) {
    if (sg.swapped) {
      b.initial(local, `${optimizerFolder(b.rank)}/${sg.id}.tensor.swp`, sg.stateBytes);
    }
  }
  for (const p of layout.params) {
    if (p.onNvme) {
      b.initial(local, paramObject(b.rank, settings, p.id), paramBytes(setup, settings, p));
    }
  }
}

/** What zero-infinity derives from the setup, per rank. */
export function zeroInfinityDerived(
  setup: TrainingSetup,
  options: WorkloadOptions = {},
): Record<string, number | string | boolean> {
  const settings = zeroInfinitySettings(options);
  const layout = checkedLayout(setup, settings);
  const subgroups = layout.subgroups;
  const swapped = subgroups.filter((sg) => sg.swapped);
  const grads = swapped.reduce((t, sg) => t + sg.gradients.reduce((u, g) => u + g.bytes, 0), 0);
  const states = swapped.reduce((t, sg) => t + sg.stateBytes, 0);
  const k = 1 + settings.states.length;
  const nvmeParams = layout.params.filter((p) => p.onNvme);
  const paramIo = nvmeParams.reduce((t, p) => t + paramBytes(setup, settings, p), 0);
  const swappableParams = layout.params.filter((p) => p.swappable);
  return {
    shard_parameters: shardParameters(setup),
    subgroups_per_rank: subgroups.length,
    subgroup_grouping: "whole parameter partitions accumulated to >= sub_group_size (stage3.py)",
    subgroup_elements_min: Math.min(...subgroups.map((sg) => sg.elements)),
    subgroup_elements_max: Math.max(...subgroups.map((sg) => sg.elements)),
    subgroups_in_host_memory: subgroups.length - swapped.length,
    swap_alignment_elements: alignedElements(1, setup.bytesPerState, settings.threads),
    gradient_files_per_rank: swapped.reduce((t, sg) => t + sg.gradients.length, 0),
    gradient_pieces_in_host_memory: subgroups.reduce((t, sg) => t + sg.gradientsInMemory, 0),
    reduce_bucket_flushes: layout.flushes.length,
    gradient_buffers: settings.bufferCount,
    pipeline: settings.pipeline,
    pipeline_read: settings.pipelineRead,
    pipeline_write: settings.pipelineWrite,
    threads: settings.threads,
    gradient_accumulation_steps: settings.gradientAccumulation,
    update_read_bytes_per_rank: k * states + grads,
    update_write_bytes_per_rank: k * states,
    first_update_read_bytes_per_rank: states + grads,
    gradient_write_bytes_per_rank: grads,
    ...(settings.offloadParam === undefined ? {} : {
      params_on_nvme_per_rank: nvmeParams.length,
      param_read_bytes_per_rank: 2 * settings.gradientAccumulation * paramIo,
      param_write_bytes_per_rank: paramIo,
    }),
    nvme_files_left_per_rank: k * swapped.length +
      swapped.reduce((t, sg) => t + sg.gradients.length, 0) + swappableParams.length,
    nvme_bytes_left_per_rank: k * states + grads +
      swappableParams.reduce((t, p) => t + paramBytes(setup, settings, p), 0),
  };
}

/**
 * Adds one phase of zero-infinity's iteration `it` to a rank program on the
 * `local` path, its barrier waiting for `after` (by default the last held op
 * of every stream), with the workload's `options`; returns an op id.
 */
export type ZeroInfinityPhase = (
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  it: number,
  after?: readonly (number | undefined)[],
  options?: WorkloadOptions,
) => number;

/**
 * Adds zero-infinity's forward and backward phases of iteration `it` (see
 * the module documentation). The forward phase's barrier waits for `after`,
 * by default for the last held op of every stream. Returns the id of the
 * backward pass's last compute op: gradient writes may still be in flight
 * (the update waits for them before its first read).
 */
export const zeroInfinityBackward: ZeroInfinityPhase = (b, setup, local, it, after, options) =>
  buildRank(b, setup, local, zeroInfinitySettings(options)).backward(it, after);

/**
 * Adds zero-infinity's update phase of iteration `it`: the last gradient
 * buffer out, then subgroups in ascending order on `local`, serial or
 * pipelined (see the module documentation). Its barrier waits for `after`,
 * by default for the last held op of every stream. Returns the id of the
 * phase's last op, which ends after every other op of the phase.
 *
 * @example
 * ```ts
 * import { ProgramBuilder } from "./ops.ts";
 * import { resolveSetup } from "./setup.ts";
 * import { zeroInfinityBackward, zeroInfinityUpdate } from "./zero_infinity.ts";
 * const setup = resolveSetup({ model: "7b", scale: 0.001 });
 * const b = new ProgramBuilder(0);
 * const grads = zeroInfinityBackward(b, setup, "local", 0);
 * const last = zeroInfinityUpdate(b, setup, "local", 0, [grads]);
 * console.assert(b.build().ops[last]!.object!.includes("exp_avg_sq-"));
 * ```
 */
export const zeroInfinityUpdate: ZeroInfinityPhase = (b, setup, local, it, after, options) =>
  buildRank(b, setup, local, zeroInfinitySettings(options)).update(it, after);
