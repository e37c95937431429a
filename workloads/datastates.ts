/**
 * `datastates`: DataStates-LLM's asynchronous checkpoints of a ZeRO-3
 * training run, as its engine (DataStates/datastates-llm, main) runs them: a
 * GPU→host copy of each tensor into a pinned ring buffer (the snapshot), and
 * one flush thread per rank writing each tensor from the ring into one file
 * per save, buffered, while training goes on. (docs/workloads.md cites the
 * files and lines each rule comes from.)
 *
 * Per rank and iteration:
 * - **backward** and **update**: without optimizer offload (DataStates-LLM
 *   asserts offload_optimizer is none), the forward and backward pass as one
 *   think time on the GPU and Adam on the GPU ({@linkcode adamMs} of the
 *   shard over {@linkcode GPU_ADAM_SPEEDUP}): no I/O. With
 *   `offloadOptimizer`, `zero-infinity`'s ops on the local path instead,
 *   built by its {@linkcode zeroInfinityBackward} and
 *   {@linkcode zeroInfinityUpdate} (what tierbench ran before; not something
 *   DataStates-LLM runs).
 * - **checkpoint**, every `checkpointEvery` iterations ({@linkcode
 *   DATASTATES_CHECKPOINT_EVERY} by default, counted from the first
 *   iteration, warm-up included): a barrier after the update, then the
 *   rank's ZeRO-3 optimizer state — fp32 params, m and v: 3 × 4 = 12 B/param
 *   ({@linkcode checkpointBytesPerParam}) in {@linkcode checkpointTensors}:
 *   m and v of each subgroup (the optimizer's state dict), then the fp32
 *   partition of each subgroup — copied tensor by tensor into the ring, one
 *   object `ring` of `hostCacheBytes` on the host path (stream
 *   `{host}:write`, one copy thread). A tensor goes where the ring's head
 *   is, or at 0 when it does not fit before the end, and waits until the
 *   flush of every tensor that held that space is done
 *   ({@linkcode ringPlacement}). The snapshot blocks training: the next
 *   iteration's barrier waits for it (DeepSpeed's save_checkpoint ends with
 *   the engine's commit, which waits for the GPU→host copies).
 * - **flush**: one file per save — `global_step{N}/bf16_zero_pp_rank_{r}_
 *   mp_rank_00_optim_states.pt`, N the step just taken (iteration + 1), a new
 *   directory per checkpoint, never overwritten — written buffered (no
 *   O_DIRECT, no fsync): the header (size, JSON, then the pickled rest) at
 *   offset 0 by the parser thread (stream `{remote}:header`), and each tensor
 *   at its offset after it by the one flush thread (stream `{remote}:write`,
 *   one request at a time), each once its snapshot is in the ring. Background
 *   ops: they overlap the next iterations and do not hold their phase open.
 *
 * After the last iteration a **drain** barrier waits for the last flush, so
 * the run ends when the last checkpoint is on the remote path (its time
 * counts in the last iteration).
 *
 * @module
 */

import {
  backwardPhase,
  requirePath,
  storagePath,
  totalIterations,
  type WorkloadDefinition,
  type WorkloadOptions,
  type WorkloadPaths,
} from "./common.ts";
import { GPU_ADAM_SPEEDUP } from "./deep_optimizer_states.ts";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import {
  adamMs,
  scaledBytes,
  shardParameters,
  subgroupSizes,
  type TrainingSetup,
} from "./setup.ts";
import {
  zeroInfinityBackward,
  zeroInfinityDerived,
  zeroInfinityInitial,
  zeroInfinityUpdate,
} from "./zero_infinity.ts";

/** Checkpoint every this many iterations unless `options.checkpointEvery` says otherwise. */
export const DATASTATES_CHECKPOINT_EVERY = 1;
/** Flush threads per rank: DataStates-LLM's host tier runs one (engine.cpp: num_threads = 1). */
export const DATASTATES_FLUSH_THREADS = 1;
/**
 * Header bytes per tensor before scaling: its JSON entry (key, dtype, shape,
 * offsets). An estimate; the header of a save rounds up to 4 KiB after scaling.
 */
