/**
 * `deep-optimizer-states`: Deep Optimizer States, ZeRO-3 with the optimizer
 * state offloaded to host memory, where the GPU, idle during the update,
 * takes a share of the subgroups while the CPU updates the rest.
 *
 * Per rank and iteration:
 * - **backward**: the forward pass (think time), then the backward pass in
 *   one slice per subgroup, last subgroup first, as in zero-infinity; the
 *   gradients stay in host memory, so there is no I/O.
 * - **update**: subgroups in ascending order. Every K-th subgroup (i mod K =
 *   K−1, K = `stride`, default 5: its logged runs' prefetch_optimizer_gap,
 *   {@linkcode DEEP_OPTIMIZER_STATES_STRIDE}) is updated on the GPU: its params, m and v
 *   (12 B/param) are copied host→device (writes to the device path), Adam
 *   runs on the GPU ({@linkcode GPU_ADAM_SPEEDUP} times faster than on the
 *   CPU), and they are copied back device→host (reads of the device path).
 *   Every other subgroup is Adam on the CPU over host memory: think time, no
 *   I/O. The GPU work has its own streams (`gpu`, and the device path's read
 *   and write streams) and the CPU's `compute` stream never waits for it, so
 *   both update at once. Two device buffers: the copy-in of a GPU subgroup
 *   waits for the copy-out of the GPU subgroup two back, so it overlaps the
 *   GPU compute of the one before. Steady state on the device: copy-in(j+1) ‖
 *   gpu(j) ‖ copy-out(j−1), all beside the CPU's Adam.
 *
 * There is no GPU here: the device side is the memory tier (the host path,
 * role `device`), so a host↔device copy is a memory copy, not a PCIe
 * transfer; the results say so. aio with 1 MiB blocks and depth 8 unless
 * `bs`/`iodepth` say otherwise; each rank has its own device, so no
 * node-wide limit.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
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
import { adamStep, openPhase, transferStates } from "./_steps.ts";
import {
  adamMs,
  scaledBytes,
  shardParameters,
  subgroupSizes,
  type TrainingSetup,
} from "./setup.ts";

/** States copied to the device and back for a GPU subgroup (12 B/param in fp32). */
export const DEEP_OPTIMIZER_STATES_STATES = ["params", "m", "v"] as const;
/**
 * Default stride: every 5th subgroup is updated on the GPU — the
 * prefetch_optimizer_gap of Deep Optimizer States' results repository's base
 * configuration (mauryaavinash95/deep-optimizer-states-results,
 * avinash-plot-script.ipynb, `"opt_gaps": 5`) and of its logged 7B and 13B
 * data- and gradient-accumulation scaling, 30B and 70B runs; its model
 * scaling against TwinFlow ran with 2, its gap sweeps 2 to 10.
 */
export const DEEP_OPTIMIZER_STATES_STRIDE = 5;
/**
 * How many times faster Adam runs on the GPU than on the CPU: the GPU time of
 * a subgroup is {@linkcode adamMs} divided by this. An order of magnitude, the
 * gap Deep Optimizer States exploits; an assumption of this model, not a
 * measurement.
 */
export const GPU_ADAM_SPEEDUP = 10;

/** The note every result of this workload carries. */
export const NO_GPU_NOTE =
  "no GPU: the device side is a memory tier (tmpfs); host↔device copies are memory copies, not PCIe";

/** Whether subgroup `i` is updated on the GPU with this stride. */
export function onGpu(i: number, stride: number): boolean {
  return i % stride === stride - 1;
}

function resolveStride(options: WorkloadOptions): number {
  const stride = options.stride ?? DEEP_OPTIMIZER_STATES_STRIDE;
  if (!Number.isInteger(stride) || stride < 1) {
    throw new ConfigError(
      "stride",
      `${stride} is not a stride: use an integer ≥ 1 (every K-th subgroup goes to the GPU)`,
    );
  }
  return stride;
}

/**
 * Builds the deep-optimizer-states programs.
 *
 * @example
 * ```ts
 * import { deepOptimizerStates } from "./deep_optimizer_states.ts";
 * import { resolveSetup } from "./setup.ts";
 * const p = deepOptimizerStates.build(resolveSetup({ model: "7b", scale: 0.001 }), {
 *   host: "host",
 *   local: [],
 * });
 * console.assert(p.ranks.length === 4 && p.paths[0]!.role === "device");
 * ```
 */
export const deepOptimizerStates: WorkloadDefinition = {
  name: "deep-optimizer-states",
  summary:
    "Deep Optimizer States: state in host memory, every K-th subgroup copied to the GPU and updated there",
  needs: ["host"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const device = requirePath("deep-optimizer-states", "host", paths);
    const stride = resolveStride(options);
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, device, stride));
    }
    const sizes = subgroupSizes(setup);
    const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
    const gpu = sizes.filter((_, i) => onGpu(i, stride));
    const cpu = sizes.filter((_, i) => !onGpu(i, stride));
    const copy = gpu.reduce((t, el) => t + DEEP_OPTIMIZER_STATES_STATES.length * state(el), 0);
    return {
      workload: "deep-optimizer-states",
      paths: [storagePath(device, "device", options)],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: {
        shard_parameters: shardParameters(setup),
        subgroups_per_rank: sizes.length,
        stride,
        subgroups_gpu: gpu.length,
        subgroups_cpu: cpu.length,
        gpu_adam_speedup: GPU_ADAM_SPEEDUP,
        copy_in_bytes_per_rank: copy,
        copy_out_bytes_per_rank: copy,
        cpu_adam_ms_per_rank: cpu.reduce((t, el) => t + adamMs(setup, el), 0),
        gpu_adam_ms_per_rank: gpu.reduce((t, el) => t + adamMs(setup, el) / GPU_ADAM_SPEEDUP, 0),
      },
      notes: [
        NO_GPU_NOTE,
        "gradients stay in host memory: the backward phase is think time only",
      ],
    };
  },
};

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  device: string,
  stride: number,
): RankProgram {
  const b = new ProgramBuilder(rank);
  const sizes = subgroupSizes(setup);
  const state = (el: number) => scaledBytes(setup, el * setup.bytesPerState);
  // each phase's barrier waits for the last op of every stream of the phase before
  for (let it = 0; it < totalIterations(setup); it++) {
    // backward: forward pass, then backward slices; gradients stay in host memory
    backwardPhase(b, setup, it, { after: b.lastHeld("phase") });
    // update: CPU subgroups on `compute`, GPU subgroups copied in, updated, copied out
    const s = { b, it, phase: "update" };
    const start = openPhase(b, it, s.phase);
    const copiedOut: number[] = [];
    for (const [i, el] of sizes.entries()) {
      if (!onGpu(i, stride)) {
        adamStep(s, setup, i, el);
        continue;
      }
      // two device buffers: the one of the GPU subgroup two back is free once copied out
      const free = copiedOut[copiedOut.length - 2];
      const states = DEEP_OPTIMIZER_STATES_STATES;
      const copyIn = transferStates(s, "write", device, i, states, state(el), [start, free]);
      const g = adamStep(s, setup, i, el, {
        stream: "gpu",
        speedup: GPU_ADAM_SPEEDUP,
        label: `sg${i}.gpu-adam`,
        after: copyIn,
      });
      copiedOut.push(transferStates(s, "read", device, i, states, state(el), [g]).at(-1)!);
    }
  }
  return b.build();
}
