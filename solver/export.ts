/**
 * Settings training accepts, from a plan document: the DeepSpeed
 * `zero_optimization` and `aio` blocks ({@linkcode deepspeedConfig}) and
 * MLP-Offload's settings ({@linkcode mlpOffloadSettings}).
 *
 * Every key written is one the stated DeepSpeed version's runtime reads, with
 * the value type it parses (solver/_deepspeed_keys.ts lists the keys per
 * version and where they were read); the exports check themselves against
 * those lists and throw rather than write a key a version would refuse or
 * ignore. The version goes beside the config, never inside it
 * (`zero_optimization` refuses unknown keys), as `deepspeed_version`.
 *
 * Booleans are JSON booleans. That matters for `aio`: DeepSpeed reads it with
 * `dict.get`, validates nothing and hands the values to the native aio handle,
 * so the strings that DeepSpeed's own tuner prints (`ds_nvme_tune`,
 * deepspeed/nvme/perf_generate_param.py: `"single_submit": "false"`,
 * `"overlap_events": "true"`, and the thread count as `num_threads`, a key
 * neither version here reads) must not be pasted as they are: "false" is not false, and
 * `num_threads` is dropped without a word.
 *
 * What stock DeepSpeed cannot express (a second path, subgroups kept in host
 * memory, MLP-Offload's cache, an alternating order) is listed in `notes` and
 * sets `matches_plan` to false; such plans need MLP-Offload's fork.
 *
 * @module
 */

import {
  DEEPSPEED_KEY_SETS,
  type DeepSpeedKeySet,
  keySetForVersion,
  type KeySource,
  type KeyType,
  MLP_OFFLOAD_FORK,
} from "./deepspeed_keys.ts";
import { PLAN_SCHEMA, type PlanDocument, type PlannedPath } from "../schema/plan.ts";
import { ConfigError } from "../core/errors.ts";
import { mlpOffloadNotes, mlpOffloadSources } from "./_mlp_offload_notes.ts";

/** DeepSpeed versions whose keys are known (solver/_deepspeed_keys.ts). */
export const DEEPSPEED_VERSIONS = ["0.13.3", "0.16.9"] as const;
/**
 * A DeepSpeed version {@linkcode deepspeedConfig} writes for: any release
 * `x.y.z` ({@linkcode parseDeepSpeedVersion}); its keys follow from the
 * version boundaries (solver/deepspeed_keys.ts, keySetForVersion).
 */
export type DeepSpeedVersion = string;
/** The newest version whose keys the sources verify. */
export const DEFAULT_DEEPSPEED_VERSION: DeepSpeedVersion = "0.16.9";

/**
 * `text` as a DeepSpeed release `x.y.z` (a local suffix such as `+5486420c`
 * is allowed and ignored).
 *
 * @throws {ConfigError} on `deepspeed-version` naming what it takes.
 *
 * @example
 * ```ts
 * import { parseDeepSpeedVersion } from "./export.ts";
 * console.assert(parseDeepSpeedVersion("0.16.4").join() === "0,16,4");
 * ```
 */
