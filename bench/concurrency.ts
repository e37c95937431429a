/**
 * The concurrency curves: each tier's bandwidth with 1, 2, … R processes
 * hitting it at once — all reading, all writing, and n reading while n
 * others write — at the request sizes the plan's systems issue (1 MiB × 8,
 * ZeRO-Infinity's aio block and depth; 2 MiB × 8, MLP-Offload's). Each
 * process is one job in its own Worker with its own file and its own libaio
 * or io_uring context, as n ranks would run. `bench` and `contention` write
 * the curves as the result's `concurrency` section (schema/concurrency.ts);
 * the solver reads them into the profile (docs/profile.md).
 *
 * ```sh
 * deno task tierbench contention --tiers memory:/dev/shm,file:/mnt/nvme --processes 1,2,4
 * ```
 *
 * @module
 */

import type { S3TierOptions } from "../tiers/s3.ts";
import type { Tier } from "../tiers/types.ts";
import {
  formatTierSpec,
  type JobOptions,
  parseJobOptions,
  parseTimeout,
  type TierSpec,
} from "../core/config.ts";
import { splitList } from "../core/list.ts";
import { ConfigError, DirectIoUnsupportedError, errorLine } from "../core/errors.ts";
import { badSize, formatSize, parseSize } from "../core/units.ts";
import type { ContentionDirection } from "../schema/contention.ts";
import type {
  ConcurrencyResult,
  ConcurrencyResultCurve,
  ConcurrencyResultPoint,
  ConcurrencyResultTier,
} from "../schema/concurrency.ts";
import type { RunResult } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import { runTogether, statusOf, stopped, type TogetherOptions } from "./_together.ts";
import { tierLabels } from "./contention_groups.ts";
import { withSession } from "./session.ts";
import { meanAndError } from "./steady.ts";

/** Defaults of the curves (option text, as the CLI takes it). */
export const CONCURRENCY_DEFAULTS = {
  /** R: the processes go 1, 2, … R. */
  ranksPerNode: "4",
  /** The request sizes: ZeRO-Infinity's aio block (1 MiB) and MLP-Offload's (2 MiB). */
  bs: "1m,2m",
  /** Requests in flight per process: both systems' queue depth. */
  iodepth: "8",
  /** The longest a point measures, and warms up first (shorter when the command's are). */
  runtime: "2",
  ramp: "0.5",
  size: "256m",
} as const;

/**
 * Where the process counts come from `--ranks-per-node` (1, 2, … R), an
 * interior count is measured only where the curve is not flat: between two
 * measured counts whose read, write and mixed totals each lie within this
 * share of each other, or within twice the standard error of their
 * difference (from each point's quarter-second samples, with a steady-state
 * criterion: the points cannot be told apart), the counts between are left
 * to the linear interpolation the solver makes anyway (solver/concurrency.ts).
 */
export const FLAT_SHARE = 0.1;

/** A measured point with its totals' standard errors (bytes/s), for {@linkcode flatBetween}. */
interface MeasuredPoint {
  readonly point: ConcurrencyResultPoint;
  /** `read`, `write`, `mixed`: the standard error of that total (0 when unknown). */
  readonly error: Readonly<Record<string, number>>;
}

/** How the processes of a point run, as the result says it. */
export const CONCURRENCY_LAYOUT = "one Worker per process, each with its own file and its own " +
  "libaio or io_uring context (its own S3 client on s3), as that many ranks would";

/** Options of the curves: option text, validated like `run`'s. */
export interface ConcurrencyOptions extends TogetherOptions {
  /** The process counts, a comma list (default 1, 2, … `ranksPerNode`). */
  readonly processes?: string | undefined;
  /** R, when `processes` is not given. */
  readonly ranksPerNode?: string | undefined;
  /** Request sizes, a comma list. */
  readonly bs?: string | undefined;
  readonly iodepth?: string | undefined;
  readonly runtime?: string | undefined;
  readonly ramp?: string | undefined;
  /** Each process's file. */
  readonly size?: string | undefined;
  /** The engine of memory, file and pfs tiers (default libaio); s3 has its own. */
  readonly engine?: "libaio" | "io_uring" | undefined;
  /** Measure n reading while n others write (default true). */
  readonly mixed?: boolean | undefined;
  /** `--timeout` text: how long one request may take (default 30 s), clean-up included. */
  readonly timeout?: string | undefined;
  /** `--verify`: every block written stamped, every block read checked. */
  readonly verify?: boolean | undefined;
  readonly endpoint?: string | undefined;
  readonly region?: string | undefined;
  /** Names the tiers' scratch directories ({@linkcode runConcurrency} only). */
  readonly runId?: string | undefined;
}

