/**
 * `tierbench sweep`: a grid of `bs` × `iodepth` × `numjobs` on each tier, each
 * point run for a fixed time or to steady state, the best setting per tier,
 * and that setting as DeepSpeed's `aio` block.
 *
 * **Steady state** is fio's `ss=bw_slope`: the least-squares slope of the
 * last {@linkcode SWEEP_DEFAULTS}`.ssDur` one-second bandwidth samples (after
 * the ramp), as a percentage of their mean, per second, is at most
 * `ssLimit` (2 % by default). With `steady` a point runs until that holds or
 * its `runtime` (30 s by default) ends, and says which; without it every point
 * runs for `runtime` (6 s by default) and `steady` says whether the criterion
 * held over the point's last samples.
 *
 * **Length of a point.** DeepSpeed's own sweep (`ds_nvme_tune`) moves 400 MB
 * per point: at 3–7 GB/s that is 60–130 ms, shorter than one bandwidth
 * sample, so nothing can say whether the device had settled (write caches,
 * queue ramp-up, SLC caches fill after seconds). Here a point is 1 s of ramp
 * (not counted) and at least 5 one-second samples measured: enough for the
 * slope test to have its window, and at NVMe rates tens of GB per point.
 *
 * **Best** is the highest bandwidth; points within {@linkcode TIE_MARGIN} (5
 * %) of it count as ties, and a tie goes to the smaller `iodepth × numjobs`
 * (fewer I/Os in flight for the same bandwidth), then to the higher bandwidth.
 *
 * @module
 */

import type { Tier } from "../tiers/types.ts";
import {
  deepspeedConfig,
  type DeepSpeedVersion,
  DEFAULT_DEEPSPEED_VERSION,
  parseDeepSpeedVersion,
} from "../solver/export.ts";
import { PLAN_SCHEMA, type PlanDocument, type Prediction } from "../schema/plan.ts";
import {
  formatTierSpec,
  type JobOptions,
  jobReads,
  parseJobOptions,
  RW_MODES,
  type RwMode,
  type TierSpec,
} from "../core/config.ts";
import { splitList } from "../core/list.ts";
import { ConfigError } from "../core/errors.ts";
import type { SweepPoint, SweepResult } from "../schema/sweep.ts";
import type { RunResult } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import { runJob, type RunProgress, type StepProgress } from "./runner.ts";
import { type SessionOutcome, sessionTimeout, withSession } from "./session.ts";
import { checkSpace } from "../tiers/space.ts";
import { badSize, parseDuration, parseSize } from "../core/units.ts";
import { isSteady, SteadyWatch } from "./steady.ts";

/** The engines `sweep --engine` offers for memory, file and pfs tiers. */
export const SWEEP_ENGINES = ["libaio", "io_uring"] as const;
/** One of {@linkcode SWEEP_ENGINES}. */
export type SweepEngine = typeof SWEEP_ENGINES[number];

/** Defaults of the sweep's options, as the CLI spells them. */
export const SWEEP_DEFAULTS = {
  rw: "read",
  bs: "128k,1m,8m",
  iodepth: "1,4,16,64",
  numjobs: "1,2,4",
  size: "1g",
  ramp: "1",
  /** Measured time of a point without `--steady`. */
  runtime: "6",
  /** The most a point runs with `--steady`. */
  steadyRuntime: "30",
  /** `bw_slope` limit, % of the mean per second. */
  ssLimit: "2",
  /** Window of the slope test: this many one-second samples. */
  ssDur: "5",
} as const;

/** Points within this share of the highest bandwidth tie; the smaller iodepth × numjobs wins. */
export const TIE_MARGIN = 0.05;