export const DATASTATES_HEADER_BYTES_PER_TENSOR = 128;

/** Bytes a ZeRO-3 checkpoint holds per parameter of the rank's shard: fp32 params, m, v. */
export function checkpointBytesPerParam(s: TrainingSetup): number {
  return 3 * s.bytesPerState;
}

/** Whether iteration `it` (from 0, warm-up first) ends with a checkpoint. */
export function isCheckpointIteration(it: number, every: number): boolean {
  return (it + 1) % every === 0;
}

/** One tensor of a rank's checkpoint. */
export interface CheckpointTensor {
  /** `sg{i}.m`, `sg{i}.v`, `sg{i}.params`. */
  readonly name: string;
  /** Bytes, scaled (a multiple of 4 KiB). */
  readonly bytes: number;
}

/**
 * The tensors of a rank's checkpoint in the order save() parses them:
 * DeepSpeed's ZeRO-3 state dict holds the optimizer's state (m and v of
 * each subgroup) before the fp32 partitions (one per subgroup).
 */
export function checkpointTensors(setup: TrainingSetup): CheckpointTensor[] {
  const sizes = subgroupSizes(setup);
  const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
  const out: CheckpointTensor[] = [];
  for (const [i, el] of sizes.entries()) {
    out.push({ name: `sg${i}.m`, bytes: state(el) }, { name: `sg${i}.v`, bytes: state(el) });
  }
  for (const [i, el] of sizes.entries()) out.push({ name: `sg${i}.params`, bytes: state(el) });
  return out;
}

/** The header of one save, scaled bytes: 8 bytes of size and a JSON entry per tensor. */
export function headerBytes(setup: TrainingSetup, tensors: number): number {
  return scaledBytes(setup, 8 + tensors * DATASTATES_HEADER_BYTES_PER_TENSOR);
}

/**
 * The ring buffer of a rank, scaled bytes: `options.hostCacheBytes` scaled,
 * by default one checkpoint of the rank.
 *
 * @throws {RangeError} when it cannot hold the largest tensor (DataStates-LLM
 * stops with "Cannot allocate size … larger than the pool").
 */
export function hostCacheBytes(setup: TrainingSetup, options: WorkloadOptions): number {
  const tensors = checkpointTensors(setup);
  const raw = options.hostCacheBytes;
  if (raw !== undefined && (!Number.isFinite(raw) || raw <= 0)) {
    throw new RangeError(`hostCacheBytes ${raw} is not a positive size`);
  }
  const cache = raw === undefined
    ? tensors.reduce((t, x) => t + x.bytes, 0)
    : scaledBytes(setup, raw);
  if (cache < Math.max(...tensors.map((t) => t.bytes))) {
    const unscaled = Math.max(...subgroupSizes(setup)) * setup.bytesPerState;
    throw new RangeError(
      `a host cache of ${raw} bytes cannot hold a tensor of ${unscaled} bytes ` +
        `(a subgroup's fp32 state): use at least that, e.g. a larger --host-cache-size`,
    );
  }
  return cache;
}

/** Where a tensor goes in the ring and what it waits for. */
export interface RingSlot {
  /** Offset in the ring, bytes. */
  readonly offset: number;
  /** Index (in the sequence given) of the flush it waits for; -1 for none. */
  readonly waitsFor: number;
}

/**
 * Places a sequence of tensors, in order, in a ring of `capacity` bytes as
 * DataStates-LLM's memory pool does (mem_pool.cpp): at the head, or at 0
 * when the tensor does not fit before the end; space is freed first in,
 * first out as tensors are flushed. A tensor waits for the flush of the
 * newest tensor still in the space it takes (flushes finish in order, so
 * the older ones are done too).
 *
 * @throws {RangeError} for a tensor larger than the ring.
 *
 * @example
 * ```ts
 * import { ringPlacement } from "./datastates.ts";
 * // a ring of 3 blocks: the third and fourth tensor wait for the first two flushes
 * const slots = ringPlacement([1, 2, 1, 2], 3);
 * console.assert(slots.map((s) => s.waitsFor).join() === "-1,-1,0,1");
 * ```
 */
