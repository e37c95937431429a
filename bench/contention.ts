/**
 * The contention matrix: how much each tier slows down when other tiers do
 * I/O at the same time. Every tier is measured alone, then in every pair, then
 * all together (three tiers or more), once reading and once writing, with the
 * same pattern on every tier (1 MiB sequential, 8 in flight). Then, unless
 * `mixed` is false, every ordered pair in mixed directions: one tier reading
 * while the other writes (what an offloading system does when it reads the
 * next subgroup from one tier while writing the last to another). A tier's
 * slowdown in a group is its bandwidth alone (in its own direction) divided by
 * its bandwidth in that group: 1 means unaffected, 2 means half as fast. A
 * placement solver reads it from the result document's `contention` field.
 *
 * Tiers are set up once for the whole matrix. Alone runs go first, and each
 * tier's read run lays out its file, so later groups read files already laid
 * out; write runs only reserve blocks for fresh files (`posix_fallocate`).
 * The members of a group are started together (concurrent {@linkcode runJob}
 * calls on different tiers): each lays out its files, none ramps before all
 * have, then all ramp and measure over one window. Each one's layout, ramp
 * start and measured window are recorded, and a group whose layout still fell
 * inside another member's measured window is run again with a longer ramp.
 *
 * ```sh
 * deno task tierbench contention --tiers memory:/dev/shm,file:/mnt/nvme,pfs:/mnt/cephfs
 * ```
 *
 * @module
 */

import type { S3TierOptions } from "../tiers/s3.ts";
import type { Tier } from "../tiers/types.ts";
import { checkSpace } from "../tiers/space.ts";
import {
  formatTierSpec,
  type JobOptions,
  parseJobOptions,
  parseTimeout,
  type TierSpec,
} from "../core/config.ts";
import { ConfigError, DirectIoUnsupportedError, errorLine } from "../core/errors.ts";
import type { ResultDocument, RunResult } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import type { RunProgress } from "./runner.ts";
import {
  type ConcurrencyOptions,
  type ConcurrencyPlan,
  emptyConcurrency,
  measureConcurrency,
  planConcurrency,
} from "./concurrency.ts";
import {
  type ContentionCoordination,
  type GroupRun,
  runTogether,
  statusOf,
  stopped,
} from "./_together.ts";
import { type Session, type SessionOutcome, withSession } from "./session.ts";
import type { SteadyCriterion } from "./steady.ts";
import type { WorkerPool } from "./_worker_pool.ts";
import {
  CONTENTION_DIRECTIONS,
  CONTENTION_SCHEMA,
  type ContentionDirection,
  type ContentionGroup,
  type ContentionGroupDirection,
  type ContentionPattern,
  type ContentionResult,
  type ContentionSelf,
  type ContentionTierPattern,
  type ContentionTogether,
  type ContentionTogetherAt,
  type ContentionWindow,
  groupKey,
  slowdown,
  slowdownMatrix,
} from "../schema/contention.ts";
import {
  contentionGroups,
  layoutClear,
  mixedContentionGroups,
  tierLabels,
  windowOverlap,
} from "./contention_groups.ts";

/** Defaults of the matrix (option text, as the CLI takes it). */
export const CONTENTION_DEFAULTS = {
  runtime: "3",
  ramp: "1",
  size: "256m",
  bs: "1m",
  iodepth: "8",
} as const;

/** Added to twice the members' spread in readiness when a group is run again (ms). */
const LAYOUT_MARGIN_MS = 100;
/** Runs of a group whose layout fell inside a measured window, before giving up on it. */
const MAX_ATTEMPTS = 2;

