/**
 * `zero-infinity`: DeepSpeed ZeRO-3 with the optimizer offloaded to NVMe, the
 * baseline every offloading paper measures against.
 *
 * Per rank and iteration:
 * - **backward**: the forward pass (think time), then the backward pass in
 *   one slice per subgroup, last subgroup first (gradients appear from the
 *   last layer back); after each slice the subgroup's fp32 gradients are
 *   written to the local path (4 B/param).
 * - **update**: subgroups in ascending order. Subgroup i's params, m, v and
 *   gradients are read (16 B/param) while subgroup i−1 is updated (reads run
 *   one subgroup ahead); Adam runs on the CPU (think time); params, m and v
 *   are written back (12 B/param) while the next subgroup computes; a
 *   subgroup's update waits until the write of the one two back is done (two
 *   swap buffers). Steady state: read(i+1) ‖ compute(i) ‖ write(i−1).
 *
 * One object per state per subgroup, like DeepSpeed's swap files; aio with
 * 1 MiB blocks and depth 8 unless `bs`/`iodepth` say otherwise. All ranks
 * share the path with no node-wide limit.
 *
 * The phases are exported ({@linkcode zeroInfinityBackward},
 * {@linkcode zeroInfinityUpdate}) for `datastates`, which runs them under its
 * checkpoints.
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
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import {
  adamMs,
  scaledBytes,
  shardParameters,
  subgroupSizes,
  type TrainingSetup,
} from "./setup.ts";

/** States read in the update, in order. */
export const ZERO_INFINITY_READS = ["params", "m", "v", "grad"] as const;
/** States written back by the update. */
export const ZERO_INFINITY_WRITES = ["params", "m", "v"] as const;

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
    const policy = storagePath(local, "local", options);
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) ranks.push(rankProgram(r, setup, local));
    return {
      workload: "zero-infinity",
      paths: [policy],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: zeroInfinityDerived(setup),
      notes: [],
    };
  },
};

/**
 * Notes zero-infinity's swap files, which exist before the first op: params,
 * m and v of every subgroup on `local`.
 */
export function zeroInfinityInitial(b: ProgramBuilder, setup: TrainingSetup, local: string): void {
  for (const [i, el] of subgroupSizes(setup).entries()) {
    const bytes = scaledBytes(setup, el * setup.bytesPerState);
    for (const st of ZERO_INFINITY_WRITES) b.initial(local, `sg${i}.${st}`, bytes);
  }
}

/** What zero-infinity derives from the setup, per rank. */
export function zeroInfinityDerived(setup: TrainingSetup): Record<string, number> {
  const sizes = subgroupSizes(setup);
  const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
  return {
    shard_parameters: shardParameters(setup),
    subgroups_per_rank: sizes.length,
    update_read_bytes_per_rank: sizes.reduce((t, el) => t + 4 * state(el), 0),
    update_write_bytes_per_rank: sizes.reduce((t, el) => t + 3 * state(el), 0),
    gradient_write_bytes_per_rank: sizes.reduce((t, el) => t + state(el), 0),
  };
}

/**
 * Adds zero-infinity's backward phase of iteration `it`: the forward pass,
 * then one backward slice per subgroup, last first, each followed by the
 * write of its gradients to `local`. Its barrier waits for `after`, by
 * default for the last held op of every stream. Returns the id of the last
 * gradient write.
 */
export function zeroInfinityBackward(
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  it: number,
  after?: readonly (number | undefined)[],
): number {
  return backwardPhase(b, setup, it, { after, gradients: local });
}

/**
 * Adds zero-infinity's update phase of iteration `it`: subgroups in
 * ascending order on `local`, reads one subgroup ahead, Adam on the CPU,
 * writes behind with two buffers. Its barrier waits for `after`, by default
 * for the last held op of every stream. Returns the id of the last write,
 * which ends after every other op of the phase.
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
 * console.assert(b.build().ops[last]!.object === "sg16.v");
 * ```
 */
export function zeroInfinityUpdate(
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  it: number,
  after?: readonly (number | undefined)[],
): number {
  const phase = "update";
  const sizes = subgroupSizes(setup);
  const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
  const start = b.barrier({ iteration: it, phase, after });
  const computes: number[] = [];
  const lastWrites: number[] = [];
  for (const [i, el] of sizes.entries()) {
    const reads = ZERO_INFINITY_READS.map((st) =>
      b.add({
        kind: "read",
        stream: `${local}:read`,
        iteration: it,
        phase,
        path: local,
        object: `sg${i}.${st}`,
        bytes: state(el),
        label: `sg${i}.${st}`,
        after: [start, computes[i - 2]],
      })
    );
    const c = b.add({
      kind: "compute",
      stream: "compute",
      iteration: it,
      phase,
      ms: adamMs(setup, el),
      label: `sg${i}.adam`,
      after: [...reads, lastWrites[i - 2]],
    });
    computes.push(c);
    let w = c;
    for (const st of ZERO_INFINITY_WRITES) {
      w = b.add({
        kind: "write",
        stream: `${local}:write`,
        iteration: it,
        phase,
        path: local,
        object: `sg${i}.${st}`,
        bytes: state(el),
        label: `sg${i}.${st}`,
        after: [c],
      });
    }
    lastWrites.push(w);
  }
  return lastWrites[lastWrites.length - 1]!;
}

function rankProgram(rank: number, setup: TrainingSetup, local: string): RankProgram {
  const b = new ProgramBuilder(rank);
  zeroInfinityInitial(b, setup, local);
  // each phase's barrier waits for the last op of the phase before: a write
  // on the local path that ends after every other op of its phase
  let last: number | undefined;
  for (let it = 0; it < totalIterations(setup); it++) {
    last = zeroInfinityBackward(b, setup, local, it, [last]);
    last = zeroInfinityUpdate(b, setup, local, it, [last]);
  }
  return b.build();
}
