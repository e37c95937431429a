/**
 * What MLP-Offload's settings (export.ts) say beside the config: where they
 * differ from the plan, what the fork's sources do not settle, and where each
 * key's value comes from.
 *
 * @module
 */

import type { PlanDocument, PlannedPath } from "../schema/plan.ts";

/** The facts of a plan's MLP-Offload settings the notes weigh. */
export interface MlpOffloadFacts {
  readonly local: PlannedPath;
  readonly remote: PlannedPath | undefined;
  /** The paths the settings use: the local one, and the remote one where it has subgroups. */
  readonly paths: readonly PlannedPath[];
  /** dist_opt_ratio: one subgroup in k on the remote path; 0 with none there. */
  readonly k: number;
  /** Subgroups per rank on the paths. */
  readonly onPaths: number;
  readonly bufferCount: number;
}

/**
 * `notes`: what the settings do differently from the plan (after `first`,
 * what no export can say); `caveats`: what the sources do not settle (they
 * leave matches_plan alone).
 */
export function mlpOffloadNotes(
  plan: PlanDocument,
  first: string[],
  f: MlpOffloadFacts,
): { notes: string[]; caveats: string[] } {
  const { local, remote, paths, k, onPaths, bufferCount } = f;
  const notes = first;
  const remoteCount = remote?.subgroups ?? 0;
  const caching = paths.some((p) => p.cache_subgroups > 0);
  if (remoteCount > 0) {
    const placed = onPaths / k;
    if (Math.abs(placed - remoteCount) >= 1) {
      notes.push(
        `dist_opt_ratio ${k} puts about ${
          Math.round(placed)
        } of ${onPaths} subgroups on the remote path (one in ${k}); the plan puts ${remoteCount}`,
      );
    }
  }
  const cachedByFork = Math.max(0, Math.floor(bufferCount / 4) - 1);
  if (paths.some((p) => p.cache_subgroups !== cachedByFork)) {
    notes.push(
      `buffer_count ${bufferCount} caches ${cachedByFork} subgroups per path (buffer_count // 4 − 1); the plan caches ${
        paths.map((p) => `${p.name} ${p.cache_subgroups}`).join(", ")
      }`,
    );
  }
  for (const p of paths) {
    for (const [what, n] of [["readers", p.readers], ["writers", p.writers]] as const) {
      if (n !== 1) {
        notes.push(
          `the ${p.name} path's ${
            n ?? "unlimited"
          } ${what} at a time is no key of the fork: it allows one reader and one writer node-wide (its /dev/shm locks)`,
        );
      }
    }
  }
  if (plan.placement.order === "ascending" && caching) {
    notes.push(
      "the plan's ascending order is not MLP-Offload's: with its cache the order alternates",
    );
  }
  if (remote && remote.bs !== local.bs && remoteCount > 0) {
    notes.push(
      `one aio block serves both paths: block_size is the local path's ${local.bs}, the remote path was measured at ${remote.bs}`,
    );
  }
  if (remote && remote.iodepth !== local.iodepth && remoteCount > 0) {
    notes.push(
      `one aio block serves both paths: queue_depth is the local path's ${local.iodepth}, the remote path was measured at ${remote.iodepth}`,
    );
  }

  return { notes, caveats: mlpOffloadCaveats(plan, remoteCount, caching) };
}

/**
 * What the sources do not settle for a plan with `remoteCount` subgroups
 * per rank remote, `caching` or not: swapped gradients, how dist_opt_ratio
 * is read, dist_cpu_caching.
 */
function mlpOffloadCaveats(plan: PlanDocument, remoteCount: number, caching: boolean): string[] {
  const caveats: string[] = [];
  if (plan.predictions.plan.host_memory?.gradients === "swapped") {
    caveats.push(
      "the plan swaps gradients (they do not fit in host memory): the fork has no key for it; its runs kept them in host memory (skip_grads1 in their logs)",
    );
  }
  if (remoteCount > 0) {
    caveats.push(
      "dist_opt_ratio is read as one subgroup in K on the remote path; the fork's code that reads it is not in the sources",
    );
  }
  if (caching) {
    caveats.push(
      "dist_cpu_caching (float) is left out: what share it sets is not in the sources; the cache follows buffer_count",
    );
  }
  return caveats;
}

/** Where each key of MLP-Offload's settings comes from, by its dotted name. */
export function mlpOffloadSources(): Record<string, string> {
  const sources: Record<string, string> = {};
  const zo = "zero_optimization";
  const oo = `${zo}.offload_optimizer`;
  const script = "mauryaavinash95/MLP-Offload scripts/config-n-run.sh";
  const launch = "mauryaavinash95/MLP-Offload scripts/launch-expt.sh";
  const printed = "its 70B run's printed swap_config (MLP-Offload logs/log-70B-…-single_proc1-…)";
  sources[`${oo}.device`] = `${script} ("device": "nvme")`;
  sources[`${oo}.nvme_path`] =
    `${script} writes $OPT_PATHS, which ${launch} passes as "$NVME_PATH;$PFS_PATH" (-C); directories from the plan's paths`;
  sources[`${oo}.buffer_count`] =
    `4 × (the plan's cache per path + 1): the public branch's code caches buffer_count // 4 − 1 subgroups per path (the artifact's runs, on its pinned e00c4d7d with gradients kept, cached buffer_count // 3: 25 → 8); ${launch} -b 32`;
  const pipelined =
    `${launch} -P 1; written as a JSON boolean, which the fork parses to True (${printed})`;
  sources[`${oo}.pipeline_read`] = pipelined;
  sources[`${oo}.pipeline_write`] = pipelined;
  sources[`${oo}.pin_memory`] = `${script} ("pin_memory": true)`;
  sources[`${oo}.dist_opt_ratio`] =
    `${launch} -O 3 with two paths, -O 0 with one; an int in ${printed}; one subgroup in K on the remote path as tierbench reads it (not verified in the fork's code)`;
  sources[`${zo}.stage`] = `${script} (ZERO_STAGE=3)`;
  sources[`${zo}.sub_group_size`] = "the plan's setup.subgroup_elements";

  sources["aio.block_size"] =
    `the plan's local path bs (the size its bandwidth was measured at); ${script} uses 2097152`;
  sources["aio.queue_depth"] =
    `the plan's local path iodepth; ${script} leaves it to the default 8 (printed as queue_depth 8)`;
  sources["aio.thread_count"] =
    `${script} ("thread_count": 4); the fork (0.13.3) reads thread_count`;
  sources["aio.single_submit"] = `${script} ("single_submit": false)`;
  sources["aio.overlap_events"] = `${script} ("overlap_events": true)`;

  return sources;
}