export function parseDeepSpeedVersion(text: string): [number, number, number] {
  const m = /^v?(\d{1,4})\.(\d{1,4})\.(\d{1,4})(\+[\w.]+)?$/.exec(text.trim());
  if (!m) {
    throw new ConfigError(
      "deepspeed-version",
      `"${text}" is not a DeepSpeed release`,
      "a version x.y.z as deepspeed.__version__ prints it, e.g. 0.14.4 or 0.16.9",
    );
  }
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/**
 * Swap buffers of the optimizer swapper with pipelined reads and writes: one
 * subgroup being updated, one read ahead, one written behind, and staging for
 * the write, 4 buffers each (Adam's fp32 params, m, v and the gradient).
 * MLP-Offload's scripts default to the same 16 (scripts/config-n-run.sh);
 * DeepSpeed's default of 4 suits neither pipeline.
 */
export const DEEPSPEED_BUFFER_COUNT = 16;
/** MLP-Offload's runs: `-b 32` (scripts/launch-expt.sh). */
export const MLP_OFFLOAD_BUFFER_COUNT = 32;
/** MLP-Offload's runs: aio `thread_count` 4 (scripts/config-n-run.sh). */
export const MLP_OFFLOAD_AIO_THREADS = 4;

/** Options of the exports. */
export interface ExportOptions {
  /** The DeepSpeed version to write for (default {@linkcode DEFAULT_DEEPSPEED_VERSION}). */
  readonly deepspeedVersion?: DeepSpeedVersion;
  /**
   * Directory of each planned path on the training nodes, by path name
   * (`local`, `remote`). Default: the directory of the profile tier the path
   * was measured on (a `file:DIR` / `pfs:DIR` entry of `plan.profile.tiers`).
   */
  readonly dirs?: Readonly<Record<string, string>>;
  /**
   * Parallel sub-requests per I/O (`thread_count` / `intra_op_parallelism`).
   * Default: 1 for DeepSpeed (its default, and what tierbench measured: one
   * submitter per job), 4 for MLP-Offload (its runs).
   */
  readonly aioThreads?: number;
  /** `offload_optimizer.buffer_count` (defaults above). */
  readonly bufferCount?: number;
}

/** An `aio` block. */
export type AioBlock = Record<string, number | boolean>;

/** What {@linkcode deepspeedConfig} returns. */
export interface DeepSpeedExport {
  /** The DeepSpeed version the keys are for. */
  deepspeed_version: string;
  /** Paste these top-level keys into the DeepSpeed config (JSON). */
  config: {
    zero_optimization: {
      stage: 3;
      offload_optimizer: Record<string, string | number | boolean>;
      sub_group_size: number;
    };
    aio?: AioBlock;
  };
  /** False when DeepSpeed cannot do what the plan predicts; `notes` say what differs. */
  matches_plan: boolean;
  notes: string[];
  /** Where this version's key set was read. */
  sources: KeySource[];
}

/** What {@linkcode mlpOffloadSettings} returns. */
export interface MlpOffloadExport {
  /** The fork these keys are for (MLP-Offload runs on DataStates/DeepSpeed, branch dist_nvme_opt). */
  deepspeed_version: string;
  fork: string;
  /** Its ds_config's `zero_optimization` and `aio`, as its scripts write them. */
  config: {
    zero_optimization: {
      stage: 3;
      offload_optimizer: Record<string, string | number | boolean>;
      sub_group_size: number;
    };
    aio: AioBlock;
  };
  /** Share of subgroups on the remote path that `dist_opt_ratio` gives (1/K, or 0). */
  remote_share: number;
  /** False when the settings do something the plan does not predict; `notes` say what. */
  matches_plan: boolean;
  /** What differs from the plan, then what the sources do not settle. */
  notes: string[];
  /** Where each key and value comes from, by dotted key. */
  sources: Record<string, string>;
}

/**
 * The key set of `version`: the verified set where there is one, else the
 * one its version range parses; throws a ConfigError for a version that is
 * not `x.y.z`.
 */
export function deepspeedKeySet(version: string): DeepSpeedKeySet {
  return DEEPSPEED_KEY_SETS[version] ?? keySetForVersion(parseDeepSpeedVersion(version));
}

/**
 * The keys of `block` that `allowed` does not list, or whose value is not of
 * the listed type, as sentences (empty when all is well). `where` names the
 * block in them.
 *
 * @example
 * ```ts
 * import { keyProblems } from "./export.ts";
 * console.assert(keyProblems({ single_submit: "false" }, { single_submit: "bool" }, "aio").length === 1);
 * ```
 */
export function keyProblems(
  block: Readonly<Record<string, unknown>>,
  allowed: Readonly<Record<string, KeyType>>,
  where: string,
): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(block)) {
    const type = allowed[key];
    if (type === undefined) problems.push(`${where}.${key} is not a key the runtime reads`);
    else if (!isOfType(value, type)) {
      problems.push(`${where}.${key} = ${JSON.stringify(value)} is not a ${type}`);
    }
  }
  return problems;
}

