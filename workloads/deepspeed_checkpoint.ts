/**
 * `deepspeed-checkpoint`: DeepSpeed ZeRO-Infinity saving its own checkpoint,
 * the baseline an asynchronous checkpoint engine is measured against. With
 * the optimizer offloaded to NVMe, DeepSpeed's engine (runtime/engine.py,
 * save_checkpoint) copies the rank's swap folder to the checkpoint
 * directory with shutil's copytree, gradient files left out, and training
 * waits for the copy. (docs/workloads.md cites the file and lines.)
 *
 * Per rank and iteration:
 * - **forward**, **backward** and **update**: `zero-infinity`'s ops on the
 *   local path ({@linkcode zeroInfinityBackward}, {@linkcode zeroInfinityUpdate}),
 *   with the same model and DeepSpeed config options.
 * - **checkpoint**, every `checkpointEvery` iterations
 *   ({@linkcode DEEPSPEED_CHECKPOINT_EVERY} by default, counted from the
 *   first iteration, warm-up included): a barrier after the update, then
 *   each swap file of the rank's optimizer folder but the gradients — the
 *   fp32 params and the optimizer's states of every swapped subgroup
 *   (`0_51.tensor.swp`, `exp_avg-0_51.tensor.swp`, `exp_avg_sq-0_51.tensor.swp`:
 *   3 × 4 = 12 B/param with Adam) — read from the local path and written to
 *   `global_step{N}/offloaded_tensors/rank{r}/` on the remote path (N the step just taken, iteration + 1; a new
 *   directory per checkpoint), one file after the other on one stream
 *   (`copy`), buffered (copytree copies with sendfile, through the page
 *   cache). The ops hold the phase: the next iteration's barrier waits for
 *   the whole copy (the blocking copy is the point of the baseline).
 *
 * Requests are DeepSpeed aio's (1 MiB, depth 8) on the local path, as in
 * `zero-infinity`, and the copy uses the same policy there; the remote path
 * takes one request at a time (a synchronous sendfile), unless
 * `bs`/`iodepth` say otherwise.
 *
 * @module
 */

import {
  checkpointCount,
  requirePath,
  storagePath,
  type WorkloadDefinition,
  type WorkloadOptions,
  type WorkloadPaths,
} from "./common.ts";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import { shardParameters, type TrainingSetup } from "./setup.ts";
import { optimizerFolder, paramsFile, stateFile, type Zero3Subgroup } from "./zero3.ts";
import {
  checkedLayout,
  zeroInfinityDerived,
  zeroInfinityPath,
  zeroInfinitySettings,
} from "./zero_infinity.ts";
import { checkpointedTraining, zeroInfinityTraining } from "./_steps.ts";

/** Checkpoint every this many iterations unless `options.checkpointEvery` says otherwise. */
export const DEEPSPEED_CHECKPOINT_EVERY = 1;

/** The copy of a swap file (`exp_avg-0_51.tensor.swp`) in the checkpoint of rank `rank` at step `step`. */
export function offloadedTensorFile(step: number, rank: number, swapFile: string): string {
  return `global_step${step}/offloaded_tensors/rank${rank}/${swapFile}`;
}

/** The swap files the checkpoint copies: every state file of a swapped subgroup, in order. */
function copiedFiles(sg: Zero3Subgroup, states: readonly string[]): string[] {
  return [paramsFile(sg), ...states.map((st) => stateFile(sg, st))];
}

/**
 * Builds the deepspeed-checkpoint programs.
 *
 * @example
 * ```ts
 * import { deepspeedCheckpoint } from "./deepspeed_checkpoint.ts";
 * import { resolveSetup } from "./setup.ts";
 * const p = deepspeedCheckpoint.build(resolveSetup({ model: "7b", scale: 0.001 }), {
 *   local: ["local"],
 *   remote: "remote",
 * });
 * console.assert(p.derived.checkpoint_bytes_per_param === 12);
 * ```
 */
export const deepspeedCheckpoint: WorkloadDefinition = {
  name: "deepspeed-checkpoint",
  summary:
    "DeepSpeed's own checkpoint of ZeRO-Infinity: the NVMe swap files copied to the checkpoint path, training waiting",
  needs: ["local", "remote"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const local = requirePath("deepspeed-checkpoint", "local", paths);
    const remote = requirePath("deepspeed-checkpoint", "remote", paths);
    const every = options.checkpointEvery ?? DEEPSPEED_CHECKPOINT_EVERY;
    if (!Number.isInteger(every) || every < 1) {
      throw new RangeError(`checkpointEvery ${every} is not an integer ≥ 1`);
    }
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, local, remote, every, options));
    }
    // the swap files zero-infinity has: the swapped subgroups' params and optimizer states
    const settings = zeroInfinitySettings(options);
    const swapped = checkedLayout(setup, settings).subgroups.filter((sg) => sg.swapped);
    const files = 1 + settings.states.length;
    const perParam = files * setup.bytesPerState;
    const checkpoints = checkpointCount(setup, every);
    return {
      workload: "deepspeed-checkpoint",
      paths: [
        zeroInfinityPath(local, options, settings),
        storagePath(remote, "remote", options, { iodepth: 1 }),
      ],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: {
        ...zeroInfinityDerived(setup, options),
        checkpoint_bytes_per_param: perParam,
        checkpoint_bytes_per_rank_unscaled: shardParameters(setup) * perParam,
        checkpoint_bytes_per_rank: swapped.reduce((t, sg) => t + files * sg.stateBytes, 0),
        checkpoint_files_per_rank: files * swapped.length,
        checkpoint_every: every,
        checkpoints,
      },
      notes: [
        "the copy blocks training: the next iteration starts when every swap file is on the " +
        "remote path (copytree in save_checkpoint)",
        "swap files copied one after the other, each read then written, buffered; gradient files " +
        "are not copied; the small optim_states and model_states files are not modelled",
      ],
    };
  },
};

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  local: string,
  remote: string,
  every: number,
  options: WorkloadOptions,
): RankProgram {
  const b = new ProgramBuilder(rank);
  const settings = zeroInfinitySettings(options);
  const swapped = checkedLayout(setup, settings).subgroups.filter((sg) => sg.swapped);
  // each phase's barrier waits for the last held op of every stream, the copy's included
  const train = zeroInfinityTraining(b, setup, local, options);
  checkpointedTraining(setup, every, train, (it) => {
    const phase = "checkpoint";
    const open = b.barrier({ iteration: it, phase });
    for (const sg of swapped) {
      for (const swap of copiedFiles(sg, settings.states)) {
        b.add({
          kind: "read",
          stream: "copy",
          iteration: it,
          phase,
          path: local,
          object: `${optimizerFolder(rank)}/${swap}`,
          bytes: sg.stateBytes,
          label: `${swap}.copy-in`,
          after: [open],
          direct: false,
        });
        b.add({
          kind: "write",
          stream: "copy",
          iteration: it,
          phase,
          path: remote,
          object: offloadedTensorFile(it + 1, rank, swap),
          bytes: sg.stateBytes,
          label: `${swap}.copy-out`,
          direct: false,
        });
      }
    }
  });
  return b.build();
}