/** Options of {@linkcode runContention}: option text, validated like `run`'s. */
export interface ContentionOptions {
  readonly runtime?: string | undefined;
  readonly ramp?: string | undefined;
  readonly size?: string | undefined;
  readonly bs?: string | undefined;
  readonly iodepth?: string | undefined;
  /** The engine of memory, file and pfs tiers (default libaio); s3 has its own. */
  readonly engine?: ContentionEngine | undefined;
  /** s3: endpoint URL (default from the environment). */
  readonly endpoint?: string | undefined;
  /** s3: region (default from the environment). */
  readonly region?: string | undefined;
  /** Run the mixed-direction pairs after the other groups (default true). */
  readonly mixed?: boolean | undefined;
  /** `--timeout` text: how long one request may take (default 30 s), clean-up included. */
  readonly timeout?: string | undefined;
  /** `--verify`: every block written stamped, every block read checked. */
  readonly verify?: boolean | undefined;
  /**
   * Stop each group (and each curve point) once every member's bandwidth is
   * steady, at most `runtime` (`bench`); absent, each measures all of it.
   */
  readonly steady?: SteadyCriterion | undefined;
  /** Job Workers reused from run to run (set from the session: callers leave it out). */
  readonly workers?: WorkerPool | undefined;
  /**
   * Measure each tier's concurrency curves after the matrix (bench/concurrency.ts),
   * with the matrix's engine, size and s3 settings; absent, none are measured.
   */
  readonly concurrency?: ContentionConcurrency | undefined;
  /**
   * Also runs each pair reading and writing at once with every job this many
   * processes (`together_at`); default: the largest count of `concurrency`,
   * else none. `bench`, which measures the curves on its own, passes it.
   */
  readonly togetherProcesses?: number | undefined;
  /** Names the result document (and, without `scratchId`, the tiers' scratch directories). */
  readonly runId?: string;
  /** Names the tiers' scratch directories (default: `runId`): a run across processes gives each its own. */
  readonly scratchId?: string;
  readonly signal?: AbortSignal;
  /** Progress of each group (of its first member, named after the group). */
  readonly onProgress?: (p: RunProgress) => void;
  /**
   * Keeps the matrix in step with the same matrix on other processes (a run
   * across nodes, docs/multinode.md): absent, the matrix runs on its own.
   */
  readonly coordinate?: ContentionCoordination;
}

export type { ContentionCoordination } from "./_together.ts";

/** The options of the concurrency curves a matrix measures after its groups. */
export type ContentionConcurrency = Pick<
  ConcurrencyOptions,
  "processes" | "ranksPerNode" | "bs" | "iodepth" | "runtime" | "ramp" | "mixed"
>;

/** What {@linkcode runContentionSession} produced. */
export interface ContentionSessionOutcome extends SessionOutcome {
  /**
   * For each of `doc.runs`, when its measurement began, ms after the
   * barrier that released it (0 without {@linkcode ContentionOptions.coordinate}).
   */
  readonly startMs: number[];
}

/** What {@linkcode runContention} produced. */
export interface ContentionOutcome {
  readonly contention: ContentionResult;
  /** Every run, alone and in groups, named `<tier> <direction> <group>`. */
  readonly runs: RunResult[];
  /** A thrown error (bad options, a tier that could not be set up); undefined otherwise. */
  readonly error?: unknown;
}

/** The parsed options and each tier's jobs. */
interface Plan {
  readonly labels: string[];
  readonly pattern: ContentionPattern;
  /** jobs[i][direction] for tier i. */
  readonly jobs: Record<ContentionDirection, JobOptions>[];
}

/** The engines `contention --engine` offers for memory, file and pfs tiers. */
export const CONTENTION_ENGINES = ["libaio", "io_uring"] as const;
/** One of {@linkcode CONTENTION_ENGINES}. */
export type ContentionEngine = typeof CONTENTION_ENGINES[number];

/**
 * How a tier runs: `engine` (libaio unless asked) at depth, O_DIRECT where
 * it means a device.
 */
function tierDefaults(
  spec: TierSpec,
  engine: ContentionEngine = "libaio",
): { engine: string; direct: boolean } {
  switch (spec.kind) {
    case "memory":
      return { engine, direct: false };
    case "file":
    case "pfs":
      return { engine, direct: true };
    case "s3":
      return { engine: "s3", direct: false };
    case "null":
      throw new ConfigError(
        "tiers",
        "null: does no I/O, so it cannot contend with anything; name storage tiers",
      );
  }
}

function jobFor(
  spec: TierSpec,
  label: string,
  direction: ContentionDirection,
  direct: boolean,
  o: ContentionOptions,
): JobOptions {
  const s3 = spec.kind === "s3";
  return parseJobOptions({
    name: `${label} ${direction}`,
    tier: formatTierSpec(spec),
    rw: direction,
    bs: o.bs ?? CONTENTION_DEFAULTS.bs,
    size: o.size ?? CONTENTION_DEFAULTS.size,
    runtime: o.runtime ?? CONTENTION_DEFAULTS.runtime,
    ramp: o.ramp ?? CONTENTION_DEFAULTS.ramp,
    iodepth: o.iodepth ?? CONTENTION_DEFAULTS.iodepth,
    engine: s3 ? "libaio" : o.engine ?? "libaio",
    endFsync: false,
    timeout: o.timeout,
    verify: o.verify,
    ...(s3 ? { endpoint: o.endpoint, region: o.region } : { direct }),
  });
}

