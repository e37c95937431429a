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
 * @module
 */

import {
  forwardBackwardMs,
  requirePath,
  storagePath,
  totalIterations,
  type WorkloadDefinition,
  type WorkloadOptions,
  type WorkloadPaths,
} from "./_common.ts";
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
    const sizes = subgroupSizes(setup);
    const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
    return {
      workload: "zero-infinity",
      paths: [policy],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: {
        shard_parameters: shardParameters(setup),
        subgroups_per_rank: sizes.length,
        update_read_bytes_per_rank: sizes.reduce((t, el) => t + 4 * state(el), 0),
        update_write_bytes_per_rank: sizes.reduce((t, el) => t + 3 * state(el), 0),
        gradient_write_bytes_per_rank: sizes.reduce((t, el) => t + state(el), 0),
      },
      notes: [],
    };
  },
};

function rankProgram(rank: number, setup: TrainingSetup, local: string): RankProgram {
  const b = new ProgramBuilder(rank);
  const sizes = subgroupSizes(setup);
  const shard = shardParameters(setup);
  const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
  const fb = forwardBackwardMs(setup);
  const readStream = `${local}:read`;
  const writeStream = `${local}:write`;
  for (const [i, el] of sizes.entries()) {
    for (const st of ZERO_INFINITY_WRITES) b.initial(local, `sg${i}.${st}`, state(el));
  }
  let pending: number[] = [];
  for (let it = 0; it < totalIterations(setup); it++) {
    // backward: forward pass, then backward slices that each release a gradient
    let phase = "backward";
    const open = b.add({
      kind: "barrier",
      stream: "compute",
      iteration: it,
      phase,
      label: phase,
      after: pending,
    });
    b.add({
      kind: "compute",
      stream: "compute",
      iteration: it,
      phase,
      ms: fb.forward,
      label: "forward",
      after: [open],
    });
    let lastGrad: number | undefined;
    for (let i = sizes.length - 1; i >= 0; i--) {
      const el = sizes[i]!;
      const slice = b.add({
        kind: "compute",
        stream: "compute",
        iteration: it,
        phase,
        ms: (fb.backward * el) / shard,
        label: `sg${i}.backward`,
      });
      lastGrad = b.add({
        kind: "write",
        stream: writeStream,
        iteration: it,
        phase,
        path: local,
        object: `sg${i}.grad`,
        bytes: state(el),
        label: `sg${i}.grad`,
        after: [slice],
      });
    }
    // update: read ahead one subgroup, Adam, write behind with two buffers
    phase = "update";
    const start = b.add({
      kind: "barrier",
      stream: "compute",
      iteration: it,
      phase,
      label: phase,
      after: [lastGrad],
    });
    const computes: number[] = [];
    const lastWrites: number[] = [];
    for (const [i, el] of sizes.entries()) {
      const reads = ZERO_INFINITY_READS.map((st) =>
        b.add({
          kind: "read",
          stream: readStream,
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
          stream: writeStream,
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
    pending = [lastWrites[lastWrites.length - 1]!];
  }
  return b.build();
}
