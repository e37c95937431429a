/**
 * From a profile and a training setup to a plan document: picks the tiers
 * (the fastest node-local file tier, the fastest remote one), runs the
 * solver, and adds the exports training accepts.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import { describeSetup, type TrainingSetup } from "../workloads/setup.ts";
import {
  deepspeedConfig,
  type DeepSpeedVersion,
  DEFAULT_DEEPSPEED_VERSION,
  mlpOffloadSettings,
} from "./export.ts";
import { planActivations } from "./activations.ts";
import { PLAN_SCHEMA, type PlanDocument } from "../schema/plan.ts";

import { solve } from "./solve.ts";
import type { SolverTier } from "./solver_tier.ts";
import type { Profile, ProfileTier } from "../schema/profile.ts";
import { slowdownLookup, togetherOf } from "./slowdown.ts";

/** Options of {@linkcode makePlan}. */
export interface PlanOptions {
  /** Host memory of the node the optimizer state may use as cache, bytes. */
  readonly hostCacheBytes: number;
  readonly deepspeedVersion?: DeepSpeedVersion;
  /** CPU Adam rate of a rank, parameters/s: over the profile's, which is over the setup's. */
  readonly adamRate?: number;
  /** Directories of the paths on the training nodes, by path name (default: the profile's). */
  readonly dirs?: Readonly<Record<string, string>>;
}

function asSolverTier(t: ProfileTier): SolverTier {
  return {
    label: t.label,
    readBw: t.read_bw_bytes,
    writeBw: t.write_bw_bytes,
    bs: t.bs,
    iodepth: t.iodepth,
    ...(t.capacity_bytes !== undefined ? { capacityBytes: t.capacity_bytes } : {}),
    ...(t.mixed_read_bw_bytes !== undefined ? { mixedReadBw: t.mixed_read_bw_bytes } : {}),
    ...(t.mixed_write_bw_bytes !== undefined ? { mixedWriteBw: t.mixed_write_bw_bytes } : {}),
  };
}

/** The tier of these kinds that moves a subgroup fastest (read + write time), if any. */
function fastest(profile: Profile, kinds: readonly string[]): ProfileTier | undefined {
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
    slowdown: slowdownLookup(profile),
    together: (tier, other) => {
      const x = togetherOf(profile, tier, other);
      return x && { readBw: x.read_bw_bytes, writeBw: x.write_bw_bytes };
    },
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
  const cached = solved.paths.reduce((t, p) => t + p.cache_subgroups, 0);
  const plan: PlanDocument = {
    schema: PLAN_SCHEMA,
    created: new Date().toISOString(),
    profile: {
      source: profile.source,
      host: profile.host_name,
      tiers: Object.values(profile.tiers).map((t) => `${t.label}:${t.path ?? ""}`),
    },
    setup: describeSetup({ ...setup, adamParamsPerSec: adamRate }),
    inputs: {
      host_cache_bytes: opts.hostCacheBytes,
      host_memory_bytes: profile.host.memory_bytes,
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
    predictions: solved.predictions,
    activations: planActivations(setup, local.read_bw_bytes, local.write_bw_bytes),
    why: solved.why,
    exports: { deepspeed: {}, mlp_offload: {} },
  };
  const version = opts.deepspeedVersion ?? DEFAULT_DEEPSPEED_VERSION;
  const exportOpts = { deepspeedVersion: version, ...(opts.dirs ? { dirs: opts.dirs } : {}) };
  plan.exports.deepspeed = exported(() => deepspeedConfig(plan, exportOpts));
  plan.exports.mlp_offload = exported(() => mlpOffloadSettings(plan, exportOpts));
  return plan;
}

/** An export, or why there is none (a path without a directory, an S3 path). */
function exported(make: () => unknown): Record<string, unknown> {
  try {
    return make() as Record<string, unknown>;
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}