/**
 * Validates the tiers and options and builds every tier's read and write job.
 *
 * @throws {ConfigError} for fewer than two tiers, one named twice, a null tier or a bad option.
 */
function plan(specs: readonly TierSpec[], o: ContentionOptions): Plan {
  if (specs.length < 2) {
    throw new ConfigError(
      "tiers",
      `needs at least two tiers to contend (got ${specs.length}): ` +
        "e.g. --tiers memory:/dev/shm,file:DIR",
    );
  }
  const texts = specs.map(formatTierSpec);
  const twice = texts.find((t, i) => texts.indexOf(t) !== i);
  if (twice !== undefined) {
    throw new ConfigError("tiers", `${twice} is named twice: name each tier once`);
  }
  const labels = tierLabels(specs);
  const jobs = specs.map((spec, i) => {
    const { direct } = tierDefaults(spec);
    return {
      read: jobFor(spec, labels[i]!, "read", direct, o),
      write: jobFor(spec, labels[i]!, "write", direct, o),
    };
  });
  // the matrix runs each tier alone and beside the others: all of its files at once, at most
  checkSpace([jobs.flatMap((j) => [j.read, j.write])]);
  const first = jobs[0]!.read;
  const tiers: Record<string, ContentionTierPattern> = {};
  for (const [i, spec] of specs.entries()) {
    tiers[labels[i]!] = {
      spec: texts[i]!,
      engine: tierDefaults(spec, o.engine).engine,
      iodepth: first.iodepth,
      direct: jobs[i]!.read.direct,
      end_fsync: false,
    };
  }
  return {
    labels,
    jobs,
    pattern: {
      rw: CONTENTION_DIRECTIONS,
      mixed: o.mixed ?? true,
      bs: first.bs,
      size: first.size,
      iodepth: first.iodepth,
      runtime_ms: first.runtimeMs!,
      ramp_ms: first.rampMs,
      tiers,
    },
  };
}

/** The matrix's state while it runs. */
interface Matrix {
  readonly plan: Plan;
  readonly tiers: Tier[];
  readonly runs: RunResult[];
  /** For each of `runs`, its measurement start after the processes' barrier (ms). */
  readonly startMs: number[];
  readonly alone: ContentionResult["alone"];
  readonly groups: ContentionGroup[];
  readonly self: Record<string, ContentionSelf>;
  readonly together: ContentionTogether[];
  /** Processes per job of the pairs measured again at the curves' largest count (none: 1). */
  readonly atProcesses: number;
  readonly togetherAt: ContentionTogetherAt[];
}

/**
 * The scratch name of the tier `spec` labelled `label` in a matrix whose
 * scratch is named `base`: two tiers of one kind may share a directory, so
 * the second and later (`file2`) add their number.
 *
 * @example
 * ```ts
 * import { contentionScratchId } from "./contention.ts";
 * import { parseTierSpec } from "../core/config.ts";
 * console.assert(contentionScratchId("r1", parseTierSpec("file:/tmp"), "file") === "r1");
 * console.assert(contentionScratchId("r1", parseTierSpec("file:/tmp"), "file2") === "r1-2");
 * ```
 */
export function contentionScratchId(base: string, spec: TierSpec, label: string): string {
  return label === spec.kind ? base : `${base}-${label.slice(spec.kind.length)}`;
}

/** Opens and sets up every tier (the session disposes them); makes pfs tiers buffered where the mount refuses O_DIRECT. */
async function setUp(
  specs: readonly TierSpec[],
  p: Plan,
  session: Session,
  tiers: Tier[],
  o: ContentionOptions,
): Promise<void> {
  const s3: S3TierOptions = { endpoint: o.endpoint, region: o.region };
  for (const [i, spec] of specs.entries()) {
    // Two tiers of one kind may share a directory: keep their scratch directories apart.
    const label = p.labels[i]!;
    const id = contentionScratchId(o.scratchId ?? session.runId, spec, label);
    const tier = await session.tier(spec, s3, id);
    tiers.push(tier);
    // prepare() of a read job checks the options against the tier and probes O_DIRECT.
    try {
      await tier.prepare(p.jobs[i]!.read);
    } catch (e) {
      if (!(e instanceof DirectIoUnsupportedError) || spec.kind !== "pfs") throw e;
      p.jobs[i] = {
        read: { ...p.jobs[i]!.read, direct: false },
        write: { ...p.jobs[i]!.write, direct: false },
      };
      p.pattern.tiers[label]!.direct = false;
      p.pattern.tiers[label]!.note = `the mount refuses O_DIRECT (${e.fsType}): buffered I/O`;
    }
  }
}