/** Sweep options as text, as they come from the command line. */
export interface RawSweepOptions {
  readonly tiers: readonly TierSpec[];
  readonly rw?: string | undefined;
  readonly bs?: string | undefined;
  readonly iodepth?: string | undefined;
  readonly numjobs?: string | undefined;
  readonly size?: string | undefined;
  readonly runtime?: string | undefined;
  readonly ramp?: string | undefined;
  readonly steady?: boolean | undefined;
  readonly ssLimit?: string | undefined;
  readonly ssDur?: string | undefined;
  /** O_DIRECT on file and pfs tiers (default on). */
  readonly direct?: boolean | undefined;
  /** The engine of memory, file and pfs tiers (default libaio, as DeepSpeed's aio). */
  readonly engine?: SweepEngine | undefined;
  readonly deepspeedVersion?: string | undefined;
  readonly endpoint?: string | undefined;
  readonly region?: string | undefined;
  /** `--timeout` text: how long one request may take (default 30 s), clean-up included. */
  readonly timeout?: string | undefined;
  /** `--verify`: every block written stamped, every block read checked. */
  readonly verify?: boolean | undefined;
}

/** The grid of one tier and pattern: its jobs, in the order they run. */
export interface SweepGroup {
  readonly tier: TierSpec;
  readonly rw: RwMode;
  readonly jobs: readonly JobOptions[];
}

/** A validated sweep: every point's job, the criterion, and how to pick and export. */
export interface SweepPlan {
  readonly groups: readonly SweepGroup[];
  readonly criterion: string;
  /** Run each point to steady state (or its runtime), instead of for a fixed time. */
  readonly steady: boolean;
  /** Samples (one a second) in the slope window. */
  readonly ssSamples: number;
  /** Slope limit, % of the mean per second. */
  readonly ssLimitPct: number;
  readonly deepspeedVersion: DeepSpeedVersion;
  /** Ramp plus the longest a point measures, ms: for the time left. */
  readonly pointMs: number;
}

function intList(field: string, text: string, min: number, max: number): number[] {
  return splitList(field, text, `integers from ${min} to ${max}, e.g. 1,4,16`).map((s) => {
    const n = Number(s);
    if (!/^\d+$/.test(s) || n < min || n > max) {
      throw new ConfigError(field, `"${s}" is not an integer from ${min} to ${max}`);
    }
    return n;
  });
}

/** O_DIRECT on these tiers needs whole 4 KiB blocks (and DeepSpeed's aio buffers are page-aligned). */
const DIRECT_ALIGN = 4096;

/**
 * Validates sweep options and builds every point's job. Refuses, naming the
 * field: an empty list, a `bs` that is not a size (or, with O_DIRECT on a
 * file or pfs tier, not whole 4 KiB blocks), an `iodepth` or `numjobs` that
 * is not a positive integer, an unknown `rw` or DeepSpeed version.
 *
 * @throws {ConfigError} naming the first field at fault.
 *
 * @example
 * ```ts
 * import { planSweep } from "./sweep.ts";
 * const plan = planSweep({ tiers: [{ kind: "null", path: "" }], bs: "4k,1m", iodepth: "1,8", numjobs: "1" });
 * console.assert(plan.groups[0]!.jobs.length === 4);
 * let refused = "";
 * try { planSweep({ tiers: [{ kind: "file", path: "/tmp" }], bs: "3k" }); } catch (e) { refused = (e as Error).message; }
 * console.assert(refused.startsWith("--bs"));
 * ```
 */
export function planSweep(raw: RawSweepOptions): SweepPlan {
  if (raw.tiers.length === 0) {
    throw new ConfigError(
      "tier",
      "is required",
      "file:DIR, memory:[DIR], pfs:DIR, s3://BUCKET, null:",
    );
  }
  const rws = rwList(raw.rw ?? SWEEP_DEFAULTS.rw);
  const direct = raw.direct ?? true;
  const directTiers = raw.tiers.some((t) => t.kind === "file" || t.kind === "pfs");
  const bsText = bsList(raw.bs ?? SWEEP_DEFAULTS.bs, direct && directTiers);
  const iodepths = intList("iodepth", raw.iodepth ?? SWEEP_DEFAULTS.iodepth, 1, 4096);
  const numjobs = intList("numjobs", raw.numjobs ?? SWEEP_DEFAULTS.numjobs, 1, 1024);
  const steady = raw.steady ?? false;
  const { ssLimitPct, ssDurMs } = steadyWindow(raw);
  const ssSamples = ssDurMs / 1000;
  const runtimeMs = pointRuntimeMs(raw, steady, ssDurMs);
  const rampText = raw.ramp ?? SWEEP_DEFAULTS.ramp;
  const rampMs = parseDuration(rampText);
  if (rampMs === undefined) throw new ConfigError("ramp", `"${rampText}" is not a duration`);
  const version = raw.deepspeedVersion ?? DEFAULT_DEEPSPEED_VERSION;
  // any release x.y.z: its aio keys follow from the version boundaries, as for `plan`
  parseDeepSpeedVersion(version);
  const grid: Grid = { rws, bsText, iodepths, numjobs, runtimeMs, rampMs, direct };
  return {
    groups: raw.tiers.flatMap((tier) => tierGroups(raw, tier, grid)),
    criterion: criterionText(steady, ssSamples, ssLimitPct, rampMs, runtimeMs),
    steady,
    ssSamples,
    ssLimitPct,
    deepspeedVersion: version as DeepSpeedVersion,
    pointMs: rampMs + runtimeMs,
  };
}