/** The curves' options, checked. */
export interface ConcurrencyPlan {
  /** Ascending, each once. */
  readonly processes: number[];
  /** Ascending, each once, bytes. */
  readonly bs: number[];
  readonly iodepth: number;
  /** As option text, for the jobs. */
  readonly runtime: string;
  readonly ramp: string;
  readonly size: string;
  readonly mixed: boolean;
  /**
   * Interior counts left out where the curve is flat ({@linkcode FLAT_SHARE}):
   * the counts came from `ranksPerNode`; a `processes` list is measured whole.
   */
  readonly adaptive: boolean;
}

/** The largest process count a point may ask for. */
const MAX_PROCESSES = 256;

function positiveInt(field: string, text: string, max: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || n < 1 || n > max) {
    throw new ConfigError(field, `"${text}" is not an integer from 1 to ${max}`);
  }
  return n;
}

function ascending(field: string, values: number[], show: (n: number) => string): number[] {
  for (const [i, v] of values.entries()) {
    if (i > 0 && v <= values[i - 1]!) {
      throw new ConfigError(
        field,
        `${show(v)} does not follow ${show(values[i - 1]!)}`,
        "an ascending list, each value once",
      );
    }
  }
  return values;
}

/**
 * Checks the options of the curves. Refuses, naming the field: a process
 * list that is empty, not ascending or not of integers from 1 to 256; a
 * request size that is not a size; an iodepth that is not a positive integer.
 *
 * @throws {ConfigError} naming the first field at fault.
 *
 * @example
 * ```ts
 * import { planConcurrency } from "./concurrency.ts";
 * const p = planConcurrency({ ranksPerNode: "3" });
 * console.assert(p.processes.join() === "1,2,3" && p.bs.join() === "1048576,2097152");
 * console.assert(planConcurrency({ processes: "1,4" }).processes.join() === "1,4");
 * ```
 */
export function planConcurrency(o: ConcurrencyOptions): ConcurrencyPlan {
  const processes = o.processes !== undefined
    ? ascending(
      "processes",
      splitList("processes", o.processes, "e.g. 1,2,4").map((s) =>
        positiveInt("processes", s, MAX_PROCESSES)
      ),
      String,
    )
    : Array.from(
      {
        length: positiveInt(
          "ranks-per-node",
          o.ranksPerNode ?? CONCURRENCY_DEFAULTS.ranksPerNode,
          MAX_PROCESSES,
        ),
      },
      (_, i) => i + 1,
    );
  const bs = ascending(
    "concurrency-bs",
    splitList("concurrency-bs", o.bs ?? CONCURRENCY_DEFAULTS.bs, "e.g. 1m,2m").map((s) => {
      const n = parseSize(s);
      if (n === undefined || n < 1) {
        throw new ConfigError("concurrency-bs", badSize(s), "e.g. 1m,2m");
      }
      return n;
    }),
    formatSize,
  );
  return {
    processes,
    bs,
    iodepth: positiveInt("iodepth", o.iodepth ?? CONCURRENCY_DEFAULTS.iodepth, 65536),
    runtime: o.runtime ?? CONCURRENCY_DEFAULTS.runtime,
    ramp: o.ramp ?? CONCURRENCY_DEFAULTS.ramp,
    size: o.size ?? CONCURRENCY_DEFAULTS.size,
    mixed: o.mixed ?? true,
    adaptive: o.processes === undefined,
  };
}

/**
 * The counts of one curve in the order to measure them, and those left out:
 * without `flat`, every count in order; with it, the first and the last,
 * then, by halving, an interior count only where the two measured counts
 * around it are not `flat` (so a flat curve costs two points, a straight one
 * at most log2 more). `measure` gives a count's point, or undefined to stop
 * (a run that did not end ok).
 *
 * @example
 * ```ts
 * import { measureCounts } from "./concurrency.ts";
 * const seen: number[] = [];
 * const { skipped } = await measureCounts([1, 2, 3, 4], async (n) => (seen.push(n), n === 1 ? 100 : 200),
 *   (a, b) => Math.abs(a - b) <= 0.1 * Math.max(a, b));
 * console.assert(seen.join() === "1,4,2" && skipped.join() === "3");
 * ```
 */