/**
 * {@linkcode setUp}, then, with coordination, the processes tell each other
 * how it went: a tier that could not be set up on one process stops every
 * process before the first group.
 */
async function setUpTogether(
  specs: readonly TierSpec[],
  p: Plan,
  session: Session,
  tiers: Tier[],
  o: ContentionOptions,
): Promise<void> {
  let failed: { error: unknown } | undefined;
  try {
    await setUp(specs, p, session, tiers, o);
  } catch (error) {
    failed = { error };
  }
  if (o.coordinate) {
    const message = failed
      ? (failed.error instanceof Error ? failed.error.message : String(failed.error))
      : null;
    const all = await o.coordinate.share(message);
    const other = all.findIndex((m) => m !== null);
    if (!failed && other >= 0) {
      throw new Error(`${o.coordinate.name(other)}: ${all[other]}`);
    }
  }
  if (failed) throw failed.error;
}

/** Runs one tier alone in one direction. */
async function runAlone(
  m: Matrix,
  i: number,
  direction: ContentionDirection,
  o: ContentionOptions,
): Promise<{ status: RunStatus; error?: string }> {
  const label = m.plan.labels[i]!;
  const job = { ...m.plan.jobs[i]![direction], name: `${label} ${direction} alone` };
  const run = await runTogether(
    [{ tier: m.tiers[i]!, job, direction, label }],
    job.rampMs,
    job.name,
    o,
  );
  const r = run.results[0]!;
  m.runs.push(r);
  m.startMs.push(...run.startMs);
  m.alone[label]![`${direction}_bw_bytes`] = r[direction].bw_bytes;
  return statusOf(run.agreed);
}

/**
 * Runs a group of two or more tiers, each member in its direction (given in
 * `--tiers` order), again if its layout was not clear.
 */
async function runGroup(
  m: Matrix,
  members: readonly { i: number; direction: ContentionDirection }[],
  o: ContentionOptions,
): Promise<ContentionGroup> {
  const labels = members.map(({ i }) => m.plan.labels[i]!);
  const rw: Record<string, ContentionDirection> = {};
  for (const [k, label] of labels.entries()) rw[label] = members[k]!.direction;
  const key = groupKey(labels, rw);
  const directions = new Set(members.map((x) => x.direction));
  const direction: ContentionGroupDirection = directions.size > 1 ? "mixed" : members[0]!.direction;
  const runtimeMs = m.plan.pattern.runtime_ms;
  const jobs = members.map(({ i, direction: d }) => ({
    tier: m.tiers[i]!,
    job: { ...m.plan.jobs[i]![d], name: `${m.plan.labels[i]} ${d} ${key}` },
    direction: d,
    label: m.plan.labels[i]!,
  }));
  const run = await runAligned(m, jobs, `${direction} ${key}`, o);
  const { status, error } = statusOf(run.agreed);
  m.runs.push(...run.results);
  m.startMs.push(...run.startMs);
  const bw: Record<string, number> = {};
  const windows: Record<string, ContentionWindow | null> = {};
  for (const [k, label] of labels.entries()) {
    bw[label] = run.results[k]![rw[label]!].bw_bytes;
    windows[label] = run.windows[k]!;
  }
  const slow: Record<string, number | null> = {};
  for (const label of labels) {
    slow[label] = slowdown(m.alone[label]![`${rw[label]!}_bw_bytes`], bw[label]!);
  }
  const group: ContentionGroup = {
    tiers: labels,
    key,
    direction,
    rw,
    status,
    bw_bytes: bw,
    slowdown: slow,
    ramp_ms: run.rampMs,
    attempts: run.attempts,
    windows_ms: windows,
    overlap: windowOverlap(run.windows, runtimeMs),
    layout_clear: run.clear,
  };
  if (error !== undefined) group.error = error;
  return group;
}

