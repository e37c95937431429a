/**
 * `datastates`: DataStates-LLM's asynchronous checkpoints of a ZeRO-3
 * training run, as its engine (DataStates/datastates-llm, main) runs them: a
 * GPU→host copy of each tensor into a pinned ring buffer (the snapshot), and
 * one flush thread per rank writing each tensor from the ring into one file
 * per save, buffered, while training goes on. (docs/workloads.md cites the
 * files and lines each rule comes from.)
 *
 * Two things depend on the version and the integration, each an option
 * whose default is what DataStates-LLM's own runs used (its DeepSpeed fork,
 * DataStates/DeepSpeed dev, with datastates-llm 32960317):
 * - `snapshotBlocking`: `copy` — training waits for the GPU→host copies
 *   (the fork's checkpoint engine commits, which waits); `none` — it never
 *   waits (DeepSpeed master's DataStates engine is decoupled: its commit is
 *   skipped while training, the copies run in the background).
 * - `flushMode`: `ofstream` — each tensor written buffered, no fsync
 *   (32960317's host tier); `pwrite-fsync` — written with pwrite and the
 *   file fsync'ed after each tensor (the later engine DeepSpeed master
 *   imports, `src/file_handlers/pwrite_handler.cpp`).
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
 *   m and v of each of DeepSpeed's subgroups (the optimizer's state dict),
 *   then the fp32 partition of each subgroup, the subgroups whole parameter
 *   partitions accumulated to `checkpointSubgroupSize` (DeepSpeed's default
 *   sub_group_size, 1e9, which its runs leave alone; with `offloadOptimizer`
 *   the setup's) — copied tensor by tensor into the ring, one
 *   object `ring` of `hostCacheBytes` on the host path (stream
 *   `{host}:write`, one copy thread). A tensor goes where the ring's head
 *   is, or at 0 when it does not fit before the end, and waits until the
 *   flush of every tensor that held that space is done
 *   ({@linkcode ringPlacement}). With `snapshotBlocking` `copy` the snapshot
 *   blocks training: the next iteration's barrier waits for it (the fork's
 *   save_checkpoint ends with the engine's commit, which waits for the
 *   GPU→host copies); with `none` the copies are background ops too.
 * - **flush**: first the rank's small model-states file
 *   (`global_step{N}/zero_pp_rank_{r}_mp_rank_00_model_states.pt`, written
 *   before the optimizer's, as DeepSpeed saves them; its size an estimate),
 *   then one file per save — `global_step{N}/bf16_zero_pp_rank_{r}_
 *   mp_rank_00_optim_states.pt`, N the step just taken (iteration + 1), a new
 *   directory per checkpoint, never overwritten — written buffered (no
 *   O_DIRECT; fsync after each tensor with `pwrite-fsync`): the header (size, JSON, then the pickled rest) at
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
  checkpointCount,
  requirePath,
  storagePath,
  totalIterations,
  type WorkloadDefinition,
  type WorkloadOptions,
  type WorkloadPaths,
} from "./common.ts";
import { GPU_ADAM_SPEEDUP } from "./deep_optimizer_states.ts";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import { ConfigError } from "../core/errors.ts";
import {
  parameterPartitions,
  partitionedSubgroups,
  scaledBytes,
  shardParameters,
  type TrainingSetup,
} from "./setup.ts";
import { zeroInfinityDerived } from "./zero_infinity.ts";
import { adamStep, checkpointedTraining, zeroInfinityTraining } from "./_steps.ts";

/** Checkpoint every this many iterations unless `options.checkpointEvery` says otherwise. */
export const DATASTATES_CHECKPOINT_EVERY = 1;
/** Flush threads per rank: DataStates-LLM's host tier runs one (engine.cpp: num_threads = 1). */
export const DATASTATES_FLUSH_THREADS = 1;
/**
 * Header bytes per tensor before scaling: its JSON entry (key, dtype, shape,
 * offsets). An estimate; the header of a save rounds up to 4 KiB after scaling.
 */
