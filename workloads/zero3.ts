/**
 * A model as DeepSpeed's ZeRO-3 lays it out on NVMe, per rank: parameter
 * ids (`ds_id`, registration order), partitions, optimizer subgroups and
 * their swap files, gradient files, the reduce buckets that send gradients
 * to the gradient swapper in backward, and which parameters stay on NVMe
 * under `offload_param`. Pure: the same setup and settings give the same
 * layout. docs/workloads.md cites the DeepSpeed v0.14.5 line of each rule.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import {
  AIO_ALIGNED_BYTES,
  alignedElements,
  MIN_AIO_BYTES,
  parameterPartitions,
  scaledBytes,
  type TrainingSetup,
} from "./setup.ts";

/** What DeepSpeed's swappers do, resolved (zero_infinity.ts builds it from the options). */
export interface Zero3Settings {
  /** aio block_size: sets the smallest swapped tensor and the request size. */
  readonly blockSize: number;
  /** aio queue_depth. */
  readonly queueDepth: number;
  /** aio thread_count (intra_op_parallelism): slices per swap, and the padding. */
  readonly threads: number;
  readonly singleSubmit: boolean;
  readonly overlapEvents: boolean;
  /** offload_optimizer.buffer_count. */
  readonly bufferCount: number;
  /** The pipelined swapper (pipeline_read or pipeline_write) instead of the serial one. */
  readonly pipeline: boolean;
  readonly pipelineRead: boolean;
  readonly pipelineWrite: boolean;
  readonly reduceBucketSize: number;
  /** Whether a flushed reduce bucket is sorted by ds_id (reduce_scatter, or no contiguous gradients). */
  readonly sortBucket: boolean;
  /** Forward and backward passes per optimizer step (gradient_accumulation_steps). */
  readonly gradientAccumulation: number;
  /** The optimizer's states swapped beside the fp32 params. */
  readonly states: readonly string[];
  /** Parameter swapping (offload_param nvme); undefined without. */
  readonly offloadParam:
    | { bufferCount: number; bufferSize: number; maxInCpu: number; elementBytes: number }
    | undefined;
  /** Where a refusal points: the config file, or undefined for command-line flags. */
  readonly source: string | undefined;
}

/** One parameter of the model, on one rank. */
export interface Zero3Param {
  /** Its ds_id: the place in registration order. */
  readonly id: number;
  readonly name: string;
  /** `blocks.0.qkv` for `blocks.0.qkv.weight`. */
  readonly module: string;
  /** Elements of the whole tensor. */
  readonly numel: number;
  /** Elements of this rank's partition, ⌈numel / dp⌉. */
  readonly partition: number;
  /** Its subgroup, and where its partition starts in the subgroup. */
  readonly subgroup: number;
  readonly offset: number;
  /** offload_param: whether it is read from and written to NVMe during training. */
  readonly onNvme: boolean;
  /** offload_param: whether its partition is large enough to be a swap file at all. */
  readonly swappable: boolean;
}

/** One gradient file: the aligned part of a parameter's gradient partition. */
export interface GradientPiece {
  readonly subgroup: number;
  readonly param: number;
  /** Element offset in the subgroup and length, as in the file's name. */
  readonly offset: number;
  readonly length: number;
  /** `0_51_gradient_0_1048576.tensor.swp`. */
  readonly file: string;
  /** Bytes (scaled). */
  readonly bytes: number;
}

/** One optimizer subgroup of a rank. */
export interface Zero3Subgroup {
  readonly index: number;
  /** `0_51`: the ds_ids of its first and last parameter, DeepSpeed's name for it. */
  readonly id: string;
  readonly params: readonly Zero3Param[];
  /** Elements: the sum of its partitions. */
  readonly elements: number;
  /** Elements padded to the swap alignment. */
  readonly swapElements: number;
  /** Whether its state goes to NVMe (false: under max(1 MiB, block_size), kept in memory). */
  readonly swapped: boolean;
  /** Bytes of one state's padded swap (scaled; 0 when not swapped). */
  readonly stateBytes: number;
  /** Bytes of one state's unpadded swap (the serial swapper's writes of pinned tensors). */
  readonly unpaddedBytes: number;
  /** Its gradient files in the order the swapper reads them (the order they were first written). */
  readonly gradients: readonly GradientPiece[];
  /** Gradient pieces kept in host memory: small partitions and alignment remainders. */
  readonly gradientsInMemory: number;
  /** offload_param: the subgroup's parameters are kept in host memory (within max_in_cpu). */
  readonly paramsInCpu: boolean;
}