export async function measureCounts<T>(
  counts: readonly number[],
  measure: (n: number) => Promise<T | undefined>,
  flat?: (a: T, b: T) => boolean,
): Promise<{ points: Map<number, T>; skipped: number[]; stopped: boolean }> {
  const points = new Map<number, T>();
  const skipped: number[] = [];
  const take = async (i: number) => {
    const p = await measure(counts[i]!);
    if (p !== undefined) points.set(counts[i]!, p);
    return p !== undefined;
  };
  if (!flat) {
    for (const i of counts.keys()) if (!await take(i)) return { points, skipped, stopped: true };
    return { points, skipped, stopped: false };
  }
  const last = counts.length - 1;
  if (!await take(0) || (last > 0 && !await take(last))) return { points, skipped, stopped: true };
  const spans: [number, number][] = last > 1 ? [[0, last]] : [];
  while (spans.length > 0) {
    const [i, j] = spans.pop()!;
    if (j - i < 2) continue;
    if (flat(points.get(counts[i]!)!, points.get(counts[j]!)!)) {
      skipped.push(...counts.slice(i + 1, j));
      continue;
    }
    const mid = Math.floor((i + j) / 2);
    if (!await take(mid)) return { points, skipped, stopped: true };
    spans.push([mid, j], [i, mid]);
  }
  return { points, skipped: skipped.sort((a, b) => a - b), stopped: false };
}

/** A point's read, write and mixed (read + write) totals, bytes/s. */
function totals(p: ConcurrencyResultPoint): Record<string, number | undefined> {
  return {
    read: p.read_bw_bytes,
    write: p.write_bw_bytes,
    mixed: p.mixed_read_bw_bytes === undefined
      ? undefined
      : p.mixed_read_bw_bytes + p.mixed_write_bw_bytes!,
  };
}

/**
 * Whether two points of a curve are alike in every total: within
 * {@linkcode FLAT_SHARE} of the larger, or within twice the standard error
 * of their difference.
 */
function flatBetween(a: MeasuredPoint, b: MeasuredPoint): boolean {
  const ta = totals(a.point), tb = totals(b.point);
  return Object.keys(ta).every((k) => {
    const x = ta[k], y = tb[k];
    if (x === undefined || y === undefined) return true;
    const noise = 2 * Math.hypot(a.error[k] ?? 0, b.error[k] ?? 0);
    return Math.abs(x - y) <= Math.max(FLAT_SHARE * Math.max(x, y), noise);
  });
}

/** The standard error of a total from its members' samples (summed sample by sample). */
function totalError(members: readonly number[][]): number {
  if (members.length === 0) return 0;
  const n = Math.min(...members.map((m) => m.length));
  const sums = Array.from({ length: n }, (_, i) => members.reduce((t, m) => t + m[i]!, 0));
  return meanAndError(sums).error;
}

/**
 * The shorter of a command's per-point time and the curves' own limit, as
 * option text: the curves measure many points, so each is short, and a
 * command asked for shorter points (`bench --quick`, a test) gets those.
 *
 * @example
 * ```ts
 * import { shorterTime } from "./concurrency.ts";
 * console.assert(shorterTime("3", "2") === "2" && shorterTime("0.5", "2") === "0.5");
 * ```
 */
export function shorterTime(given: string | undefined, limit: string): string {
  if (given === undefined) return limit;
  const ms = (text: string) => parseJobOptions({ tier: "null:", ramp: text }).rampMs;
  return ms(given) < ms(limit) ? given : limit;
}

/** A mixed point's members. */
const BOTH: ContentionDirection[] = ["read", "write"];

/** A tier set up for the curves. */
export interface ConcurrencyTier {
  readonly tier: Tier;
  readonly label: string;
  readonly engine: string;
  readonly direct: boolean;
  readonly note?: string;
}

