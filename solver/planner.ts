/**
 * From a profile and a training setup to a plan document: picks the tiers
 * (the fastest node-local file tier, the fastest remote one), runs the
 * solver, and adds the exports training accepts.
 *
 * @module
 */

import { ConfigError, errorLine } from "../core/errors.ts";
import { describeSetup, type TrainingSetup } from "../workloads/setup.ts";
import {
  deepspeedConfig,
  type DeepSpeedVersion,
  DEFAULT_DEEPSPEED_VERSION,
  mlpOffloadSettings,
} from "./export.ts";
import { planActivations } from "./activations.ts";
import { PLAN_SCHEMA, PLAN_SCHEMA_ID, type PlanDocument } from "../schema/plan.ts";

import { solve } from "./solve.ts";
import {
  DEFAULT_HOST_RESERVE,
  type HostReserve,
  parseHostReserve,
  reserveBytes,
} from "./host_memory.ts";
import type { SolverTier, TogetherLookup } from "./solver_tier.ts";
import type { Profile, ProfileTier } from "../schema/profile.ts";
import { slowdownLookup, togetherAtOf, togetherOf } from "./slowdown.ts";
import { profileAtNodes } from "./remote_share.ts";
import type { NodesSweepPoint, Prediction, RemoteShareUsed } from "../schema/plan.ts";

/** Options of {@linkcode makePlan}. */
export interface PlanOptions {
  /** Host memory of the node the optimizer state may use as cache, bytes. */
  readonly hostCacheBytes: number;
  /**
   * Host memory held back for everything but the optimizer state, gradients
   * and swap buffers (default {@linkcode DEFAULT_HOST_RESERVE} of the node's).
   */
  readonly hostReserve?: HostReserve;
  readonly deepspeedVersion?: DeepSpeedVersion;
  /** CPU Adam rate of a rank, parameters/s: over the profile's, which is over the setup's. */
  readonly adamRate?: number;
  /** Directories of the paths on the training nodes, by path name (default: the profile's). */
  readonly dirs?: Readonly<Record<string, string>>;
  /**
   * Nodes of the job sharing the remote tiers (default 1): each remote tier
   * is planned with its per-node share at this count (solver/remote_share.ts).
   */
  readonly nodes?: number;
  /**
   * Node counts to plan for besides (`plan --nodes 1,2,4,8`): the document
   * gets a `nodes_sweep` entry for each; its placement stays the one at `nodes`.
   */
  readonly nodesSweep?: readonly number[];
}

/** A profile's tier as the solver reads it. */
export function asSolverTier(t: ProfileTier): SolverTier {
  return {
    label: t.label,
    readBw: t.read_bw_bytes,
    writeBw: t.write_bw_bytes,
    bs: t.bs,
    iodepth: t.iodepth,
    ...(t.capacity_bytes !== undefined ? { capacityBytes: t.capacity_bytes } : {}),
    ...(t.mixed_read_bw_bytes !== undefined ? { mixedReadBw: t.mixed_read_bw_bytes } : {}),
    ...(t.mixed_write_bw_bytes !== undefined ? { mixedWriteBw: t.mixed_write_bw_bytes } : {}),
    ...(t.concurrency && t.concurrency.length > 0 ? { concurrency: t.concurrency } : {}),
  };
}

/** The tier of these kinds that moves a subgroup fastest (read + write time), if any. */
export function fastest(profile: Profile, kinds: readonly string[]): ProfileTier | undefined {
  const cost = (t: ProfileTier) => 1 / t.read_bw_bytes + 1 / t.write_bw_bytes;
  return Object.values(profile.tiers)
    .filter((t) => kinds.includes(t.kind))
    .sort((a, b) => cost(a) - cost(b))[0];
}

/**
 * Plans `setup` on the node `profile` describes.
 *
 * @throws {ConfigError} when the profile has no node-local file tier.
 *
 * @example
 * ```ts ignore
 * const plan = await makePlan(await readProfile("results/reference/polaris-4gpu-nvme-lustre.json"),
 *   resolveSetup({ model: "70b" }), { hostCacheBytes: 64 * 2 ** 30 });
 * console.log(plan.predictions.plan.update_s);
 * ```
 */
export async function makePlan(
  profile: Profile,
  setup: TrainingSetup,
  opts: PlanOptions,
): Promise<PlanDocument> {
  const nodes = opts.nodes ?? 1;
  const { solved, local, adamRate, shares } = await solveAt(profile, setup, opts, nodes);
  const cached = solved.paths.reduce((t, p) => t + p.cache_subgroups, 0);
  const plan: PlanDocument = {
    $schema: PLAN_SCHEMA_ID,
    schema: PLAN_SCHEMA,
    created: new Date().toISOString(),
    profile: {
      source: profile.source,
      host: profile.host_name,
      tiers: Object.values(profile.tiers).map((t) => `${t.label}:${t.path ?? ""}`),
    },
    setup: describeSetup({ ...setup, adamParamsPerSec: adamRate }),
    nodes,
    ...(Object.keys(shares).length > 0 ? { remote_share: shares } : {}),
    inputs: {
      host_cache_bytes: opts.hostCacheBytes,
      host_memory_bytes: profile.host.memory_bytes,
      host_reserve_bytes: hostReserveOf(profile, opts),
      cpu_adam_params_per_s: adamRate,
      adam_rate_from: opts.adamRate !== undefined
        ? "option"
        : profile.host.cpu_adam_params_per_s !== undefined
        ? "profile"
        : "default",
      solver_status: solved.solver.status,
      solver_seconds: solved.solver.seconds,
    },
    placement: {
      host_subgroups: 0,
      paths: solved.paths,
      order: cached > 0 ? "alternating" : "ascending",
      ...(solved.dosStride !== undefined ? { dos_stride: solved.dosStride } : {}),
    },
    predictions: planTimelineOnly(solved.predictions),
    activations: planActivations(setup, local.read_bw_bytes, local.write_bw_bytes),
    why: solved.why,
    exports: { deepspeed: {}, mlp_offload: {} },
  };
  const version = opts.deepspeedVersion ?? DEFAULT_DEEPSPEED_VERSION;
  const exportOpts = { deepspeedVersion: version, ...(opts.dirs ? { dirs: opts.dirs } : {}) };
  plan.exports.deepspeed = exported(() => deepspeedConfig(plan, exportOpts));
  plan.exports.mlp_offload = exported(() => mlpOffloadSettings(plan, exportOpts));
  if (opts.nodesSweep && opts.nodesSweep.length > 0) {
    const sweep: NodesSweepPoint[] = [];
    for (const n of opts.nodesSweep) {
      const at = n === nodes ? { solved, shares } : await solveAt(profile, setup, opts, n);
      sweep.push(sweepPoint(n, at.solved, at.shares));
    }
    plan.nodes_sweep = sweep;
  }
  return plan;
}

