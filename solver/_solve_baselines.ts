/**
 * The baselines solve.ts puts beside its plan, on the same figures:
 * ZeRO-Offload (every state in host memory), ZeRO-Infinity (every subgroup
 * on the node-local path) and MLP-Offload's fixed split.
 *
 * @module
 */

import { shardParameters } from "../workloads/setup.ts";
import { predictPhase } from "./model.ts";
import { simulateInfinity } from "./_pipeline.ts";
import type { PlannedPath, Prediction } from "../schema/plan.ts";
import { gb, hostMemoryUse, SWAP_BUFFER_COUNT } from "./host_memory.ts";
import { concurrentBandwidth } from "./concurrency.ts";
import type { SolverTier } from "./solver_tier.ts";
import {
  MLP_OFFLOAD_CACHE_SUBGROUPS,
  MLP_OFFLOAD_REMOTE_RATIO,
  remoteSubgroups,
} from "../workloads/mlp_offload.ts";
import type { SolveInput } from "./_solve_input.ts";
import { ONE, ratesAt, ratesOf, type SolveContext, tierAt } from "./_solve_context.ts";
import { closedOf, simulated, withSimulation } from "./_solve_place.ts";
import { reserveText } from "./_solve_explain.ts";

/** Bytes of one fp32 state (params, m, v or gradients) of every rank on the node. */
function nodeStateBytes(input: SolveInput): number {
  const s = input.setup;
  return s.bytesPerState * shardParameters(s) * s.ranksPerNode;
}

/** `bytes` in GiB to `digits` decimals, without the unit. */
function gib(bytes: number, digits: number): string {
  return (bytes / 2 ** 30).toFixed(digits);
}

/** `p` marked infeasible, `note` saying why. */
function infeasible(p: Prediction, note: string): Prediction {
  return { ...p, feasible: false, note };
}

/** ZeRO-Offload: every state in host memory, no I/O; feasible when it fits. */
export function baselineOffload(
  input: SolveInput,
  computeS: number,
  available: number,
): Prediction {
  const state = nodeStateBytes(input);
  // fp32 params, m, v and gradients of every rank
  const host_memory = hostMemoryUse({
    gradientsBytes: state,
    gradients: "host",
    stateBytes: 3 * state,
    bufferCount: 0,
    bufferBytes: 0,
  }, available);
  const p = { ...predictPhase({ paths: [], computeS }), host_memory };
  if (!host_memory.fits) {
    return infeasible(
      p,
      `needs ${gib(host_memory.total_bytes, 0)} GiB of host memory for the optimizer state and ` +
        `gradients, ${gib(available, 0)} GiB is available${reserveText(input)}`,
    );
  }
  return p;
}

/**
 * ZeRO-Infinity: every subgroup on the node-local path, gradients too, all
 * ranks at once: the path at its total with R processes reading and R
 * writing (each rank's share the total at R over R), as the simulation runs
 * it.
 */
export function baselineInfinity(
  input: SolveInput,
  computeS: number,
  available: number,
  buffers: number,
): Prediction {
  const s = input.setup;
  const R = s.ranksPerNode;
  const t = input.local;
  const state = nodeStateBytes(input);
  const closed = predictPhase({
    paths: [{
      rates: ratesOf(tierAt(t, R, R), "local", 1, 1),
      readBytes: 4 * state,
      writeBytes: 3 * state,
    }],
    computeS,
  });
  const host_memory = hostMemoryUse({
    gradientsBytes: 0,
    gradients: "swapped",
    stateBytes: 0,
    bufferCount: SWAP_BUFFER_COUNT,
    bufferBytes: buffers,
  }, available);
  const p = withSimulation({ ...closed, host_memory }, simulateInfinity(s, { local: t }));
  if (!host_memory.fits) {
    return infeasible(
      p,
      `its pinned swap buffers need ${gib(buffers, 1)} GiB of host memory, ` +
        `${gib(available, 1)} GiB is available${reserveText(input)}`,
    );
  }
  const need = 4 * state;
  if (t.capacityBytes !== undefined && need > t.capacityBytes) {
    return infeasible(
      p,
      `needs ${gib(need, 0)} GiB on ${t.label}, it has ${gib(t.capacityBytes, 0)} GiB`,
    );
  }
  return p;
}

/**
 * MLP-Offload's fixed ratio on `like`'s paths, simulated with one reader and
 * one writer per path node-wide, as its locks allow; infeasible where it
 * does not fit in host memory or a path's capacity.
 */
export function mlpOffloadPrediction(c: SolveContext, like: readonly PlannedPath[]): Prediction {
  const { tiers } = c;
  const fixed = mlpOffloadPaths(like, tiers, c.S, c.maxCached);
  const p = simulated(
    c,
    fixed,
    closedOf(c, fixed, ratesAt(c, tiers.map(() => ONE))),
    c.setup.adamParamsPerSec,
  );
  if (!p.host_memory!.fits) {
    p.feasible = false;
    p.note = `MLP-Offload's fixed ratio needs ${gb(p.host_memory!.total_bytes)} of host memory, ${
      gb(p.host_memory!.available_bytes)
    } is available`;
  }
  const over = fixed.find((f, i) => {
    const cap = tiers[i]!.capacityBytes;
    return cap !== undefined && f.subgroups > Math.floor(cap / c.subgroupNode);
  });
  return over
    ? infeasible(
      p,
      `MLP-Offload's fixed ratio puts ${over.subgroups} subgroups per rank on ${over.tier}, ` +
        `more than its capacity holds`,
    )
    : p;
}

/**
 * MLP-Offload as it runs by default (workloads/mlp_offload.ts): one subgroup
 * in three on the remote path, the last {@linkcode MLP_OFFLOAD_CACHE_SUBGROUPS}
 * of each path cached, as far as the host cache holds them (the local path's
 * first), one reader and one writer per path node-wide (its locks); `like`
 * gives the paths' tiers and request sizes, `tiers` their bandwidths.
 */
function mlpOffloadPaths(
  like: readonly PlannedPath[],
  tiers: readonly SolverTier[],
  subgroups: number,
  maxCached: number,
): PlannedPath[] {
  const remote = remoteSubgroups(subgroups, MLP_OFFLOAD_REMOTE_RATIO).filter(Boolean).length;
  const n = [subgroups - remote, remote];
  let room = maxCached;
  return like.map((p, i) => {
    const cached = Math.min(MLP_OFFLOAD_CACHE_SUBGROUPS, n[i]!, room);
    room -= cached;
    return {
      ...p,
      subgroups: n[i]!,
      ratio: n[i]! / subgroups,
      cache_subgroups: cached,
      readers: 1,
      writers: 1,
      concurrency_basis: [
        concurrentBandwidth(tiers[i]!, "read", 1).basis,
        concurrentBandwidth(tiers[i]!, "write", 1).basis,
      ],
    };
  });
}