function jobFor(
  t: ConcurrencyTier,
  p: ConcurrencyPlan,
  direction: ContentionDirection,
  bs: number,
  n: number,
  name: string,
  o: ConcurrencyOptions,
): JobOptions {
  const s3 = t.tier.spec.kind === "s3";
  return parseJobOptions({
    name,
    tier: formatTierSpec(t.tier.spec),
    rw: direction,
    bs: String(bs),
    size: p.size,
    runtime: p.runtime,
    ramp: p.ramp,
    iodepth: String(p.iodepth),
    numjobs: String(n),
    engine: s3 ? "libaio" : o.engine ?? "libaio",
    endFsync: false,
    timeout: o.timeout,
    verify: o.verify,
    ...(s3 ? { endpoint: o.endpoint, region: o.region } : { direct: t.direct }),
  });
}

/**
 * One point of a curve: all `n` reading, all writing, then (unless `mixed`
 * is false) n reading while n others write, started together; its figures,
 * or the outcome of the first run that did not end ok.
 */
async function measurePoint(
  t: ConcurrencyTier,
  p: ConcurrencyPlan,
  bs: number,
  n: number,
  runs: RunResult[],
  o: ConcurrencyOptions,
): Promise<MeasuredPoint | { status: RunStatus; error?: string }> {
  const point = `${t.label} ${formatSize(bs)} ${n}p`;
  const bw: Record<string, number> = {};
  const error: Record<string, number> = {};
  const names: string[] = [];
  const kinds: ContentionDirection[][] = [["read"], ["write"], ...(p.mixed ? [BOTH] : [])];
  for (const directions of kinds) {
    if (await stopped(o)) return { status: "interrupted", error: "interrupted" };
    const mixed = directions.length > 1;
    const members = directions.map((d) => {
      const name = `${t.label} ${d} ${formatSize(bs)} ${n}p${mixed ? " mixed" : ""}`;
      return { tier: t.tier, job: jobFor(t, p, d, bs, n, name, o), direction: d, label: t.label };
    });
    const label = `concurrency ${point} ${directions.join("+")}`;
    const run = await runTogether(members, members[0]!.job.rampMs, label, o);
    runs.push(...run.results);
    error[mixed ? "mixed" : directions[0]!] = totalError(run.samples);
    for (const [k, r] of run.results.entries()) {
      names.push(r.name);
      const d = directions[k]!;
      bw[`${mixed ? "mixed_" : ""}${d}`] = r[d].bw_bytes;
    }
    const outcome = statusOf(run.agreed);
    if (outcome.status !== "ok") return outcome;
  }
  const measured: ConcurrencyResultPoint = {
    processes: n,
    read_bw_bytes: bw.read!,
    write_bw_bytes: bw.write!,
    ...(p.mixed
      ? { mixed_read_bw_bytes: bw.mixed_read!, mixed_write_bw_bytes: bw.mixed_write! }
      : {}),
    runs: names,
  };
  return { point: measured, error };
}

/**
 * Measures every tier's curves on tiers already set up, into `section`
 * (which it fills as it goes) and `runs` (each run, named
 * `<label> <direction> <bs> <n>p`, the mixed ones with ` mixed`): per tier,
 * per request size, per process count ({@linkcode measureCounts}, interior
 * counts left out where the curve is flat when `p.adaptive`): all reading,
 * all writing, then (unless `mixed` is false) n reading while n others
 * write, started together. Stops at the first run that does not end ok.
 */
export async function measureConcurrency(
  tiers: readonly ConcurrencyTier[],
  p: ConcurrencyPlan,
  section: ConcurrencyResult,
  runs: RunResult[],
  o: ConcurrencyOptions,
): Promise<{ status: RunStatus; error?: string }> {
  for (const t of tiers) {
    const entry: ConcurrencyResultTier = {
      label: t.label,
      tier: formatTierSpec(t.tier.spec),
      engine: t.engine,
      direct: t.direct,
      ...(t.note !== undefined ? { note: t.note } : {}),
      curves: [],
    };
    section.tiers.push(entry);
    for (const bs of p.bs) {
      const curve: ConcurrencyResultCurve = { bs, iodepth: p.iodepth, points: [] };
      entry.curves.push(curve);
      let failed: { status: RunStatus; error?: string } | undefined;
      const measured = await measureCounts(p.processes, async (n) => {
        const point = await measurePoint(t, p, bs, n, runs, o);
        if (!("status" in point)) return point;
        failed = point;
        return undefined;
      }, p.adaptive ? flatBetween : undefined);
      curve.points = [...measured.points.values()].map((m) => m.point)
        .sort((a, b) => a.processes - b.processes);
      if (measured.skipped.length > 0) curve.interpolated = measured.skipped;
      if (failed) return failed;
    }
  }
  return { status: "ok" };
}