export function ringPlacement(sizes: readonly number[], capacity: number): RingSlot[] {
  const live: { start: number; end: number; index: number }[] = [];
  const out: RingSlot[] = [];
  let head = 0;
  for (const [k, size] of sizes.entries()) {
    if (size > capacity) {
      throw new RangeError(`a tensor of ${size} bytes is larger than the ring of ${capacity}`);
    }
    const offset = head + size <= capacity ? head : 0;
    let waitsFor = -1;
    for (const a of live) {
      if (a.start < offset + size && offset < a.end) waitsFor = Math.max(waitsFor, a.index);
    }
    while (live.length > 0 && live[0]!.index <= waitsFor) live.shift();
    live.push({ start: offset, end: offset + size, index: k });
    out.push({ offset, waitsFor });
    head = offset + size;
  }
  return out;
}

/** The file of one save of rank `rank` at step `step`, as DeepSpeed names it (bf16 ZeRO-3). */
export function checkpointFile(step: number, rank: number): string {
  return `global_step${step}/bf16_zero_pp_rank_${rank}_mp_rank_00_optim_states.pt`;
}

/**
 * Builds the datastates programs.
 *
 * @example
 * ```ts
 * import { datastates } from "./datastates.ts";
 * import { resolveSetup } from "./setup.ts";
 * const p = datastates.build(resolveSetup({ model: "7b", scale: 0.001 }), {
 *   host: "host",
 *   local: [],
 *   remote: "remote",
 * });
 * console.assert(p.ranks.length === 4 && p.derived.checkpoint_bytes_per_param === 12);
 * ```
 */