function isOfType(value: unknown, type: KeyType): boolean {
  switch (type) {
    case "bool":
      return typeof value === "boolean";
    case "int":
      return typeof value === "number" && Number.isSafeInteger(value);
    case "float":
      return typeof value === "number" && Number.isFinite(value);
    case "string":
      return typeof value === "string" && value.length > 0;
    case "device":
      return value === "none" || value === "cpu" || value === "nvme";
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
  }
}

/** Keys of one export checked against a key set; throws listing what is wrong. */
function assertKeys(
  config: { zero_optimization: Record<string, unknown>; aio?: Record<string, unknown> },
  sets: {
    zeroOptimization: Readonly<Record<string, KeyType>>;
    offloadOptimizer: Readonly<Record<string, KeyType>>;
    aio: Readonly<Record<string, KeyType>>;
  },
  version: string,
): void {
  const zero = config.zero_optimization;
  const problems = [
    ...keyProblems(zero, sets.zeroOptimization, "zero_optimization"),
    ...keyProblems(
      (zero.offload_optimizer ?? {}) as Record<string, unknown>,
      sets.offloadOptimizer,
      "zero_optimization.offload_optimizer",
    ),
    ...(config.aio ? keyProblems(config.aio, sets.aio, "aio") : []),
  ];
  if (problems.length > 0) {
    throw new Error(`export for DeepSpeed ${version} is wrong: ${problems.join("; ")}`);
  }
}

/** Checks the plan is one and returns the facts both exports need. */
function planFacts(plan: PlanDocument) {
  if (plan.schema !== PLAN_SCHEMA) {
    throw new Error(
      `not a plan document: schema ${JSON.stringify(plan.schema)}, want ${PLAN_SCHEMA}`,
    );
  }
  const subGroupSize = plan.setup.subgroup_elements;
  if (typeof subGroupSize !== "number" || !Number.isSafeInteger(subGroupSize) || subGroupSize < 1) {
    throw new Error(
      `plan.setup.subgroup_elements is ${
        JSON.stringify(subGroupSize)
      }: the exports need the subgroup size (DeepSpeed's sub_group_size) as a positive integer`,
    );
  }
  const placement = plan.placement;
  const used = placement.paths.filter((p) => p.subgroups > 0);
  const onPaths = used.reduce((t, p) => t + p.subgroups, 0);
  return { subGroupSize, placement, used, onPaths, total: placement.host_subgroups + onPaths };
}

/**
 * Directory of `path` on the training nodes: `dirs[name]`, else the
 * directory of its profile tier (`file:DIR`, `pfs:DIR`). Throws for an S3
 * tier or a path without one.
 */
export function pathDirectory(
  plan: PlanDocument,
  path: PlannedPath,
  dirs?: Readonly<Record<string, string>>,
): string {
  const given = dirs?.[path.name];
  if (given) return given;
  if (path.tier === "s3") {
    throw new Error(
      `the ${path.name} path is an S3 bucket: DeepSpeed's aio and MLP-Offload swap to files in a directory; mount it and pass its directory as dirs.${path.name}`,
    );
  }
  const spec = plan.profile.tiers.find((t) => t.startsWith(`${path.tier}:`));
  const dir = spec?.slice(path.tier.length + 1);
  if (!dir) {
    throw new Error(
      `no directory for the ${path.name} path (tier ${path.tier}): pass it as dirs.${path.name}`,
    );
  }
  return dir;
}

function positiveInt(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${what} is ${value}: use an integer ≥ 1`);
  }
  return value;
}

/** The notes for what a plan does that an export of `who` cannot say. */
function unsupported(plan: PlanDocument, who: "DeepSpeed" | "MLP-Offload"): string[] {
  const notes: string[] = [];
  const p = plan.placement;
  if (p.host_subgroups > 0) {
    notes.push(
      `${who} has no offload_optimizer key to keep some subgroups in host memory for good: the plan's ${p.host_subgroups} host subgroups per rank go to the swap paths`,
    );
  }
  if (p.dos_stride !== undefined) {
    notes.push(
      `every ${p.dos_stride}th subgroup updated on the GPU (Deep Optimizer States) is no ${who} key`,
    );
  }
  return notes;
}