/** `--rw` as a list of patterns, each one fio knows. */
function rwList(text: string): RwMode[] {
  return splitList("rw", text, RW_MODES.join(", ")).map((rw) => {
    if (!(RW_MODES as readonly string[]).includes(rw)) {
      throw new ConfigError("rw", `unknown value "${rw}"`, RW_MODES.join(", "));
    }
    return rw as RwMode;
  });
}

/** `--bs` as a list of sizes as written; whole 4 KiB blocks when `aligned` (O_DIRECT on a file or pfs tier). */
function bsList(text: string, aligned: boolean): string[] {
  const bsText = splitList("bs", text, "e.g. 128k,1m,8m");
  for (const s of bsText) {
    const n = parseSize(s);
    if (n === undefined || n <= 0) {
      throw new ConfigError("bs", badSize(s, "a size (a number with an optional k, m or g)"));
    }
    if (aligned && n % DIRECT_ALIGN !== 0) {
      throw new ConfigError(
        "bs",
        `"${s}" is not a multiple of 4k, which O_DIRECT on a file or pfs tier needs ` +
          "(and DeepSpeed's aio block_size): use e.g. 128k, 1m, 8m, or --no-direct",
      );
    }
  }
  return bsText;
}

/** The slope test's limit (`--ss-limit`, %) and window (`--ss-dur`, whole seconds as ms). */
function steadyWindow(raw: RawSweepOptions): { ssLimitPct: number; ssDurMs: number } {
  const ssLimitText = (raw.ssLimit ?? SWEEP_DEFAULTS.ssLimit).replace(/%$/, "");
  const ssLimitPct = Number(ssLimitText);
  if (!(ssLimitPct > 0 && ssLimitPct <= 100)) {
    throw new ConfigError(
      "ss-limit",
      `"${raw.ssLimit}" is not a percentage in (0, 100]`,
      "e.g. 2%",
    );
  }
  const ssDurMs = parseDuration(raw.ssDur ?? SWEEP_DEFAULTS.ssDur);
  if (ssDurMs === undefined || ssDurMs % 1000 !== 0 || ssDurMs < 3000 || ssDurMs > 600_000) {
    throw new ConfigError("ss-dur", `"${raw.ssDur}" is not whole seconds from 3 to 600`, "e.g. 5");
  }
  return { ssLimitPct, ssDurMs };
}

/** A point's `--runtime`, ms (its default depends on `steady`); with `steady` at least the window. */
function pointRuntimeMs(raw: RawSweepOptions, steady: boolean, ssDurMs: number): number {
  const runtimeText = raw.runtime ??
    (steady ? SWEEP_DEFAULTS.steadyRuntime : SWEEP_DEFAULTS.runtime);
  const runtimeMs = parseDuration(runtimeText);
  if (runtimeMs === undefined || runtimeMs <= 0) {
    throw new ConfigError("runtime", `"${runtimeText}" is not a duration greater than 0`);
  }
  if (steady && runtimeMs < ssDurMs) {
    throw new ConfigError(
      "runtime",
      `${runtimeText} is shorter than the steady-state window (--ss-dur ${ssDurMs / 1000}s)`,
    );
  }
  return runtimeMs;
}