/**
 * Runs `jobs` together (every member laid out before any ramps, {@linkcode runTogether}); when a layout still fell inside a
 * measured window, runs them once more, ramping twice as long as the
 * members' spread in readiness (at most {@linkcode MAX_ATTEMPTS} runs).
 */
async function runAligned(
  m: Matrix,
  jobs: Parameters<typeof runTogether>[0],
  label: string,
  o: ContentionOptions,
): Promise<GroupRun & { rampMs: number; attempts: number; clear: boolean | null }> {
  let rampMs = m.plan.pattern.ramp_ms;
  for (let attempt = 1;; attempt++) {
    const run = await runTogether(jobs, rampMs, label, o);
    const clear = layoutClear(run.windows);
    // Decided alike on every process: again when any process's layout was not clear.
    if (run.agreed.status === "ok" && run.agreed.unclear && attempt < MAX_ATTEMPTS) {
      // The members were ready this far apart: ramp for twice that.
      rampMs = Math.max(2 * rampMs, Math.ceil(2 * run.agreed.spread + LAYOUT_MARGIN_MS));
      continue;
    }
    return { ...run, rampMs, attempts: attempt, clear };
  }
}

/**
 * Runs every group of the matrix in order (the mixed pairs last, after every
 * tier's read alone laid out its file); stops at the first that does not end ok.
 */
async function runMatrix(
  m: Matrix,
  o: ContentionOptions,
): Promise<{ status: RunStatus; error?: string }> {
  const record = async (members: { i: number; direction: ContentionDirection }[]) => {
    const g = await runGroup(m, members, o);
    m.groups.push(g);
    return g.error === undefined ? { status: g.status } : { status: g.status, error: g.error };
  };
  const indices = m.plan.labels.map((_, i) => i);
  for (const members of contentionGroups(indices)) {
    for (const direction of CONTENTION_DIRECTIONS) {
      if (await stopped(o)) return { status: "interrupted", error: "interrupted" };
      const outcome = members.length === 1
        ? await runAlone(m, members[0]!, direction, o)
        : await record(members.map((i) => ({ i, direction })));
      if (outcome.status !== "ok") return outcome;
    }
  }
  if (!m.plan.pattern.mixed) return { status: "ok" };
  for (const pair of mixedContentionGroups(indices)) {
    if (await stopped(o)) return { status: "interrupted", error: "interrupted" };
    const members = [
      { i: pair.read, direction: "read" as const },
      { i: pair.write, direction: "write" as const },
    ].sort((a, b) => a.i - b.i);
    const outcome = await record(members);
    if (outcome.status !== "ok") return outcome;
  }
  for (const i of indices) {
    if (await stopped(o)) return { status: "interrupted", error: "interrupted" };
    if (m.tiers[i]!.spec.kind === "s3") continue;
    const outcome = await runSelf(m, i, o);
    if (outcome.status !== "ok") return outcome;
  }
  const files = indices.filter((i) => m.tiers[i]!.spec.kind !== "s3");
  const pairs = contentionGroups(files).filter((g) => g.length === 2);
  for (const pair of pairs) {
    if (await stopped(o)) return { status: "interrupted", error: "interrupted" };
    const outcome = await runBoth(m, pair, o);
    if (outcome.status !== "ok") return outcome;
  }
  if (m.atProcesses <= 1) return { status: "ok" };
  for (const pair of pairs) {
    if (await stopped(o)) return { status: "interrupted", error: "interrupted" };
    const outcome = await runBoth(m, pair, o, m.atProcesses);
    if (outcome.status !== "ok") return outcome;
  }
  return { status: "ok" };
}

/**
 * Runs the tiers `indices` each reading and writing at once — a read job and
 * a write job on each, windows aligned — as the group `key` (a label for one
 * tier, the pair's key for two). Gives each tier's figures against
 * `baseline` (its own directions alone, or its reading and writing alone).
 */