/**
 * The DeepSpeed `zero_optimization` block (stage 3, `offload_optimizer`,
 * `sub_group_size`) and `aio` block for `plan`, with the keys and value
 * types `opts.deepspeedVersion` reads (`thread_count` for 0.13.3,
 * `intra_op_parallelism` and `use_gds` for 0.16.9).
 *
 * Optimizer state on a swap path becomes `device: "nvme"` with `nvme_path`
 * the `local` path's directory (DeepSpeed takes one path) and `aio` at the
 * request size and depth the plan's bandwidths were measured at; a plan that
 * keeps every subgroup in host memory becomes `device: "cpu"` (ZeRO-Offload)
 * without `aio`. `offload_param` is left out: plans place optimizer state
 * only, so the parameters stay where the rest of the config puts them.
 *
 * @example
 * ```ts
 * import { deepspeedConfig } from "./export.ts";
 * import { PLAN_SCHEMA, type PlanDocument, type Prediction } from "../schema/plan.ts";
 * const p: Prediction = { update_s: 1, read_s: 1, write_s: 1, compute_s: 1, overlap_s: 2, bytes: {}, feasible: true };
 * const plan: PlanDocument = {
 *   schema: PLAN_SCHEMA, created: "2026-11-21T00:00:00Z",
 *   profile: { source: "p.json", tiers: ["file:/mnt/nvme"] },
 *   setup: { subgroup_elements: 1e8 }, inputs: {},
 *   placement: { host_subgroups: 0, order: "ascending", paths: [
 *     { name: "local", tier: "file", subgroups: 179, ratio: 1, cache_subgroups: 0, bs: 1 << 20, iodepth: 8 },
 *   ] },
 *   predictions: { zero_offload: p, zero_infinity: p, plan: p }, why: [], exports: { deepspeed: {}, mlp_offload: {} },
 * };
 * const ds = deepspeedConfig(plan);
 * console.assert(ds.config.aio?.intra_op_parallelism === 1 && ds.matches_plan);
 * ```
 */
export function deepspeedConfig(plan: PlanDocument, opts: ExportOptions = {}): DeepSpeedExport {
  const version = opts.deepspeedVersion ?? DEFAULT_DEEPSPEED_VERSION;
  const keys = deepspeedKeySet(version);
  const { subGroupSize, placement, used, total } = planFacts(plan);
  if (total === 0) throw new Error("the plan places no subgroups");
  const notes = unsupported(plan, "DeepSpeed");
  const sources = [...keys.sources];

  if (used.length === 0) {
    const config = {
      zero_optimization: {
        stage: 3 as const,
        offload_optimizer: {
          device: "cpu",
          pin_memory: true,
          // all of the optimizer on the CPU, where the version parses Twin-Flow's ratio
          ...("ratio" in keys.offloadOptimizer ? { ratio: 1 } : {}),
        },
        sub_group_size: subGroupSize,
      },
    };
    assertKeys(config, keys, version);
    // every subgroup in host memory is what device "cpu" does; only a GPU stride differs
    const gpu = notes.filter((n) => n.includes("GPU"));
    return {
      deepspeed_version: version,
      config,
      matches_plan: gpu.length === 0,
      notes: gpu,
      sources,
    };
  }

  const target = used.find((p) => p.name === "local") ?? used[0]!;
  for (const p of used) {
    if (p === target) continue;
    notes.push(
      `DeepSpeed swaps to one nvme_path: the plan's ${p.subgroups} subgroups per rank on the ${p.name} path go to ${target.name} here (mlpOffloadSettings() splits them)`,
    );
  }
  if (placement.paths.some((p) => p.cache_subgroups > 0)) {
    notes.push(
      "DeepSpeed keeps no subgroups in host memory across the pass boundary (MLP-Offload's cache): every subgroup is read and written each pass",
    );
  }
  if (placement.order === "alternating") {
    notes.push("DeepSpeed updates subgroups in ascending order every pass, not alternating");
  }
  const aio: AioBlock = {
    block_size: positiveInt(target.bs, `the ${target.name} path's bs`),
    queue_depth: positiveInt(target.iodepth, `the ${target.name} path's iodepth`),
    [keys.threadKey]: positiveInt(opts.aioThreads ?? 1, "aioThreads"),
    single_submit: false,
    overlap_events: true,
  };
  if ("use_gds" in keys.aio) aio.use_gds = false;
  const config = {
    zero_optimization: {
      stage: 3 as const,
      offload_optimizer: {
        device: "nvme",
        nvme_path: pathDirectory(plan, target, opts.dirs),
        pin_memory: true,
        buffer_count: positiveInt(opts.bufferCount ?? DEEPSPEED_BUFFER_COUNT, "bufferCount"),
        pipeline_read: true,
        pipeline_write: true,
        fast_init: false,
      },
      sub_group_size: subGroupSize,
    },
    aio,
  };
  assertKeys(config, keys, version);
  return { deepspeed_version: version, config, matches_plan: notes.length === 0, notes, sources };
}

