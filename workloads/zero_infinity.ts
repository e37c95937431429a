/**
 * `zero-infinity`: DeepSpeed ZeRO-3 with the optimizer offloaded to NVMe, the
 * baseline every offloading paper measures against, as DeepSpeed's code runs
 * it (docs/workloads.md cites the file and line of each rule).
 *
 * **Subgroups** are formed as stage 3 forms them: the model's parameter
 * tensors ({@linkcode parameterPartitions}), each partitioned over the
 * data-parallel ranks, accumulated whole until a subgroup holds at least
 * sub_group_size elements ({@linkcode partitionedSubgroups}), so their sizes
 * vary. Each state swap (fp32 params, m, v: three files per subgroup) is
 * padded to a multiple of 1024 × threads bytes (256 fp32 elements with one
 * thread); a subgroup smaller than max(1 MiB, block_size) is not swapped at
 * all (it stays in host memory, no I/O).
 *
 * Per rank and iteration:
 * - **backward**: the forward pass (think time), then the backward pass in
 *   one slice per subgroup, last subgroup first. After each slice the
 *   subgroup's gradients go out, one file per parameter partition (the part
 *   that is a whole multiple of the alignment and at least max(1 MiB,
 *   block_size); smaller partitions and remainders stay in host memory),
 *   through DeepSpeed's gradient swapper: `bufferCount` (4) pinned buffers
 *   of the largest subgroup's size, filled in turn; a full buffer is written
 *   out while the next fills, and when none is free the backward pass waits
 *   for every write in flight before it goes on.
 * - **update**, subgroups ascending. Serial by default (DeepSpeed's
 *   pipeline_read/pipeline_write false): read params, m, v and the
 *   gradients, wait, Adam (think time), write params, m, v, wait. With
 *   `pipeline` (the pipelined swapper): the read of subgroup i+1 is issued
 *   once the read of i is done, after the write of i−2 is done and Adam of
 *   i−1 ran; the write of i waits for the write of i−1 (one read and one
 *   write in flight); Adam of i waits for the write of i−2.
 *
 * aio with 1 MiB blocks, depth 8 and 1 thread (intra_op_parallelism) unless
 * `bs`/`iodepth`/`threads` say otherwise; with T threads each swap is cut
 * into T slices, each on its own I/O context. Ranks share the path with no
 * node-wide limit.
 *
 * The phases are exported ({@linkcode zeroInfinityBackward},
 * {@linkcode zeroInfinityUpdate}) for `datastates`, which runs them under its
 * checkpoints.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import {
  DEEPSPEED_BS,
  forwardBackwardMs,
  requirePath,
  storagePath,
  totalIterations,
  type WorkloadDefinition,
  type WorkloadOptions,
  type WorkloadPaths,
} from "./common.ts";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import {
  adamMs,
  alignedElements,
  partitionedSubgroups,
  scaledBytes,
  shardParameters,
  swappable,
  type TrainingSetup,
} from "./setup.ts";

/** States of a subgroup swapped in the update and written back, in order. */
export const ZERO_INFINITY_WRITES = ["params", "m", "v"] as const;
/** States read in the update, in order (`grad`: the subgroup's gradient files). */
export const ZERO_INFINITY_READS = ["params", "m", "v", "grad"] as const;
/** DeepSpeed's offload_optimizer.buffer_count (offload_config.py). */
export const DEEPSPEED_DEFAULT_BUFFER_COUNT = 4;
/** DeepSpeed's aio intra_op_parallelism (swap_tensor/constants.py). */
export const DEEPSPEED_THREADS = 1;

/** zero-infinity's knobs, resolved. */
export interface ZeroInfinitySettings {
  /** The pipelined swapper (pipeline_read/write true) instead of the serial one. */
  readonly pipeline: boolean;
  /** aio intra_op_parallelism: slices per swap. */
  readonly threads: number;
  /** Pinned buffers of the gradient swapper in backward. */
  readonly bufferCount: number;
  /** aio block_size, bytes: sets the smallest swapped tensor. */
  readonly blockSize: number;
}