/** What one reduce-bucket flush in backward does. */
export interface BucketFlush {
  /** How many parameters' backward (in backward order) ran before it. */
  readonly after: number;
  /** Gradient pieces handed to the gradient swapper, in order. */
  readonly pieces: readonly GradientPiece[];
}

/** A rank's layout. */
export interface Zero3Layout {
  readonly params: readonly Zero3Param[];
  readonly subgroups: readonly Zero3Subgroup[];
  /** Parameters in backward order (reverse registration). */
  readonly backward: readonly Zero3Param[];
  readonly flushes: readonly BucketFlush[];
  /** Elements of the largest subgroup, padded: the size of every swap buffer. */
  readonly bufferElements: number;
}

/** The fp32 partition's swap file of a subgroup (`0_51.tensor.swp`). */
export function paramsFile(sg: { id: string }): string {
  return `${sg.id}.tensor.swp`;
}

/** The swap file of optimizer state `state` of a subgroup (`exp_avg-0_51.tensor.swp`). */
export function stateFile(sg: { id: string }, state: string): string {
  return `${state}-${sg.id}.tensor.swp`;
}

/** A parameter's swap file under offload_param (`12_param.tensor.swp`). */
export function paramFile(p: { id: number }): string {
  return `${p.id}_param.tensor.swp`;
}

/** The optimizer swapper's folder of rank `rank`, relative to the nvme_path. */
export function optimizerFolder(rank: number): string {
  return `zero_stage_3/optimizer/rank${rank}`;
}

/** The object of parameter `id`'s swap file under offload_param, for rank `rank`. */
export function paramObject(rank: number, settings: Zero3Settings, id: number): string {
  const bytes = settings.offloadParam?.elementBytes ?? 4;
  const dtype = bytes === 2 ? "float16" : bytes === 8 ? "float64" : "float32";
  return `zero_stage_3/${dtype}params/rank${rank}/${id}_param.tensor.swp`;
}

/** Bytes of a parameter's swap file: its partition padded, in the model's dtype. */
export function paramBytes(
  setup: TrainingSetup,
  settings: Zero3Settings,
  p: { partition: number },
): number {
  const e = settings.offloadParam?.elementBytes ?? 4;
  return swapBytes(setup, alignedElements(p.partition, e, settings.threads) * e);
}

/** Bytes of a swap at full size; scaled and rounded to 4 KiB only when `--scale` < 1. */
export function swapBytes(setup: TrainingSetup, bytes: number): number {
  return setup.scale === 1 ? bytes : scaledBytes(setup, bytes);
}

/** The module of a parameter: its name without the last part. */
function moduleOf(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? "" : name.slice(0, dot);
}

/**
 * A rank's ZeRO-3 layout of `setup`'s model under `settings`.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "./setup.ts";
 * import { zero3Layout } from "./zero3.ts";
 * import { zeroInfinitySettings } from "./zero_infinity.ts";
 * const list = [{ name: "a.weight", numel: 1 << 20 }, { name: "a.bias", numel: 1024 }];
 * const setup = resolveSetup({ tensors: { label: "a", list }, ranksPerNode: 1 });
 * const l = zero3Layout(setup, zeroInfinitySettings());
 * console.assert(l.subgroups[0]!.id === "0_1" && l.subgroups[0]!.gradients.length === 1);
 * ```
 */