/** The section before anything ran. */
export function emptyConcurrency(p: ConcurrencyPlan | undefined): ConcurrencyResult {
  const job = p &&
    parseJobOptions({ tier: "null:", runtime: p.runtime, ramp: p.ramp, size: p.size });
  return {
    status: "ok",
    processes: p?.processes ?? [],
    ...(p?.adaptive ? { flat_share: FLAT_SHARE } : {}),
    runtime_ms: job?.runtimeMs ?? 0,
    ramp_ms: job?.rampMs ?? 0,
    size: job?.size ?? 0,
    layout: CONCURRENCY_LAYOUT,
    tiers: [],
  };
}

/** What {@linkcode runConcurrency} produced. */
export interface ConcurrencyOutcome {
  readonly concurrency: ConcurrencyResult;
  /** Every run of the curves. */
  readonly runs: RunResult[];
  /** A thrown error (bad options, a tier that could not be set up); undefined otherwise. */
  readonly error?: unknown;
}

/**
 * Sets `specs` up (O_DIRECT on file and pfs tiers, buffered on a pfs mount
 * that refuses it), measures their curves and disposes them, whatever
 * happens. Never throws: a bad option or a tier that cannot be set up comes
 * back as `error`, a failed or interrupted run as the section's status, with
 * every point measured until then.
 *
 * @example
 * ```ts ignore
 * import { runConcurrency } from "./concurrency.ts";
 * import { parseTierSpec } from "../core/config.ts";
 * const { concurrency } = await runConcurrency([parseTierSpec("memory:/dev/shm")], { processes: "1,2" });
 * console.log(concurrency.tiers[0]!.curves[0]!.points[1]!.read_bw_bytes); // 2 readers' total
 * ```
 */
export async function runConcurrency(
  specs: readonly TierSpec[],
  o: ConcurrencyOptions = {},
): Promise<ConcurrencyOutcome> {
  let section: ConcurrencyResult = emptyConcurrency(undefined);
  const { doc, error } = await withSession(
    {
      kind: "profile",
      config: {},
      runId: o.runId,
      signal: o.signal,
      timeoutMs: parseTimeout(o.timeout),
    },
    async (session) => {
      try {
        const p = planConcurrency(o);
        section = emptyConcurrency(p);
        const labels = tierLabels(specs);
        const s3: S3TierOptions = { endpoint: o.endpoint, region: o.region };
        const tiers: ConcurrencyTier[] = [];
        for (const [i, spec] of specs.entries()) {
          if (spec.kind === "null") continue;
          const label = labels[i]!;
          const scratch = label === spec.kind
            ? session.runId
            : `${session.runId}-${label.slice(spec.kind.length)}`;
          tiers.push(await setUpTier(await session.tier(spec, s3, scratch), label, p, o));
        }
        const outcome = await measureConcurrency(tiers, p, section, session.doc.runs, {
          ...o,
          workers: session.workers,
        });
        if (outcome.status !== "ok") {
          section.status = outcome.status;
          if (outcome.error !== undefined) section.error = outcome.error;
        }
        return outcome.status;
      } catch (e) {
        section.status = "failed";
        section.error = errorLine(e);
        throw e;
      }
    },
  );
  const out = { concurrency: section, runs: doc.runs };
  return error === undefined ? out : { ...out, error };
}

/**
 * A set-up tier as the curves run it: O_DIRECT on file and pfs, buffered on
 * a pfs mount that refuses it (checked with a read job's prepare).
 */
export async function setUpTier(
  tier: Tier,
  label: string,
  p: ConcurrencyPlan,
  o: ConcurrencyOptions,
): Promise<ConcurrencyTier> {
  const kind = tier.spec.kind;
  const engine = kind === "s3" ? "s3" : o.engine ?? "libaio";
  const direct = kind === "file" || kind === "pfs";
  const t = { tier, label, engine, direct };
  try {
    await tier.prepare(jobFor(t, p, "read", p.bs[0]!, 1, `${label} probe`, o));
  } catch (e) {
    if (!(e instanceof DirectIoUnsupportedError) || kind !== "pfs") throw e;
    return {
      ...t,
      direct: false,
      note: `the mount refuses O_DIRECT (${e.fsType}): buffered I/O`,
    };
  }
  return t;
}