/** The settings `options` give, checked, DeepSpeed's defaults filled in. */
export function zeroInfinitySettings(options: WorkloadOptions = {}): ZeroInfinitySettings {
  const threads = options.threads ?? DEEPSPEED_THREADS;
  const bufferCount = options.bufferCount ?? DEEPSPEED_DEFAULT_BUFFER_COUNT;
  if (!Number.isInteger(threads) || threads < 1) {
    throw new ConfigError("threads", `${threads} is not an integer ≥ 1`);
  }
  if (!Number.isInteger(bufferCount) || bufferCount < 1) {
    throw new ConfigError("buffer-count", `${bufferCount} is not an integer ≥ 1`);
  }
  return {
    pipeline: options.pipeline ?? false,
    threads,
    bufferCount,
    blockSize: options.bs ?? DEEPSPEED_BS,
  };
}

/** One gradient file of a subgroup: one parameter partition's aligned part. */
export interface GradientFile {
  /** Object name: `sg{i}.grad{k}`, k the partition's place in the subgroup. */
  readonly object: string;
  /** Full-size elements. */
  readonly elements: number;
  /** Scaled bytes. */
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
  /** Scaled bytes of one state's swap (0 when not swapped). */
  readonly stateBytes: number;
  /** Gradient files (none when not swapped). */
  readonly gradients: readonly GradientFile[];
  /** Gradient pieces kept in host memory: small partitions and alignment remainders. */
  readonly gradientsInMemory: number;
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
export function swapLayout(setup: TrainingSetup, settings: ZeroInfinitySettings): SwapSubgroup[] {
  const e = setup.bytesPerState;
  const align = alignedElements(1, e, settings.threads);
  return partitionedSubgroups(setup).map((g, index) => {
    const isSwapped = swappable(g.elements, e, settings.blockSize);
    const swapElements = alignedElements(g.elements, e, settings.threads);
    const gradients: GradientFile[] = [];
    let inMemory = 0;
    if (isSwapped) {
      for (const [k, p] of g.partitions.entries()) {
        // a swappable partition splits into its aligned part (a file) and a remainder (memory)
        if (!swappable(p.elements, e, settings.blockSize)) {
          inMemory++;
          continue;
        }
        const aligned = Math.floor(p.elements / align) * align;
        if (aligned !== p.elements) inMemory++;
        gradients.push({
          object: `sg${index}.grad${k}`,
          elements: aligned,
          bytes: scaledBytes(setup, aligned * e),
        });
      }
    } else inMemory = g.partitions.length;
    return {
      index,
      elements: g.elements,
      partitions: g.partitions.length,
      swapElements,
      swapped: isSwapped,
      stateBytes: isSwapped ? scaledBytes(setup, swapElements * e) : 0,
      gradients,
      gradientsInMemory: inMemory,
    };
  });
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
    "DeepSpeed ZeRO-Infinity: gradients out in backward, subgroups swapped in order in update",
  needs: ["local"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const local = requirePath("zero-infinity", "local", paths);
    const settings = zeroInfinitySettings(options);
    const policy = storagePath(local, "local", { ...options, threads: settings.threads });
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, local, options));
    }
    return {
      workload: "zero-infinity",
      paths: [policy],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: zeroInfinityDerived(setup, options),
      notes: [
        "subgroups: whole parameter partitions of a GPT-style model accumulated to ≥ sub_group_size, " +
        "one optimizer parameter group",
      ],
    };
  },
};

/**
 * Notes zero-infinity's swap files, which exist before the first op: params,
 * m and v of every swapped subgroup on `local`.
 */
export function zeroInfinityInitial(
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  options: WorkloadOptions = {},
): void {
  for (const sg of swapLayout(setup, zeroInfinitySettings(options))) {
    if (!sg.swapped) continue;
    for (const st of ZERO_INFINITY_WRITES) b.initial(local, `sg${sg.index}.${st}`, sg.stateBytes);
  }
}