export function zero3Layout(setup: TrainingSetup, settings: Zero3Settings): Zero3Layout {
  const e = setup.bytesPerState;
  const minBytes = Math.max(MIN_AIO_BYTES, settings.blockSize);
  const groups = subgroupsOf(setup);
  const paramBytes = settings.offloadParam?.elementBytes ?? e;
  const inCpu = cpuSubgroups(groups.map((g) => g.reduce((t, p) => t + p.partition, 0)), settings);
  const params: Zero3Param[] = [];
  for (const [s, g] of groups.entries()) {
    let offset = 0;
    for (const p of g) {
      const swappable = settings.offloadParam !== undefined && p.partition * paramBytes >= minBytes;
      params.push({
        ...p,
        subgroup: s,
        offset,
        swappable,
        onNvme: swappable && !inCpu[s]!,
        module: moduleOf(p.name),
      });
      offset += p.partition;
    }
  }
  const backward = [...params].reverse();
  const ids = groups.map((g) => `${g[0]!.id}_${g.at(-1)!.id}`);
  const flushes = bucketFlushes(setup, settings, params, ids, backward);
  const firstSeen = new Map<number, GradientPiece[]>();
  for (const f of flushes) {
    for (const piece of f.pieces) {
      let list = firstSeen.get(piece.subgroup);
      if (!list) firstSeen.set(piece.subgroup, list = []);
      if (!list.some((x) => x.offset === piece.offset)) list.push(piece);
    }
  }
  const align = (AIO_ALIGNED_BYTES * settings.threads) / e;
  let at = 0;
  const subgroups = groups.map((g, index): Zero3Subgroup => {
    const mine = params.slice(at, at += g.length);
    const elements = mine.reduce((t, p) => t + p.partition, 0);
    const swapped = elements * e >= minBytes;
    const swapElements = alignedElements(elements, e, settings.threads);
    const gradients = swapped ? firstSeen.get(index) ?? [] : [];
    // pieces kept in memory: partitions too small to swap and remainders of the aligned part
    const pieces = swapped
      ? mine.reduce(
        (t, p) => t + (p.partition * e < minBytes || p.partition % align === 0 ? 1 : 2),
        0,
      )
      : mine.length;
    return {
      index,
      id: ids[index]!,
      params: mine,
      elements,
      swapElements,
      swapped,
      stateBytes: swapped ? swapBytes(setup, swapElements * e) : 0,
      unpaddedBytes: swapped ? swapBytes(setup, elements * e) : 0,
      gradients,
      gradientsInMemory: pieces - gradients.length,
      paramsInCpu: inCpu[index]!,
    };
  });
  const largest = Math.max(...subgroups.map((sg) => sg.elements));
  return {
    params,
    subgroups,
    backward,
    flushes,
    bufferElements: alignedElements(largest, e, settings.threads),
  };
}

/** The partitions of `setup`'s model grouped as stage 3 forms subgroups. */
function subgroupsOf(setup: TrainingSetup) {
  const parts = parameterPartitions(setup).map((p, id) => ({
    id,
    name: p.name,
    numel: p.numel,
    partition: p.elements,
  }));
  const total = parts.reduce((t, p) => t + p.partition, 0);
  // _create_fp16_sub_groups: whole partitions until the running sum reaches sub_group_size
  if (setup.subgroupElements >= total) return [parts];
  const out: (typeof parts)[] = [];
  let group: typeof parts = [];
  let size = 0;
  for (const [i, p] of parts.entries()) {
    group.push(p);
    size += p.partition;
    if (size >= setup.subgroupElements || i === parts.length - 1) {
      out.push(group);
      group = [];
      size = 0;
    }
  }
  return out;
}

/**
 * offload_param: which subgroups' parameters live in host memory: the
 * subgroups, in order, that fit in max_in_cpu elements together
 * (`_create_param_groups_fp16_flat_cpu_memory`, stage3.py L635–658, L710–727).
 */
function cpuSubgroups(elements: readonly number[], settings: Zero3Settings): boolean[] {
  const op = settings.offloadParam;
  if (op === undefined) return elements.map(() => true);
  const total = elements.reduce((t, n) => t + n, 0);
  const budget = total > op.maxInCpu ? op.maxInCpu : total;
  let at = 0;
  return elements.map((n) => {
    const fits = at + n <= budget;
    at += n;
    return fits;
  });
}

/**
 * The reduce-bucket flushes of one backward pass: gradients join the bucket
 * in backward order; one that would take it past reduce_bucket_size flushes
 * it first, and the end of backward flushes the rest
 * (`reduce_independent_p_g_buckets_and_remove_grads`, stage3.py L1214–1229;
 * `independent_gradient_partition_epilogue`, L1083–1085). A flush sorts its
 * parameters by ds_id (L1270–1276) and hands each subgroup's gradient
 * partitions, their aligned parts of at least max(1 MiB, block_size), to
 * the gradient swapper (`partition_grads`, L1419–1480; `_swap_out_gradients`,
 * swap_tensor/optimizer_utils.py L184–218).
 */