/** The solver's answer for `setup` at `nodes` nodes, with the tiers and rates it used. */
async function solveAt(
  original: Profile,
  setup: TrainingSetup,
  opts: PlanOptions,
  nodes: number,
) {
  const { profile, shares } = profileAtNodes(original, nodes);
  const local = fastest(profile, ["file"]);
  if (!local) {
    throw new ConfigError(
      "profile",
      `${profile.source} has no file tier: the plan needs node-local storage measured (tiers: ${
        Object.keys(profile.tiers).join(", ") || "none"
      })`,
    );
  }
  const remote = fastest(profile, ["pfs", "s3"]);
  const adamRate = opts.adamRate ?? profile.host.cpu_adam_params_per_s ?? setup.adamParamsPerSec;
  const solved = await solve({
    setup: { ...setup, adamParamsPerSec: adamRate },
    local: asSolverTier(local),
    ...(remote ? { remote: asSolverTier(remote) } : {}),
    hostCacheBytes: opts.hostCacheBytes,
    hostMemoryBytes: profile.host.memory_bytes,
    hostReserveBytes: hostReserveOf(profile, opts),
    slowdown: slowdownLookup(profile),
    together: togetherLookup(profile),
    ...(profile.host.pcie_bytes_per_s !== undefined &&
        profile.host.gpu_adam_params_per_s !== undefined
      ? {
        gpu: {
          pcieBytesPerS: profile.host.pcie_bytes_per_s,
          adamParamsPerS: profile.host.gpu_adam_params_per_s,
        },
      }
      : {}),
  });
  return { solved, local, remote, adamRate, shares };
}

/** The profile's measured `together` rates of a pair of tiers, as the solver reads them. */
export function togetherLookup(profile: Profile): TogetherLookup {
  return (tier, other) => {
    const x = togetherOf(profile, tier, other);
    const at = togetherAtOf(profile, tier, other);
    return x && {
      readBw: x.read_bw_bytes,
      writeBw: x.write_bw_bytes,
      ...(at
        ? { at: { processes: at.processes, readBw: at.read_bw_bytes, writeBw: at.write_bw_bytes } }
        : {}),
    };
  };
}

/** The reserve of `opts` on the profile's node, bytes. */
function hostReserveOf(profile: Profile, opts: PlanOptions): number {
  const reserve = opts.hostReserve ?? parseHostReserve(DEFAULT_HOST_RESERVE);
  return reserveBytes(reserve, profile.host.memory_bytes);
}

/** One count of a sweep, from its solution. */
/** The predictions with the simulated timeline kept for the plan alone (the baselines' would only add weight). */
function planTimelineOnly(p: PlanDocument["predictions"]): PlanDocument["predictions"] {
  const drop = (x: Prediction): Prediction => {
    const { timeline: _, ...rest } = x;
    return rest;
  };
  return {
    ...p,
    zero_offload: drop(p.zero_offload),
    zero_infinity: drop(p.zero_infinity),
    ...(p.mlp_offload ? { mlp_offload: drop(p.mlp_offload) } : {}),
  };
}

function sweepPoint(
  nodes: number,
  solved: Awaited<ReturnType<typeof solve>>,
  shares: Record<string, RemoteShareUsed>,
): NodesSweepPoint {
  const total = solved.paths.reduce((t, p) => t + p.subgroups, 0);
  const fraction: Record<string, number> = {};
  for (const p of solved.paths) {
    fraction[p.tier] = (fraction[p.tier] ?? 0) + (total > 0 ? p.subgroups / total : 0);
  }
  const cached = solved.paths.reduce((t, p) => t + p.cache_subgroups, 0);
  const remotePath = solved.paths.find((p) => p.name === "remote");
  const share = remotePath && shares[remotePath.tier];
  const update_s: Record<string, number> = {
    zero_infinity: solved.predictions.zero_infinity.update_s,
    plan: solved.predictions.plan.update_s,
  };
  if (solved.predictions.mlp_offload) {
    update_s.mlp_offload = solved.predictions.mlp_offload.update_s;
  }
  return {
    nodes,
    ...(remotePath && share ? { remote: { tier: remotePath.tier, ...share } } : {}),
    fraction,
    cached_fraction: total > 0 ? cached / total : 0,
    update_s,
  };
}

/** An export, or why there is none (a path without a directory, an S3 path). */
function exported(make: () => unknown): Record<string, unknown> {
  try {
    return make() as Record<string, unknown>;
  } catch (e) {
    return { error: errorLine(e) };
  }
}