/** The validated axes of the grid and each point's timing. */
interface Grid {
  readonly rws: readonly RwMode[];
  readonly bsText: readonly string[];
  readonly iodepths: readonly number[];
  readonly numjobs: readonly number[];
  readonly runtimeMs: number;
  readonly rampMs: number;
  readonly direct: boolean;
}

/** One tier's grids, a group per pattern: its points by bs, then numjobs, then iodepth. */
function tierGroups(raw: RawSweepOptions, tier: TierSpec, grid: Grid): SweepGroup[] {
  const fileTier = tier.kind === "memory" || tier.kind === "file" || tier.kind === "pfs";
  return grid.rws.map((rw) => {
    const jobs: JobOptions[] = [];
    for (const bs of grid.bsText) {
      for (const nj of grid.numjobs) {
        for (const depth of grid.iodepths) {
          jobs.push(parseJobOptions({
            name: `${tier.kind} ${rw} ${bs} d${depth} j${nj}`,
            tier: formatTierSpec(tier),
            rw,
            bs,
            size: raw.size ?? SWEEP_DEFAULTS.size,
            runtime: `${grid.runtimeMs}ms`,
            ramp: `${grid.rampMs}ms`,
            iodepth: String(depth),
            numjobs: String(nj),
            direct: grid.direct && (tier.kind === "file" || tier.kind === "pfs"),
            engine: fileTier ? raw.engine ?? "libaio" : "psync",
            endpoint: raw.endpoint,
            region: raw.region,
            timeout: raw.timeout,
            verify: raw.verify,
          }));
        }
      }
    }
    return { tier, rw, jobs };
  });
}

/** The plan's criterion in words: how long a point runs, when it is steady, which is best. */
function criterionText(
  steady: boolean,
  ssSamples: number,
  ssLimitPct: number,
  rampMs: number,
  runtimeMs: number,
): string {
  const window = `the last ${ssSamples} one-second bandwidth samples after a ${
    rampMs / 1000
  } s ramp`;
  const slope =
    `bw_slope: |least-squares slope| ≤ ${ssLimitPct}% of the mean per second over ${window}`;
  const criterion = steady
    ? `${slope}; each point runs until that holds or for ${runtimeMs / 1000} s (then steady: false)`
    : `fixed time: ${rampMs / 1000} s ramp + ${runtimeMs / 1000} s measured per point; ` +
      `steady = ${slope}`;
  return `${criterion}; best = highest bandwidth, ties within ${
    TIE_MARGIN * 100
  }% go to the smaller iodepth×numjobs`;
}

export { bwSlopePct, isSteady } from "./steady.ts";

/**
 * The best point: the highest bandwidth, ties (within `margin` of it) going
 * to the smaller `iodepth × numjobs`, then to the higher bandwidth.
 *
 * @throws {RangeError} when there are no points.
 *
 * @example
 * ```ts
 * import { pickBest } from "./sweep.ts";
 * import type { SweepPoint } from "../schema/sweep.ts";
 * const p = (iodepth: number, bw: number): SweepPoint => ({ bs: 1 << 20, iodepth, numjobs: 1,
 *   bw_bytes: bw, iops: 0, lat_p50_ns: 0, lat_p99_ns: 0, runtime_ms: 1, steady: true, run: 0 });
 * console.assert(pickBest([p(64, 1000), p(8, 980), p(1, 500)]).iodepth === 8);
 * console.assert(pickBest([p(64, 1000), p(8, 980)], 0).iodepth === 64);
 * ```
 */
export function pickBest(points: readonly SweepPoint[], margin = TIE_MARGIN): SweepPoint {
  if (points.length === 0) throw new RangeError("no points to pick the best of");
  const max = Math.max(...points.map((p) => p.bw_bytes));
  const near = points.filter((p) => p.bw_bytes >= max * (1 - margin));
  return near.reduce((a, b) => {
    const ca = a.iodepth * a.numjobs, cb = b.iodepth * b.numjobs;
    if (ca !== cb) return cb < ca ? b : a;
    return b.bw_bytes > a.bw_bytes ? b : a;
  });
}