function bucketFlushes(
  setup: TrainingSetup,
  settings: Zero3Settings,
  params: readonly Zero3Param[],
  ids: readonly string[],
  backward: readonly Zero3Param[],
): BucketFlush[] {
  const e = setup.bytesPerState;
  const minBytes = Math.max(MIN_AIO_BYTES, settings.blockSize);
  const align = (AIO_ALIGNED_BYTES * settings.threads) / e;
  const subgroupBytes = new Array<number>(ids.length).fill(0);
  for (const p of params) subgroupBytes[p.subgroup]! += p.partition * e;
  const flush = (after: number, bucket: Zero3Param[]): BucketFlush => {
    const order = settings.sortBucket ? [...bucket].sort((a, b) => a.id - b.id) : bucket;
    const bySubgroup = new Map<number, Zero3Param[]>();
    for (const p of order) {
      let l = bySubgroup.get(p.subgroup);
      if (!l) bySubgroup.set(p.subgroup, l = []);
      l.push(p);
    }
    const pieces: GradientPiece[] = [];
    for (const [s, list] of bySubgroup) {
      if (subgroupBytes[s]! < minBytes) continue; // not a swapped subgroup: gradients stay in memory
      for (const p of list) {
        if (p.partition * e < minBytes) continue;
        const length = Math.floor(p.partition / align) * align;
        if (length * e < minBytes) continue;
        pieces.push({
          subgroup: s,
          param: p.id,
          offset: p.offset,
          length,
          file: `${ids[s]}_gradient_${p.offset}_${length}.tensor.swp`,
          bytes: swapBytes(setup, length * e),
        });
      }
    }
    return { after, pieces };
  };
  const out: BucketFlush[] = [];
  let bucket: Zero3Param[] = [];
  let size = 0;
  for (const [k, p] of backward.entries()) {
    if (size + p.numel > settings.reduceBucketSize && size > 0) {
      out.push(flush(k, bucket));
      bucket = [];
      size = 0;
    }
    bucket.push(p);
    size += p.numel;
  }
  out.push(flush(backward.length, bucket));
  return out;
}

/** One step of the gradient swapper: writes issued, or a wait for every write in flight. */
export type GradientSwapEvent =
  | { readonly kind: "issue"; readonly pieces: readonly GradientPiece[] }
  | { readonly kind: "wait" };

/**
 * What DeepSpeed's gradient swapper does with one backward pass's pieces
 * (swap_tensor/async_swapper.py): buffer_count buffers of the largest
 * subgroup, filled in turn; a piece that does not fit sends the full buffer
 * out and takes a free one, or, with none free, sends it out and waits for
 * every write first (`_make_swap_space`, L90–100). Per flush, the events at
 * that point of backward; `atStep`, the flush before the first swap-in of
 * the step: the last buffer out, then a wait (`release_buffers`, L54–66).
 */
export function gradientSwaps(
  layout: Zero3Layout,
  bufferCount: number,
): { perFlush: GradientSwapEvent[][]; atStep: GradientSwapEvent[] } {
  let current: GradientPiece[] = [];
  let fill = 0;
  let free = bufferCount;
  let used = false;
  const perFlush = layout.flushes.map((f) => {
    const events: GradientSwapEvent[] = [];
    for (const piece of f.pieces) {
      if (!used) {
        used = true;
        free--;
      } else if (fill + piece.length > layout.bufferElements) {
        events.push({ kind: "issue", pieces: current });
        current = [];
        fill = 0;
        if (free > 0) free--;
        else {
          events.push({ kind: "wait" });
          free = bufferCount - 1;
        }
      }
      current.push(piece);
      fill += piece.length;
    }
    return events;
  });
  const atStep: GradientSwapEvent[] = current.length > 0
    ? [{ kind: "issue", pieces: current }, { kind: "wait" }]
    : used
    ? [{ kind: "wait" }]
    : [];
  return { perFlush, atStep };
}

/** A refusal in the words of the flag or config key that set the value. */
export function settingError(
  settings: { source: string | undefined },
  flag: string,
  key: string,
  problem: string,
): ConfigError {
  return settings.source === undefined
    ? new ConfigError(flag, problem)
    : new ConfigError("deepspeed-config", `${settings.source}: ${key}: ${problem}`);
}