export const datastates: WorkloadDefinition = {
  name: "datastates",
  summary:
    "DataStates-LLM: ZeRO-3 checkpoints copied to a pinned host ring, flushed to remote in the background",
  needs: ["host", "remote"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const host = requirePath("datastates", "host", paths);
    const remote = requirePath("datastates", "remote", paths);
    const offload = options.offloadOptimizer === true;
    const local = offload ? requirePath("datastates", "local", paths) : undefined;
    const every = options.checkpointEvery ?? DATASTATES_CHECKPOINT_EVERY;
    if (!Number.isInteger(every) || every < 1) {
      throw new RangeError(`checkpointEvery ${every} is not an integer ≥ 1`);
    }
    const cache = hostCacheBytes(setup, options);
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, { local, host, remote }, every, cache, options));
    }
    const tensors = checkpointTensors(setup);
    const shard = shardParameters(setup);
    const perParam = checkpointBytesPerParam(setup);
    const checkpoints = Array.from({ length: totalIterations(setup) }, (_, it) => it)
      .filter((it) => isCheckpointIteration(it, every)).length;
    const ringWaits =
      ranks[0]!.ops.filter((op) =>
        op.phase === "checkpoint" && op.kind === "write" && op.after.length > 1
      ).length;
    return {
      workload: "datastates",
      paths: [
        ...(local !== undefined ? [storagePath(local, "local", options)] : []),
        storagePath(host, "host", options),
        // one flush thread, one ofstream write at a time
        storagePath(remote, "remote", options, { iodepth: 1 }),
      ],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: {
        ...(offload ? zeroInfinityDerived(setup, options) : { shard_parameters: shard }),
        offload_optimizer: offload,
        checkpoint_bytes_per_param: perParam,
        checkpoint_bytes_per_rank_unscaled: shard * perParam,
        checkpoint_bytes_per_rank: tensors.reduce((t, x) => t + x.bytes, 0),
        checkpoint_tensors_per_rank: tensors.length,
        checkpoint_files_per_rank: checkpoints,
        header_bytes: headerBytes(setup, tensors.length),
        host_cache_bytes: cache,
        host_cache_bytes_unscaled: options.hostCacheBytes ?? shard * perParam,
        ring_waits_per_rank: ringWaits,
        flush_threads_per_rank: DATASTATES_FLUSH_THREADS,
        checkpoint_every: every,
        checkpoints,
      },
      notes: [
        offload
          ? "--offload-optimizer: zero-infinity's optimizer offload runs beneath " +
            "(DataStates-LLM refuses offload_optimizer; this is not a configuration it runs)"
          : `no optimizer offload: forward, backward and Adam on the GPU (Adam ${GPU_ADAM_SPEEDUP}× ` +
            "the CPU rate, an assumption), no I/O outside checkpoints",
        "the snapshot blocks training: the next iteration starts when every tensor is in the ring " +
        "(DeepSpeed's save_checkpoint commits, which waits for the GPU→host copies)",
        "no GPU: the GPU→host copy is a write to the host path's ring object",
        "one file per save in a new global_step directory, written buffered (no O_DIRECT, no fsync); " +
        "the flush's reads of host memory are not modelled",
        "the last iteration ends when its checkpoint is on the remote path (drain)",
      ],
    };
  },
};

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  paths: { local: string | undefined; host: string; remote: string },
  every: number,
  cache: number,
  options: WorkloadOptions,
): RankProgram {
  const { local, host, remote } = paths;
  const b = new ProgramBuilder(rank);
  const tensors = checkpointTensors(setup);
  const header = headerBytes(setup, tensors.length);
  if (local !== undefined) zeroInfinityInitial(b, setup, local, options);
  const iterations = totalIterations(setup);
  const checkpoints = Array.from({ length: iterations }, (_, it) => it)
    .filter((it) => isCheckpointIteration(it, every)).length;
  // the ring persists across checkpoints: place every tensor of every checkpoint in order
  const slots = ringPlacement(
    Array.from({ length: checkpoints }, () => tensors.map((t) => t.bytes)).flat(),
    cache,
  );
  const flushes: number[] = [];
  let lastFlush: number | undefined, lastHeader: number | undefined;
  // every barrier waits for the last held op of every stream: all but the flush's,
  // which run in the background
  for (let it = 0; it < iterations; it++) {
    if (local !== undefined) {
      zeroInfinityBackward(b, setup, local, it, undefined, options);
      zeroInfinityUpdate(b, setup, local, it, undefined, options);
    } else {
      backwardPhase(b, setup, it, { whole: true });
      const open = b.barrier({ iteration: it, phase: "update" });
      b.add({
        kind: "compute",
        stream: "compute",
        iteration: it,
        phase: "update",
        ms: adamMs(setup, shardParameters(setup)) / GPU_ADAM_SPEEDUP,
        label: "adam (GPU)",
        after: [open],
      });
    }
    if (!isCheckpointIteration(it, every)) continue;
    const file = checkpointFile(it + 1, rank);
    const snap = b.barrier({ iteration: it, phase: "checkpoint" });
    // the parser thread writes the header while the tensors are copied
    lastHeader = b.add({
      kind: "write",
      stream: `${remote}:header`,
      iteration: it,
      phase: "flush",
      path: remote,
      object: file,
      bytes: header,
      label: "header",
      after: [snap],
      background: true,
      direct: false,
    });
    let at = header;
    for (const t of tensors) {
      const k = flushes.length;
      const slot = slots[k]!;
      const copy = b.add({
        kind: "write",
        stream: `${host}:write`,
        iteration: it,
        phase: "checkpoint",
        path: host,
        object: "ring",
        offset: slot.offset,
        bytes: t.bytes,
        label: `${t.name}.snapshot`,
        after: [snap, slot.waitsFor >= 0 ? flushes[slot.waitsFor] : undefined],
      });
      lastFlush = b.add({
        kind: "write",
        stream: `${remote}:write`,
        iteration: it,
        phase: "flush",
        path: remote,
        object: file,
        offset: at,
        bytes: t.bytes,
        label: `${t.name}.flush`,
        after: [copy],
        background: true,
        direct: false,
      });
      flushes.push(lastFlush);
      at += t.bytes;
    }
  }
  // drain: the run ends when the last checkpoint is on the remote path
  b.barrier({
    iteration: iterations - 1,
    phase: "drain",
    after: [...b.lastHeld(), lastHeader, lastFlush],
  });
  return b.build();
}