export const DATASTATES_HEADER_BYTES_PER_TENSOR = 128;
/** DeepSpeed's default sub_group_size: the checkpoint's tensors are its subgroups at this size. */
export const DATASTATES_CHECKPOINT_SUBGROUP = 1e9;
/** Training waits for the GPU→host copies, as DataStates-LLM's own DeepSpeed fork does. */
export const DATASTATES_SNAPSHOT_BLOCKING = "copy";
/** Each tensor written buffered with no fsync, as datastates-llm 32960317 does. */
export const DATASTATES_FLUSH_MODE = "ofstream";
/** The choices of `snapshotBlocking`. */
export const SNAPSHOT_BLOCKING_MODES = ["copy", "none"] as const;
/** The choices of `flushMode`. */
export const FLUSH_MODES = ["ofstream", "pwrite-fsync"] as const;

/** datastates' knobs, resolved. */
interface DatastatesSettings {
  readonly every: number;
  readonly snapshotBlocking: (typeof SNAPSHOT_BLOCKING_MODES)[number];
  readonly flushMode: (typeof FLUSH_MODES)[number];
  readonly subgroupElements: number;
}

/** The options, checked, with the defaults filled in. */
function resolveDatastates(options: WorkloadOptions, setup: TrainingSetup): DatastatesSettings {
  const every = options.checkpointEvery ?? DATASTATES_CHECKPOINT_EVERY;
  if (!Number.isInteger(every) || every < 1) {
    throw new RangeError(`checkpointEvery ${every} is not an integer ≥ 1`);
  }
  const snapshotBlocking = options.snapshotBlocking ?? DATASTATES_SNAPSHOT_BLOCKING;
  if (!(SNAPSHOT_BLOCKING_MODES as readonly string[]).includes(snapshotBlocking)) {
    throw new ConfigError(
      "snapshot-blocking",
      `"${snapshotBlocking}" is not one of ${SNAPSHOT_BLOCKING_MODES.join(", ")}`,
    );
  }
  const flushMode = options.flushMode ?? DATASTATES_FLUSH_MODE;
  if (!(FLUSH_MODES as readonly string[]).includes(flushMode)) {
    throw new ConfigError("flush-mode", `"${flushMode}" is not one of ${FLUSH_MODES.join(", ")}`);
  }
  const subgroupElements = options.checkpointSubgroupSize ??
    (options.offloadOptimizer === true ? setup.subgroupElements : DATASTATES_CHECKPOINT_SUBGROUP);
  if (!Number.isInteger(subgroupElements) || subgroupElements < 1) {
    throw new ConfigError("checkpoint-subgroup-size", `${subgroupElements} is not an integer ≥ 1`);
  }
  return { every, snapshotBlocking, flushMode, subgroupElements };
}