const NO_PREDICTION: Prediction = {
  update_s: 0,
  read_s: 0,
  write_s: 0,
  compute_s: 0,
  overlap_s: 0,
  bytes: {},
  feasible: true,
};

/**
 * DeepSpeed's `aio` block for a point on a tier, written by the plan exporter
 * (solver/export.ts) for `version`: `block_size` = bs, `queue_depth` =
 * iodepth, `thread_count` (0.13.3) or `intra_op_parallelism` (0.16.9) =
 * numjobs. `{}` for tiers DeepSpeed cannot swap to (memory, null, s3).
 *
 * @example
 * ```ts
 * import { sweepAio } from "./sweep.ts";
 * const point = { bs: 1 << 20, iodepth: 16, numjobs: 2 };
 * const aio = sweepAio({ kind: "file", path: "/mnt/nvme" }, point, "0.13.3");
 * console.assert(aio.block_size === 1 << 20 && aio.queue_depth === 16 && aio.thread_count === 2);
 * ```
 */
export function sweepAio(
  tier: TierSpec,
  point: Pick<SweepPoint, "bs" | "iodepth" | "numjobs">,
  version: DeepSpeedVersion,
): Record<string, unknown> {
  if (tier.kind !== "file" && tier.kind !== "pfs") return {};
  const plan: PlanDocument = {
    schema: PLAN_SCHEMA,
    created: new Date().toISOString(),
    profile: { source: "tierbench sweep", tiers: [formatTierSpec(tier)] },
    setup: { subgroup_elements: 1e8 },
    inputs: {},
    placement: {
      host_subgroups: 0,
      order: "ascending",
      paths: [{
        name: "local",
        tier: tier.kind,
        subgroups: 1,
        ratio: 1,
        cache_subgroups: 0,
        bs: point.bs,
        iodepth: point.iodepth,
      }],
    },
    predictions: { zero_offload: NO_PREDICTION, zero_infinity: NO_PREDICTION, plan: NO_PREDICTION },
    why: [],
    exports: { deepspeed: {}, mlp_offload: {} },
  };
  const ds = deepspeedConfig(plan, {
    deepspeedVersion: version,
    aioThreads: point.numjobs,
    dirs: { local: tier.path },
  });
  return { ...ds.config.aio };
}

/** A run's figures as a grid point. */
function pointOf(r: RunResult, run: number, steady: boolean): SweepPoint {
  const o = r.options;
  const d = o.rw === "randrw"
    ? (r.read.total_ios >= r.write.total_ios ? r.read : r.write)
    : jobReads(o as { rw: RwMode })
    ? r.read
    : r.write;
  return {
    bs: o.bs,
    iodepth: o.iodepth,
    numjobs: o.numjobs,
    bw_bytes: r.read.bw_bytes + r.write.bw_bytes,
    iops: Math.round((r.read.iops + r.write.iops) * 10) / 10,
    lat_p50_ns: d.lat_ns.percentile["50.000000"] ?? 0,
    lat_p99_ns: d.lat_ns.percentile["99.000000"] ?? 0,
    runtime_ms: d.runtime,
    steady,
    run,
  };
}

/** Options of {@linkcode runSweep}. */
export interface SweepHooks {
  readonly signal?: AbortSignal;
  /** Each point's progress, and where it stands in the grid. */
  readonly onProgress?: (p: RunProgress, step: StepProgress) => void;
  readonly runId?: string;
  /** The resolved configuration, recorded as is. */
  readonly config?: Record<string, unknown>;
}

/**
 * Runs a sweep: each tier set up once, its points in order, one result
 * document of `kind: "sweep"` with every point's run in `runs` and the grid
 * in `sweep`. Stops at the first point that fails or is interrupted (the
 * points measured until then are kept, and each tier's best among them);
 * every tier's scratch directory is removed whatever happens.
 *
 * @example
 * ```ts
 * import { planSweep, runSweep } from "./sweep.ts";
 * const plan = planSweep({ tiers: [{ kind: "null", path: "" }], bs: "4k", iodepth: "1,2",
 *   numjobs: "1", size: "1m", runtime: "200ms", ramp: "0", ssDur: "3" });
 * const { doc } = await runSweep(plan);
 * console.assert(doc.kind === "sweep" && doc.sweep!.tiers[0]!.points.length === 2);
 * ```
 */
