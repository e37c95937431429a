/**
 * The steps the optimizer-offloading workloads share: opening a phase once
 * the one before is done, Adam over one subgroup, moving a subgroup's states
 * between host memory and a path (read it in, write it back), and the
 * training loop of a checkpointing system on top of ZeRO-Infinity. Each
 * workload's file keeps only the order and overlap that make it itself.
 *
 * @module
 */

import { isCheckpointIteration, totalIterations, type WorkloadOptions } from "./common.ts";
import type { ProgramBuilder } from "./ops.ts";
import { adamMs, type TrainingSetup } from "./setup.ts";
import { zeroInfinityBackward, zeroInfinityInitial, zeroInfinityUpdate } from "./zero_infinity.ts";

/** Where the next ops go: a rank's builder, the iteration and the phase. */
export interface Step {
  readonly b: ProgramBuilder;
  readonly it: number;
  readonly phase: string;
}

/** Ops waited for (`undefined`: none, e.g. the op two subgroups back at the start). */
export type After = readonly (number | undefined)[];

/**
 * Opens `phase` of iteration `it` once every stream has done the work of the
 * phase before (its last held op since the previous barrier).
 */
export function openPhase(b: ProgramBuilder, it: number, phase: string): number {
  return b.barrier({ iteration: it, phase, after: b.lastHeld("phase") });
}

/** How {@linkcode adamStep} runs. */
export interface AdamOptions {
  readonly after?: After;
  /** Default `compute` (the CPU). */
  readonly stream?: string;
  /** The update runs this many times faster than Adam on the CPU (default 1). */
  readonly speedup?: number;
  /** Default `sg{i}.adam`. */
  readonly label?: string;
}

/** Adam over subgroup `i` of `elements` parameters: one compute op; returns its id. */
export function adamStep(
  s: Step,
  setup: TrainingSetup,
  i: number,
  elements: number,
  o: AdamOptions = {},
): number {
  return s.b.add({
    kind: "compute",
    stream: o.stream ?? "compute",
    iteration: s.it,
    phase: s.phase,
    ms: adamMs(setup, elements) / (o.speedup ?? 1),
    label: o.label ?? `sg${i}.adam`,
    ...(o.after === undefined ? {} : { after: o.after }),
  });
}

/**
 * Moves subgroup `i`'s `states` between host memory and `path`: one read
 * (swap-in) or write (swap-out) of `bytes` per state, object and label
 * `sg{i}.{state}`, on the path's stream of that kind. Returns their ids.
 */
export function transferStates(
  s: Step,
  kind: "read" | "write",
  path: string,
  i: number,
  states: readonly string[],
  bytes: number,
  after: After,
): number[] {
  return states.map((st) =>
    s.b.add({
      kind,
      stream: `${path}:${kind}`,
      iteration: s.it,
      phase: s.phase,
      path,
      object: `sg${i}.${st}`,
      bytes,
      label: `sg${i}.${st}`,
      after,
    })
  );
}

/**
 * ZeRO-Infinity's optimizer offload to `local`, under a checkpointing
 * system: lays the swap files out now and returns what adds one iteration's
 * backward and update phases.
 */
export function zeroInfinityTraining(
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  options: WorkloadOptions,
): (it: number) => void {
  zeroInfinityInitial(b, setup, local, options);
  return (it) => {
    zeroInfinityBackward(b, setup, local, it, undefined, options);
    zeroInfinityUpdate(b, setup, local, it, undefined, options);
  };
}

/**
 * The training loop of a checkpointing system: each iteration's training
 * phases (`train(it)`), then `checkpoint(it)` on every `every`-th iteration.
 */
export function checkpointedTraining(
  setup: TrainingSetup,
  every: number,
  train: (it: number) => void,
  checkpoint: (it: number) => void,
): void {
  for (let it = 0; it < totalIterations(setup); it++) {
    train(it);
    if (isCheckpointIteration(it, every)) checkpoint(it);
  }
}