/**
 * MLP-Offload's settings for `plan`: the `zero_optimization` and `aio`
 * blocks of the ds_config its scripts write, for its fork of DeepSpeed
 * 0.13.3 (DataStates/DeepSpeed, branch dist_nvme_opt), each key with its
 * source.
 *
 * - `nvme_path`: `"LOCAL;REMOTE"`, the two directories joined with `;` as its
 *   scripts do (the local path alone when the plan puts nothing remote).
 * - `dist_opt_ratio`: an integer K, 0 for one path. Its runs use 3 with
 *   "NVME;PFS" (launch-expt.sh calls it the "Node-local NVMe to PFS
 *   offloading ratio"), and the 70B run's per-subgroup read waits repeat with
 *   period 3: one subgroup in K goes to one of the paths. tierbench reads it
 *   as one in K on the second (remote) path, as workloads/mlp_offload.ts does
 *   (remote share 1/K); the fork's code that reads the key is not in the
 *   sources, so neither the direction nor the exact pattern is verified. The
 *   plan's remote share r becomes K = round(1/r), at least 2.
 * - `buffer_count`: 4 × (the plan's cache per path + 1), since the fork
 *   caches buffer_count // 4 − 1 subgroups per path.
 * - nothing else of its own: the public fork accepts `dist_cpu_caching` and
 *   `dist_opt_ratio` beyond DeepSpeed's keys and refuses any other, so the
 *   artifact's `dist_opt_enable_caching`, `dist_opt_grad_skip`,
 *   `dist_opt_one_at_time` and `dist_opt_compress` are not written
 *   (docs/exports.md says what they meant).
 * - `aio`: the plan path's request size and depth (its runs: 2 MiB, depth 8
 *   by default), `thread_count` 4 as in its runs; the fork reads
 *   `thread_count` (0.13.3), not `intra_op_parallelism`.
 *
 * @example
 * ```ts
 * import { mlpOffloadSettings } from "./export.ts";
 * import { PLAN_SCHEMA, type PlanDocument, type Prediction } from "../schema/plan.ts";
 * const p: Prediction = { update_s: 1, read_s: 1, write_s: 1, compute_s: 1, overlap_s: 2, bytes: {}, feasible: true };
 * const path = (name: string, tier: string, subgroups: number) =>
 *   ({ name, tier, subgroups, ratio: subgroups / 9, cache_subgroups: 2, readers: 1, writers: 1, bs: 2 << 20, iodepth: 8 });
 * const plan: PlanDocument = {
 *   schema: PLAN_SCHEMA, created: "2026-11-21T00:00:00Z",
 *   profile: { source: "p.json", tiers: ["file:/nvme", "pfs:/pfs"] },
 *   setup: { subgroup_elements: 1e8 }, inputs: {},
 *   placement: { host_subgroups: 0, order: "alternating", paths: [path("local", "file", 6), path("remote", "pfs", 3)] },
 *   predictions: { zero_offload: p, zero_infinity: p, plan: p }, why: [], exports: { deepspeed: {}, mlp_offload: {} },
 * };
 * const m = mlpOffloadSettings(plan);
 * console.assert(m.config.zero_optimization.offload_optimizer.nvme_path === "/nvme;/pfs");
 * console.assert(m.config.zero_optimization.offload_optimizer.dist_opt_ratio === 3);
 * ```
 */
