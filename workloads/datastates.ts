/**
 * `datastates`: DataStates-LLM's asynchronous checkpoints on top of a
 * ZeRO-Infinity training iteration. A checkpoint is first copied to a pinned
 * host buffer (a snapshot), then flushed lazily to remote storage while
 * training goes on.
 *
 * Per rank and iteration:
 * - **backward** and **update**: `zero-infinity`'s ops on the local path,
 *   built by its {@linkcode zeroInfinityBackward} and
 *   {@linkcode zeroInfinityUpdate}: the forward pass and one backward slice
 *   per subgroup (last first), each writing its gradients (4 B/param); then
 *   subgroups in order, read(i) (params, m, v, grad) after compute(i−2),
 *   compute(i) after its reads and the last write of i−2, params, m, v
 *   written after compute(i). Each phase's barrier waits for the last op of
 *   every stream but the flush's.
 * - **checkpoint**, every `checkpointEvery` iterations ({@linkcode
 *   DATASTATES_CHECKPOINT_EVERY} by default, counted from the first
 *   iteration, warm-up included): a barrier after the update, then the rank's
 *   shard — bf16 weights and fp32 params, m, v: 2 + 3 × 4 = 14 B/param with
 *   4-byte states ({@linkcode checkpointBytesPerParam}) — written to the host
 *   path in one chunk per subgroup (`snapshot.sg{i}`, stream `{host}:write`).
 *   The snapshot blocks training: the next iteration's barrier waits for it.
 *   The host buffer holds one checkpoint, so a snapshot starts only once the
 *   previous checkpoint's flush is done.
 * - **flush**: each chunk written to the remote path (`ckpt.sg{i}`, stream
 *   `{remote}:write`) once its snapshot chunk is in the buffer, as background
 *   ops: they overlap the next iterations' backward and update I/O and do not
 *   hold their phase open.
 *
 * After the last iteration a **drain** barrier waits for the last flush, so
 * the run ends when the last checkpoint is on the remote path (its time
 * counts in the last iteration).
 *
 * Requests are DeepSpeed aio's (1 MiB, depth 8) on every path unless
 * `bs`/`iodepth` say otherwise.
 *
 * @module
 */

import {
  requirePath,
  storagePath,
  totalIterations,
  type WorkloadDefinition,
  type WorkloadOptions,
  type WorkloadPaths,
} from "./common.ts";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import { scaledBytes, shardParameters, subgroupSizes, type TrainingSetup } from "./setup.ts";
import {
  zeroInfinityBackward,
  zeroInfinityDerived,
  zeroInfinityInitial,
  zeroInfinityUpdate,
} from "./zero_infinity.ts";

/** Checkpoint every this many iterations unless `options.checkpointEvery` says otherwise. */
export const DATASTATES_CHECKPOINT_EVERY = 1;

/** Bytes a checkpoint holds per parameter: bf16 weights (2) and params, m, v (3 states). */
export function checkpointBytesPerParam(s: TrainingSetup): number {
  return 2 + 3 * s.bytesPerState;
}

/** Whether iteration `it` (from 0, warm-up first) ends with a checkpoint. */
export function isCheckpointIteration(it: number, every: number): boolean {
  return (it + 1) % every === 0;
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
 *   local: ["local"],
 *   remote: "remote",
 * });
 * console.assert(p.ranks.length === 4 && p.derived.checkpoint_bytes_per_param === 14);
 * ```
 */
export const datastates: WorkloadDefinition = {
  name: "datastates",
  summary:
    "DataStates-LLM: zero-infinity with checkpoints snapshotted to host memory, flushed to remote in the background",
  needs: ["host", "local", "remote"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const local = requirePath("datastates", "local", paths);
    const host = requirePath("datastates", "host", paths);
    const remote = requirePath("datastates", "remote", paths);
    const every = options.checkpointEvery ?? DATASTATES_CHECKPOINT_EVERY;
    if (!Number.isInteger(every) || every < 1) {
      throw new RangeError(`checkpointEvery ${every} is not an integer ≥ 1`);
    }
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, { local, host, remote }, every));
    }
    const sizes = subgroupSizes(setup);
    const shard = shardParameters(setup);
    const perParam = checkpointBytesPerParam(setup);
    const checkpoints = Array.from({ length: totalIterations(setup) }, (_, it) => it)
      .filter((it) => isCheckpointIteration(it, every)).length;
    return {
      workload: "datastates",
      paths: [
        storagePath(local, "local", options),
        storagePath(host, "host", options),
        storagePath(remote, "remote", options),
      ],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: {
        ...zeroInfinityDerived(setup),
        checkpoint_bytes_per_param: perParam,
        checkpoint_bytes_per_rank_unscaled: shard * perParam,
        checkpoint_bytes_per_rank: sizes.reduce(
          (t, el) => t + scaledBytes(setup, el * perParam),
          0,
        ),
        checkpoint_chunks_per_rank: sizes.length,
        checkpoint_every: every,
        checkpoints,
      },
      notes: [
        "the snapshot blocks training: the next iteration starts when it is in host memory " +
        "(DataStates-LLM can overlap it with the next forward and backward)",
        "one host buffer: a snapshot waits until the previous checkpoint is flushed",
        "every checkpoint overwrites the same remote objects; the flush reads of host memory are not modelled",
        "the last iteration ends when its checkpoint is on the remote path (drain)",
      ],
    };
  },
};

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  paths: { local: string; host: string; remote: string },
  every: number,
): RankProgram {
  const { local, host, remote } = paths;
  const b = new ProgramBuilder(rank);
  const sizes = subgroupSizes(setup);
  const chunk = (el: number) => scaledBytes(setup, el * checkpointBytesPerParam(setup));
  zeroInfinityInitial(b, setup, local);
  // every barrier waits for the last held op of every stream: all but the flush,
  // which runs in the background
  const iterations = totalIterations(setup);
  let lastFlush: number | undefined;
  for (let it = 0; it < iterations; it++) {
    zeroInfinityBackward(b, setup, local, it);
    zeroInfinityUpdate(b, setup, local, it);
    if (!isCheckpointIteration(it, every)) continue;
    // checkpoint: the updated shard into the host buffer, once the last flush has left it
    let phase = "checkpoint";
    const snap = b.barrier({ iteration: it, phase });
    const snapshots = sizes.map((el, i) =>
      b.add({
        kind: "write",
        stream: `${host}:write`,
        iteration: it,
        phase,
        path: host,
        object: `snapshot.sg${i}`,
        bytes: chunk(el),
        label: `sg${i}.snapshot`,
        after: [snap, i === 0 ? lastFlush : undefined],
      })
    );
    // flush: chunk by chunk to the remote path, in the background
    phase = "flush";
    for (const [i, el] of sizes.entries()) {
      lastFlush = b.add({
        kind: "write",
        stream: `${remote}:write`,
        iteration: it,
        phase,
        path: remote,
        object: `ckpt.sg${i}`,
        bytes: chunk(el),
        label: `sg${i}.flush`,
        after: [snapshots[i]],
        background: true,
      });
    }
  }
  // drain: the run ends when the last checkpoint is on the remote path
  b.barrier({ iteration: iterations - 1, phase: "drain", after: [...b.lastHeld(), lastFlush] });
  return b.build();
}