/** What zero-infinity derives from the setup, per rank. */
export function zeroInfinityDerived(
  setup: TrainingSetup,
  options: WorkloadOptions = {},
): Record<string, number | string | boolean> {
  const settings = zeroInfinitySettings(options);
  const layout = swapLayout(setup, settings);
  const swapped = layout.filter((sg) => sg.swapped);
  const grads = swapped.reduce((t, sg) => t + sg.gradients.reduce((u, g) => u + g.bytes, 0), 0);
  const states = swapped.reduce((t, sg) => t + sg.stateBytes, 0);
  return {
    shard_parameters: shardParameters(setup),
    subgroups_per_rank: layout.length,
    subgroup_grouping: "whole parameter partitions accumulated to >= sub_group_size (stage3.py)",
    subgroup_elements_min: Math.min(...layout.map((sg) => sg.elements)),
    subgroup_elements_max: Math.max(...layout.map((sg) => sg.elements)),
    subgroups_in_host_memory: layout.length - swapped.length,
    swap_alignment_elements: alignedElements(1, setup.bytesPerState, settings.threads),
    gradient_files_per_rank: swapped.reduce((t, sg) => t + sg.gradients.length, 0),
    gradient_pieces_in_host_memory: layout.reduce((t, sg) => t + sg.gradientsInMemory, 0),
    gradient_buffers: settings.bufferCount,
    pipeline: settings.pipeline,
    threads: settings.threads,
    update_read_bytes_per_rank: 3 * states + grads,
    update_write_bytes_per_rank: 3 * states,
    gradient_write_bytes_per_rank: grads,
  };
}

/**
 * Adds zero-infinity's backward phase of iteration `it`: the forward pass,
 * then one backward slice per subgroup, last first, each followed by its
 * gradient files going out through the bounded gradient buffers (see the
 * module documentation). Its barrier waits for `after`, by default for the
 * last held op of every stream. Returns the id of the phase's last op: the
 * last gradient write (or the last slice when nothing is swapped).
 */
export function zeroInfinityBackward(
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  it: number,
  after?: readonly (number | undefined)[],
  options: WorkloadOptions = {},
): number {
  const phase = "backward";
  const settings = zeroInfinitySettings(options);
  const layout = swapLayout(setup, settings);
  const fb = forwardBackwardMs(setup);
  const open = b.barrier({ iteration: it, phase, after });
  let last = b.add({
    kind: "compute",
    stream: "compute",
    iteration: it,
    phase,
    ms: fb.forward,
    label: "forward",
    after: [open],
  });
  const total = layout.reduce((t, sg) => t + sg.elements, 0);
  // the gradient swapper (async_swapper.py): buffers of the largest subgroup, filled in turn
  const capacity = Math.max(...layout.map((sg) => sg.swapElements));
  let current: GradientFile[] = [];
  let fill = 0;
  let swapping: number[][] = [];
  let lastWrite: number | undefined;
  let wait: number[] = [];
  const issue = (slice: number) => {
    if (current.length === 0) return;
    const ids = current.map((g) =>
      lastWrite = b.add({
        kind: "write",
        stream: `${local}:write`,
        iteration: it,
        phase,
        path: local,
        object: g.object,
        bytes: g.bytes,
        label: g.object,
        after: [slice],
      })
    );
    swapping.push(ids);
    current = [];
    fill = 0;
  };
  for (let i = layout.length - 1; i >= 0; i--) {
    const sg = layout[i]!;
    const slice = b.add({
      kind: "compute",
      stream: "compute",
      iteration: it,
      phase,
      ms: (fb.backward * sg.elements) / total,
      label: `sg${i}.backward`,
      after: wait,
    });
    last = slice;
    wait = [];
    for (const g of sg.gradients) {
      if (current.length > 0 && fill + g.elements > capacity) {
        // a full buffer: written out; with no buffer free, wait for every write in flight
        const full = swapping.length + 1 >= settings.bufferCount;
        issue(slice);
        if (full) {
          wait = swapping.flat();
          swapping = [];
        }
      }
      current.push(g);
      fill += g.elements;
    }
  }
  // swap_in_optimizer_state flushes the gradient swapper before the first read
  issue(last);
  return lastWrite ?? last;
}

