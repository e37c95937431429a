/**
 * The update phase of one run of an optimizer-offloading workload, predicted
 * on a profile: the workload's own program for the run's setup and options
 * (workloads/zero_infinity.ts, mlp_offload.ts), stepped through the
 * simulation (solver/simulate.ts) at the rates the profile gives its tiers —
 * each path at its concurrency curve's total for the ranks in flight, the
 * mixed figures while it reads and writes at once, the contention matrix
 * between the paths — as a plan's predictions are made, but for settings a
 * plan does not choose (a published run's buffer_count, locks, pipelining).
 *
 * `bandwidthScale` multiplies every bandwidth of the profile (one factor for
 * all tiers, directions and process counts): what a calibration on one
 * published run fits, and nothing else.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import type { Profile } from "../schema/profile.ts";
import type { WorkloadOptions } from "../workloads/common.ts";
import { workloadByName } from "../workloads/registry.ts";
import type { TrainingSetup } from "../workloads/setup.ts";
import { type SimulatedUpdate, simulateProgram } from "./_pipeline.ts";
import { asSolverTier, fastest, togetherLookup } from "./planner.ts";
import { slowdownLookup } from "./slowdown.ts";
import type { SolverTier, TogetherLookup } from "./solver_tier.ts";

/** A run to predict: the workload, its setup and options. */
export interface RunToPredict {
  readonly workload: "zero-infinity" | "mlp-offload";
  readonly setup: TrainingSetup;
  readonly options: WorkloadOptions;
}

/** A predicted update phase and the tiers it ran on. */
export interface PredictedUpdate extends SimulatedUpdate {
  readonly local: string;
  readonly remote?: string;
}

/** `t` with every bandwidth (plain, mixed, each curve point) times `s`. */
export function scaledTier(t: SolverTier, s: number): SolverTier {
  const by = (x: number | undefined) => x === undefined ? undefined : x * s;
  return {
    ...t,
    readBw: t.readBw * s,
    writeBw: t.writeBw * s,
    ...(t.mixedReadBw !== undefined ? { mixedReadBw: t.mixedReadBw * s } : {}),
    ...(t.mixedWriteBw !== undefined ? { mixedWriteBw: t.mixedWriteBw * s } : {}),
    ...(t.concurrency
      ? {
        concurrency: t.concurrency.map((c) => ({
          ...c,
          points: c.points.map((p) => ({
            processes: p.processes,
            read_bw_bytes: p.read_bw_bytes * s,
            write_bw_bytes: p.write_bw_bytes * s,
            ...(p.mixed_read_bw_bytes !== undefined
              ? { mixed_read_bw_bytes: by(p.mixed_read_bw_bytes)! }
              : {}),
            ...(p.mixed_write_bw_bytes !== undefined
              ? { mixed_write_bw_bytes: by(p.mixed_write_bw_bytes)! }
              : {}),
          })),
        })),
      }
      : {}),
  };
}

/** The profile's `together` rates times `s`. */
function scaledTogether(look: TogetherLookup, s: number): TogetherLookup {
  return (tier, other) => {
    const x = look(tier, other);
    return x && {
      readBw: x.readBw * s,
      writeBw: x.writeBw * s,
      ...(x.at ? { at: { ...x.at, readBw: x.at.readBw * s, writeBw: x.at.writeBw * s } } : {}),
    };
  };
}

/**
 * Predicts the update phase of `run` on `profile` (its fastest file tier the
 * local path, its fastest pfs or s3 tier the remote one), every bandwidth
 * times `bandwidthScale` (default 1).
 *
 * @throws {ConfigError} when the profile lacks a tier the workload needs.
 *
 * @example
 * ```ts ignore
 * const p = predictUpdate(await readProfile("results/reference/mlpoffload-artifact-4gpu-nvme-vast.json"), {
 *   workload: "mlp-offload", setup: resolveSetup({ model: "llama2-70b" }), options: { bufferCount: 25 },
 * });
 * console.log(p.update_s);
 * ```
 */
export function predictUpdate(
  profile: Profile,
  run: RunToPredict,
  bandwidthScale = 1,
): PredictedUpdate {
  const local = fastest(profile, ["file"]);
  if (!local) throw new ConfigError("profile", `${profile.source} has no file tier`);
  const remote = run.workload === "mlp-offload" ? fastest(profile, ["pfs", "s3"]) : undefined;
  if (run.workload === "mlp-offload" && !remote) {
    throw new ConfigError("profile", `${profile.source} has no pfs or s3 tier for mlp-offload`);
  }
  const program = workloadByName(run.workload).build(
    run.setup,
    { local: ["local"], ...(remote ? { remote: "remote" } : {}) },
    run.options,
  );
  const sim = simulateProgram(program, {
    local: scaledTier(asSolverTier(local), bandwidthScale),
    ...(remote ? { remote: scaledTier(asSolverTier(remote), bandwidthScale) } : {}),
    slowdown: slowdownLookup(profile),
    together: scaledTogether(togetherLookup(profile), bandwidthScale),
  });
  return { ...sim, local: local.label, ...(remote ? { remote: remote.label } : {}) };
}