export function runSweep(plan: SweepPlan, hooks: SweepHooks = {}): Promise<SessionOutcome> {
  const jobs = plan.groups.flatMap((g) => g.jobs);
  checkSpace(jobs.map((j) => [j])); // before any I/O: a grid whose files cannot fit is refused
  return withSession(
    { ...hooks, kind: "sweep", config: hooks.config ?? {}, timeoutMs: sessionTimeout(jobs) },
    async ({ doc, tier: open }) => {
      const sweep: SweepResult = { criterion: plan.criterion, tiers: [] };
      doc.sweep = sweep;
      const count = plan.groups.reduce((n, g) => n + g.jobs.length, 0);
      const walls: number[] = [];
      let status: RunStatus = "ok";
      let index = 0;
      for (const group of plan.groups) {
        const points: SweepPoint[] = [];
        try {
          for (const job of group.jobs) {
            if (hooks.signal?.aborted) {
              status = "interrupted";
              break;
            }
            const tier = await open(job.tier, job.s3);
            index++;
            const t0 = performance.now();
            const perPoint = walls.length > 0
              ? walls.reduce((a, b) => a + b, 0) / walls.length
              : plan.pointMs;
            const step = (): StepProgress => ({
              what: "point",
              index,
              count,
              leftMs: Math.max(0, perPoint - (performance.now() - t0)) + (count - index) * perPoint,
            });
            const { result, steady } = await runPoint(tier, job, plan, hooks, step);
            walls.push(performance.now() - t0);
            doc.runs.push(result);
            if (result.status !== "ok") {
              status = result.status;
              if (result.error !== undefined) doc.error = result.error;
              break;
            }
            points.push(pointOf(result, doc.runs.length - 1, steady));
          }
        } finally {
          if (points.length > 0) {
            const best = pickBest(points);
            sweep.tiers.push({
              tier: formatTierSpec(group.tier),
              rw: group.rw,
              points,
              best,
              aio: sweepAio(group.tier, best, plan.deepspeedVersion),
            });
          }
        }
        if (status !== "ok") break;
      }
      return status;
    },
  );
}

/**
 * One point. With `plan.steady` it is stopped (through its own abort
 * signal) once the slope test passes, and its result counts as a complete
 * run of the time it measured; an abort of `hooks.signal` interrupts it.
 */
async function runPoint(
  tier: Tier,
  job: JobOptions,
  plan: SweepPlan,
  hooks: SweepHooks,
  step: () => StepProgress,
): Promise<{ result: RunResult; steady: boolean }> {
  const stop = new AbortController();
  const relay = () => stop.abort(hooks.signal?.reason);
  hooks.signal?.addEventListener("abort", relay);
  if (hooks.signal?.aborted) relay();
  const watch = plan.steady ? new SteadyWatch() : undefined;
  const criterion = { sampleMs: 1000, window: plan.ssSamples, limitPct: plan.ssLimitPct };
  let reached = false;
  try {
    const result = await runJob(tier, job, {
      signal: stop.signal,
      onProgress: (p) => {
        if (watch && !reached && watch.see(p) && watch.steady(criterion)) {
          reached = true;
          stop.abort("steady state");
        }
        hooks.onProgress?.(p, step());
      },
    });
    if (reached && result.status === "interrupted" && !hooks.signal?.aborted) {
      // stopped because it had settled: a complete point of the time it measured
      result.status = "ok";
      delete result.error;
    }
    if (plan.steady) return { result, steady: reached };
    const series = result.timeseries.read_bw_bytes.map((r, i) =>
      r + (result.timeseries.write_bw_bytes[i] ?? 0)
    );
    // time series intervals are log_avg_msec (1 s by default): the same samples
    const perSecond = result.options.log_avg_msec === 1000;
    return {
      result,
      steady: perSecond && isSteady(series, plan.ssSamples, plan.ssLimitPct),
    };
  } finally {
    hooks.signal?.removeEventListener("abort", relay);
  }
}