/**
 * Adds zero-infinity's update phase of iteration `it`: subgroups in
 * ascending order on `local`, serial (read, wait, Adam, write, wait) or, with
 * `options.pipeline`, as DeepSpeed's pipelined swapper orders it. Its barrier
 * waits for `after`, by default for the last held op of every stream. Returns
 * the id of the last write, which ends after every other op of the phase.
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
 * console.assert(b.build().ops[last]!.object!.endsWith(".v"));
 * ```
 */
export function zeroInfinityUpdate(
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  it: number,
  after?: readonly (number | undefined)[],
  options: WorkloadOptions = {},
): number {
  const phase = "update";
  const settings = zeroInfinitySettings(options);
  const layout = swapLayout(setup, settings);
  const start = b.barrier({ iteration: it, phase, after });
  const io = (
    kind: "read" | "write",
    object: string,
    bytes: number,
    deps: (number | undefined)[],
  ) =>
    b.add({
      kind,
      stream: `${local}:${kind}`,
      iteration: it,
      phase,
      path: local,
      object,
      bytes,
      label: object,
      after: deps,
    });
  const readsOf = (sg: SwapSubgroup, deps: (number | undefined)[]) => [
    ...ZERO_INFINITY_WRITES.map((st) => io("read", `sg${sg.index}.${st}`, sg.stateBytes, deps)),
    ...sg.gradients.map((g) => io("read", g.object, g.bytes, deps)),
  ];
  const swapped = layout.filter((sg) => sg.swapped);
  // per swapped subgroup, in order: the ids of its reads, its Adam, its last write
  const reads = new Map<number, number[]>();
  const computes: number[] = [];
  const writes: number[] = [];
  let lastOp = start;
  let k = 0; // index among swapped subgroups
  for (const sg of layout) {
    if (!sg.swapped) {
      // in host memory: Adam only
      lastOp = b.add({
        kind: "compute",
        stream: "compute",
        iteration: it,
        phase,
        ms: adamMs(setup, sg.elements),
        label: `sg${sg.index}.adam`,
        after: [start],
      });
      continue;
    }
    let mine: number[];
    if (!settings.pipeline) {
      // serial: the read is issued once the write before it is done
      mine = readsOf(sg, [start, writes[k - 1]]);
    } else {
      // pipelined: read(i) was issued in step i−1, except the first
      mine = reads.get(k) ?? readsOf(sg, [start]);
      const next = swapped[k + 1];
      if (next) {
        // swap_in(i) waits for read(i), then issues read(i+1); swap_out(i−1) waited for write(i−2)
        reads.set(k + 1, readsOf(next, [mine.at(-1), computes[k - 1], writes[k - 2]]));
      }
    }
    const c = b.add({
      kind: "compute",
      stream: "compute",
      iteration: it,
      phase,
      ms: adamMs(setup, sg.elements),
      label: `sg${sg.index}.adam`,
      after: [...mine, settings.pipeline ? writes[k - 2] : writes[k - 1]],
    });
    computes.push(c);
    let w = c;
    for (const st of ZERO_INFINITY_WRITES) {
      w = io("write", `sg${sg.index}.${st}`, sg.stateBytes, [c]);
    }
    writes.push(w);
    lastOp = w;
    k++;
  }
  return writes.at(-1) ?? lastOp;
}

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  local: string,
  options: WorkloadOptions,
): RankProgram {
  const b = new ProgramBuilder(rank);
  zeroInfinityInitial(b, setup, local, options);
  // each phase's barrier waits for the last op of the phase before: a write
  // on the local path that ends after every other op of its phase
  let last: number | undefined;
  for (let it = 0; it < totalIterations(setup); it++) {
    last = zeroInfinityBackward(b, setup, local, it, [last], options);
    last = zeroInfinityUpdate(b, setup, local, it, [last], options);
  }
  return b.build();
}