/** Bytes a ZeRO-3 checkpoint holds per parameter of the rank's shard: fp32 params, m, v. */
export function checkpointBytesPerParam(s: TrainingSetup): number {
  return 3 * s.bytesPerState;
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
 * each subgroup) before the fp32 partitions (one per subgroup), the
 * subgroups whole parameter partitions accumulated to `subgroupElements`
 * (default DeepSpeed's 1e9).
 *
 * @example
 * ```ts
 * import { checkpointTensors } from "./datastates.ts";
 * import { resolveSetup } from "./setup.ts";
 * // llama2-70b on 4 ranks: 17 subgroups of about 1e9, 51 tensors (246 at 1e8)
 * console.assert(checkpointTensors(resolveSetup({ model: "llama2-70b" })).length === 51);
 * ```
 */
export function checkpointTensors(
  setup: TrainingSetup,
  subgroupElements = DATASTATES_CHECKPOINT_SUBGROUP,
): CheckpointTensor[] {
  const sizes = checkpointSubgroups(setup, subgroupElements);
  const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
  const out: CheckpointTensor[] = [];
  for (const [i, el] of sizes.entries()) {
    out.push({ name: `sg${i}.m`, bytes: state(el) }, { name: `sg${i}.v`, bytes: state(el) });
  }
  for (const [i, el] of sizes.entries()) out.push({ name: `sg${i}.params`, bytes: state(el) });
  return out;
}

/** Elements of the rank's subgroups as DeepSpeed forms them at `subgroupElements`. */
export function checkpointSubgroups(setup: TrainingSetup, subgroupElements: number): number[] {
  return partitionedSubgroups({ ...setup, subgroupElements }).map((g) => g.elements);
}

/**
 * The model-states file of a save, scaled bytes: an estimate, 8 bytes and a
 * header entry per parameter tensor of the model (its shapes, as DeepSpeed's
 * `param_shapes`; ZeRO-3's module state holds no weights).
 */
export function modelStatesBytes(setup: TrainingSetup): number {
  return headerBytes(setup, parameterPartitions(setup).length);
}

/** The model-states file of rank `rank` at step `step`, as DeepSpeed names it (ZeRO-3). */
export function modelStatesFile(step: number, rank: number): string {
  return `global_step${step}/zero_pp_rank_${rank}_mp_rank_00_model_states.pt`;
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
export function hostCacheBytes(
  setup: TrainingSetup,
  options: WorkloadOptions,
  subgroupElements = DATASTATES_CHECKPOINT_SUBGROUP,
): number {
  const tensors = checkpointTensors(setup, subgroupElements);
  const raw = options.hostCacheBytes;
  if (raw !== undefined && (!Number.isFinite(raw) || raw <= 0)) {
    throw new RangeError(`hostCacheBytes ${raw} is not a positive size`);
  }
  const cache = raw === undefined
    ? tensors.reduce((t, x) => t + x.bytes, 0)
    : scaledBytes(setup, raw);
  if (cache < Math.max(...tensors.map((t) => t.bytes))) {
    const unscaled = Math.max(...checkpointSubgroups(setup, subgroupElements)) *
      setup.bytesPerState;
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
    const settings = resolveDatastates(options, setup);
    const every = settings.every;
    const cache = hostCacheBytes(setup, options, settings.subgroupElements);
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, { local, host, remote }, settings, cache, options));
    }
    const tensors = checkpointTensors(setup, settings.subgroupElements);
    const shard = shardParameters(setup);
    const perParam = checkpointBytesPerParam(setup);
    const checkpoints = checkpointCount(setup, every);
    const ringWaits =
      ranks[0]!.ops.filter((op) =>
        op.phase === "checkpoint" && op.kind === "write" && op.after.length > 1
      ).length;
    return {
      workload: "datastates",
      paths: [
        ...(local !== undefined ? [storagePath(local, "local", options)] : []),
        storagePath(host, "host", options),
        // one flush thread, one write at a time
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
        checkpoint_subgroup_elements: settings.subgroupElements,
        model_states_bytes: modelStatesBytes(setup),
        snapshot_blocking: settings.snapshotBlocking,
        flush_mode: settings.flushMode,
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
        settings.snapshotBlocking === "copy"
          ? "snapshot blocking copy: the next iteration starts when every tensor is in the ring " +
            "(DataStates-LLM's DeepSpeed fork commits, which waits for the GPU→host copies)"
          : "snapshot blocking none: training never waits for the GPU→host copies " +
            "(DeepSpeed master's decoupled DataStates engine skips its commit while training)",
        "no GPU: the GPU→host copy is a write to the host path's ring object",
        "the model-states file, then one optimizer file per save, in a new global_step directory, " +
        (settings.flushMode === "ofstream"
          ? "written buffered (ofstream: no O_DIRECT, no fsync); "
          : "written buffered with an fsync after each tensor (pwrite-fsync); ") +
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
  settings: DatastatesSettings,
  cache: number,
  options: WorkloadOptions,
): RankProgram {
  const { local, host, remote } = paths;
  const { every } = settings;
  const b = new ProgramBuilder(rank);
  const tensors = checkpointTensors(setup, settings.subgroupElements);
  const header = headerBytes(setup, tensors.length);
  const train = local !== undefined
    ? zeroInfinityTraining(b, setup, local, options)
    : (it: number) => gpuTraining(b, setup, it);
  const checkpoints = checkpointCount(setup, every);
  // the ring persists across checkpoints: place every tensor of every checkpoint in order
  const slots = ringPlacement(
    Array.from({ length: checkpoints }, () => tensors.map((t) => t.bytes)).flat(),
    cache,
  );
  const flushes: number[] = [];
  let lastFlush: number | undefined, lastHeader: number | undefined;
  // every barrier waits for the last held op of every stream: all but the flush's,
  // which run in the background
  checkpointedTraining(setup, every, train, (it) => {
    [lastHeader, lastFlush] = addCheckpoint(b, {
      it,
      rank,
      host,
      remote,
      tensors,
      slots,
      flushes,
      headerBytes: header,
      modelStatesBytes: modelStatesBytes(setup),
      fsync: settings.flushMode === "pwrite-fsync",
      copyInBackground: settings.snapshotBlocking === "none",
    });
  });
  // drain: the run ends when the last checkpoint is on the remote path
  b.barrier({
    iteration: totalIterations(setup) - 1,
    phase: "drain",
    after: [...b.lastHeld(), lastHeader, lastFlush],
  });
  return b.build();
}

/** One iteration without optimizer offload: the backward pass whole, then Adam on the GPU. */
function gpuTraining(b: ProgramBuilder, setup: TrainingSetup, it: number): void {
  backwardPhase(b, setup, it, { whole: true });
  const open = b.barrier({ iteration: it, phase: "update" });
  adamStep({ b, it, phase: "update" }, setup, 0, shardParameters(setup), {
    speedup: GPU_ADAM_SPEEDUP,
    label: "adam (GPU)",
    after: [open],
  });
}

/** What one checkpoint of a rank needs to place its ops. */
interface CheckpointContext {
  readonly it: number;
  readonly rank: number;
  readonly host: string;
  readonly remote: string;
  readonly tensors: readonly CheckpointTensor[];
  readonly slots: readonly RingSlot[];
  /** Every flush op so far, in order (a ring slot waits for one of them). */
  readonly flushes: number[];
  /** Scaled bytes of the optimizer file's header and of the model-states file. */
  readonly headerBytes: number;
  readonly modelStatesBytes: number;
  /** pwrite-fsync: each flushed object fsync'ed. */
  readonly fsync: boolean;
  /** snapshot blocking none: the copies run in the background. */
  readonly copyInBackground: boolean;
}

/**
 * One checkpoint of a rank: after a barrier, the model-states file and the
 * optimizer file's header, then each tensor copied into the ring and
 * flushed from it. Returns the ids of the header and the last flush.
 */
function addCheckpoint(b: ProgramBuilder, c: CheckpointContext): [number, number | undefined] {
  const { it, rank, host, remote, tensors, slots, flushes } = c;
  const file = checkpointFile(it + 1, rank);
  const snap = b.barrier({ iteration: it, phase: "checkpoint" });
  const flush = (label: string, object: string, bytes: number, offset: number, after: number) =>
    b.add({
      kind: "write",
      stream: `${remote}:write`,
      iteration: it,
      phase: "flush",
      path: remote,
      object,
      offset,
      bytes,
      label,
      after: [after],
      background: true,
      direct: false,
      ...(c.fsync ? { fsync: true as const } : {}),
    });
  // DeepSpeed saves the module's state first: a small file of its own, on the flush thread
  flush("model_states", modelStatesFile(it + 1, rank), c.modelStatesBytes, 0, snap);
  // the parser thread writes the header while the tensors are copied
  const header = b.add({
    kind: "write",
    stream: `${remote}:header`,
    iteration: it,
    phase: "flush",
    path: remote,
    object: file,
    bytes: c.headerBytes,
    label: "header",
    after: [snap],
    background: true,
    direct: false,
  });
  let at = c.headerBytes, last: number | undefined;
  for (const t of tensors) {
    const slot = slots[flushes.length]!;
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
      ...(c.copyInBackground ? { background: true } : {}),
    });
    last = flush(`${t.name}.flush`, file, t.bytes, at, copy);
    flushes.push(last);
    at += t.bytes;
  }
  return [header, last];
}