async function runReadWrite(
  m: Matrix,
  indices: readonly number[],
  key: string,
  baseline: (label: string) => { read_bw_bytes: number; write_bw_bytes: number } | undefined,
  o: ContentionOptions,
  processes = 1,
): Promise<{
  figures: Record<string, ContentionSelf>;
  overlap: number | null;
  outcome: { status: RunStatus; error?: string };
}> {
  const labels = indices.map((i) => m.plan.labels[i]!);
  const name = `${key} read+write`;
  const members = indices.flatMap((i, k) =>
    CONTENTION_DIRECTIONS.map((direction) => ({
      tier: m.tiers[i]!,
      job: {
        ...m.plan.jobs[i]![direction],
        name: `${labels[k]} ${direction} ${name}`,
        numjobs: processes,
      },
      direction,
      label: labels[k]!,
    }))
  );
  // the read files were laid out by the reads alone; the write jobs' layouts are reservations
  const run = await runAligned(m, members, name, o);
  m.runs.push(...run.results);
  m.startMs.push(...run.startMs);
  const overlap = windowOverlap(run.windows, m.plan.pattern.runtime_ms);
  const figures: Record<string, ContentionSelf> = {};
  for (const [k, label] of labels.entries()) {
    const r = run.results[2 * k]!, w = run.results[2 * k + 1]!;
    const base = baseline(label);
    figures[label] = {
      read_bw_bytes: r.read.bw_bytes,
      write_bw_bytes: w.write.bw_bytes,
      slowdown: {
        read: base ? slowdown(base.read_bw_bytes, r.read.bw_bytes) : null,
        write: base ? slowdown(base.write_bw_bytes, w.write.bw_bytes) : null,
      },
      // a pair's overlap is the group's
      overlap: indices.length === 1 ? overlap : null,
    };
  }
  return { figures, overlap, outcome: statusOf(run.agreed) };
}

/** Runs one tier reading and writing at once, against its own directions alone. */
async function runSelf(
  m: Matrix,
  i: number,
  o: ContentionOptions,
): Promise<{ status: RunStatus; error?: string }> {
  const label = m.plan.labels[i]!;
  const out = await runReadWrite(m, [i], label, (t) => m.alone[t], o);
  m.self[label] = out.figures[label]!;
  return out.outcome;
}

/**
 * Runs a pair of tiers each reading and writing at once, against each one's
 * `self` figures; with `processes` above 1, every job that many processes
 * (into `togetherAt`).
 */
async function runBoth(
  m: Matrix,
  indices: readonly number[],
  o: ContentionOptions,
  processes = 1,
): Promise<{ status: RunStatus; error?: string }> {
  const key = indices.map((i) => m.plan.labels[i]!).join("+");
  const group = processes > 1 ? `${key} ${processes}p` : key;
  const out = await runReadWrite(m, indices, group, (t) => m.self[t], o, processes);
  const tiers = Object.keys(out.figures);
  const together = { tiers, key, members: out.figures, overlap: out.overlap };
  if (processes > 1) m.togetherAt.push({ ...together, processes });
  else m.together.push(together);
  return out.outcome;
}

/**
 * The concurrency curves of the matrix's tiers, set up as the matrix ran
 * them, into `doc.concurrency` and `doc.runs`; a run that does not end ok
 * ends the document with its status.
 */
async function runCurves(
  m: Matrix,
  curves: ConcurrencyPlan,
  doc: ResultDocument,
  o: ContentionOptions,
): Promise<RunStatus> {
  const section = emptyConcurrency(curves);
  doc.concurrency = section;
  const tiers = m.tiers.map((tier, i) => {
    const label = m.plan.labels[i]!;
    const t = m.plan.pattern.tiers[label]!;
    return {
      tier,
      label,
      engine: t.engine,
      direct: t.direct ?? false,
      ...(t.note !== undefined ? { note: t.note } : {}),
    };
  });
  const outcome = await measureConcurrency(tiers, curves, section, doc.runs, o);
  if (outcome.status === "ok") return "ok";
  section.status = outcome.status;
  doc.error = `concurrency: ${outcome.error ?? outcome.status}`;
  section.error = outcome.error ?? outcome.status;
  return outcome.status;
}

/**
 * Measures the contention matrix over `specs`: each tier alone, each pair,
 * and all together (three tiers or more), reading and writing; then each
 * ordered pair with the first reading while the second writes (unless
 * `mixed` is false). Tiers are set
 * up once and disposed at the end, whatever happens, so no scratch file is
 * left. Never throws: a bad option or a tier that cannot be set up comes back
 * as `error` (a {@linkcode ConfigError} for bad input), a failed or
 * interrupted run as the status, with every figure measured until then.
 *
 * @example
 * ```ts ignore
 * import { runContention } from "./contention.ts";
 * import { parseTierSpec } from "../core/config.ts";
 * const { contention } = await runContention(
 *   [parseTierSpec("memory:/dev/shm"), parseTierSpec("file:/mnt/nvme")],
 *   { runtime: "1", ramp: "0.5", size: "64m" },
 * );
 * console.log(contention.slowdown.read.memory?.file); // memory's read slowdown next to file
 * ```
 */