export function mlpOffloadSettings(plan: PlanDocument, opts: ExportOptions = {}): MlpOffloadExport {
  const { subGroupSize, placement, used, onPaths } = planFacts(plan);
  const { local, remote } = localAndRemote(placement.paths, used);
  const remoteCount = remote?.subgroups ?? 0;
  const k = remoteCount > 0 ? Math.max(2, Math.round(1 / (remoteCount / onPaths))) : 0;
  const dirs = [pathDirectory(plan, local, opts.dirs)];
  if (remote && remoteCount > 0) dirs.push(pathDirectory(plan, remote, opts.dirs));

  const paths = remoteCount > 0 && remote ? [local, remote] : [local];
  // the fork caches buffer_count // 4 − 1 subgroups per path (one buffer each for p, m, v, g)
  const cachePerPath = Math.max(0, ...paths.map((p) => p.cache_subgroups));
  const bufferCount = opts.bufferCount ?? 4 * (cachePerPath + 1);
  const { notes, caveats } = mlpOffloadNotes(plan, unsupported(plan, "MLP-Offload"), {
    local,
    remote,
    paths,
    k,
    onPaths,
    bufferCount,
  });
  const offload = {
    device: "nvme",
    nvme_path: dirs.join(";"),
    buffer_count: positiveInt(bufferCount, "bufferCount"),
    pipeline_read: true,
    pipeline_write: true,
    pin_memory: true,
    dist_opt_ratio: k,
  };
  const aio: AioBlock = {
    block_size: positiveInt(local.bs, "the local path's bs"),
    queue_depth: positiveInt(local.iodepth, "the local path's iodepth"),
    thread_count: positiveInt(opts.aioThreads ?? MLP_OFFLOAD_AIO_THREADS, "aioThreads"),
    single_submit: false,
    overlap_events: true,
  };
  const config = {
    zero_optimization: {
      stage: 3 as const,
      offload_optimizer: offload,
      sub_group_size: subGroupSize,
    },
    aio,
  };
  assertKeys(config, MLP_OFFLOAD_FORK, MLP_OFFLOAD_FORK.version);
  return {
    deepspeed_version: MLP_OFFLOAD_FORK.version,
    fork: `${MLP_OFFLOAD_FORK.repo}@${MLP_OFFLOAD_FORK.branch}`,
    config,
    remote_share: k === 0 ? 0 : 1 / k,
    matches_plan: notes.length === 0,
    notes: [...notes, ...caveats],
    sources: mlpOffloadSources(),
  };
}

/**
 * The local and remote paths of a plan MLP-Offload can run (`used`: the
 * paths with subgroups).
 *
 * @throws {Error} when the local path has no subgroups or another path has some.
 */
function localAndRemote(
  paths: readonly PlannedPath[],
  used: readonly PlannedPath[],
): { local: PlannedPath; remote: PlannedPath | undefined } {
  const local = paths.find((p) => p.name === "local");
  const remote = paths.find((p) => p.name === "remote");
  if (!local || local.subgroups === 0) {
    throw new Error(
      "MLP-Offload needs subgroups on the local path (nvme_path's first entry); this plan has none there",
    );
  }
  const others = used.filter((p) => p !== local && p !== remote);
  if (others.length > 0) {
    throw new Error(
      `MLP-Offload takes a local and a remote path; the plan also uses ${
        others.map((p) => p.name).join(", ")
      }`,
    );
  }
  return { local, remote };
}