export async function runContention(
  specs: readonly TierSpec[],
  o: ContentionOptions = {},
): Promise<ContentionOutcome> {
  const { doc, error } = await runContentionSession(specs, o, {});
  const out = { contention: doc.contention!, runs: doc.runs };
  return error === undefined ? out : { ...out, error };
}

/** The section when the options were refused before anything ran. */
function emptyResult(specs: readonly TierSpec[], error: unknown): ContentionResult {
  return {
    schema: CONTENTION_SCHEMA,
    status: "failed",
    error: errorLine(error),
    pattern: {
      rw: CONTENTION_DIRECTIONS,
      mixed: false,
      bs: 0,
      size: 0,
      iodepth: 0,
      runtime_ms: 0,
      ramp_ms: 0,
      tiers: {},
    },
    tiers: tierLabels(specs),
    alone: {},
    groups: [],
    slowdown: { read: {}, write: {} },
  };
}

/**
 * `tierbench contention`: the matrix as a whole result document (kind
 * `"contention"`), its runs in `runs` and the matrix in `contention`.
 *
 * @example
 * ```ts ignore
 * import { runContentionSession } from "./contention.ts";
 * import { parseTierSpec } from "../core/config.ts";
 * const { doc } = await runContentionSession(
 *   [parseTierSpec("memory:"), parseTierSpec("file:/mnt/nvme")],
 *   { runtime: "1", ramp: "0.5", size: "64m" },
 *   { command: "contention" },
 * );
 * // memory+file read and write, then memory reading while file writes, and file reading while memory writes
 * console.assert(doc.kind === "contention" && doc.contention?.groups.length === 4);
 * ```
 */
export async function runContentionSession(
  specs: readonly TierSpec[],
  o: ContentionOptions,
  config: Record<string, unknown>,
): Promise<ContentionSessionOutcome> {
  const startMs: number[] = [];
  const outcome = await withSession(
    {
      kind: "contention",
      config,
      runId: o.runId,
      signal: o.signal,
      timeoutMs: parseTimeout(o.timeout),
    },
    async (session) => {
      const { doc } = session;
      let p: Plan;
      let curves: ConcurrencyPlan | undefined;
      try {
        p = plan(specs, o);
        curves = o.concurrency && planConcurrency({ ...o.concurrency, size: o.size });
      } catch (error) {
        doc.contention = emptyResult(specs, error);
        throw error;
      }
      const m: Matrix = {
        plan: p,
        tiers: [],
        runs: doc.runs,
        startMs,
        alone: Object.fromEntries(
          p.labels.map((l) => [l, { read_bw_bytes: 0, write_bw_bytes: 0 }]),
        ),
        groups: [],
        self: {},
        together: [],
        atProcesses: o.togetherProcesses ?? (curves ? Math.max(...curves.processes) : 1),
        togetherAt: [],
      };
      let outcome: { status: RunStatus; error?: string };
      let error: unknown;
      try {
        await setUpTogether(specs, p, session, m.tiers, o);
        outcome = await runMatrix(m, { ...o, workers: session.workers });
      } catch (e) {
        error = e;
        outcome = { status: "failed", error: errorLine(e) };
      }
      const contention: ContentionResult = {
        schema: CONTENTION_SCHEMA,
        status: outcome.status,
        pattern: p.pattern,
        tiers: p.labels,
        alone: m.alone,
        groups: m.groups,
        slowdown: slowdownMatrix(m.alone, m.groups),
      };
      if (Object.keys(m.self).length > 0) contention.self = m.self;
      if (m.together.length > 0) contention.together = m.together;
      if (m.togetherAt.length > 0) contention.together_at = m.togetherAt;
      if (outcome.error !== undefined && outcome.status !== "ok") contention.error = outcome.error;
      doc.contention = contention;
      if (contention.error !== undefined) doc.error = contention.error;
      if (error !== undefined) throw error;
      if (curves && contention.status === "ok") {
        return await runCurves(m, curves, doc, { ...o, workers: session.workers });
      }
      return contention.status;
    },
  );
  return { ...outcome, startMs };
}
