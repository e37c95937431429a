/**
 * The steps of a workload run inside its session (bench/workload.ts): open
 * the tiers under the paths, start one Worker per rank behind the start
 * gate, report progress, and turn what the ranks sent back into the run's
 * status and result.
 *
 * @module
 */

import { join } from "node:path";
import { removeLockDir, runLockDir } from "./_node_lock.ts";
import { DEFAULT_TIMEOUT_MS, type TierSpec } from "../core/config.ts";
import { cString, libc, O } from "../core/libc.ts";
import type { Tier } from "../tiers/types.ts";
import type { ResultDocument } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import type { Session } from "./session.ts";
import type { S3TierOptions } from "../tiers/s3.ts";
import type { S3Tier } from "../tiers/s3.ts";
import type { FileBackedTier } from "../tiers/file_backed.ts";
import type { PathPolicy, RankProgram, WorkloadProgram } from "../workloads/ops.ts";
import type { PathRuntime, StreamEngine } from "./_rank.ts";
import type { RankMessage, RankStart } from "./_rank_worker.ts";
import { NodeSync } from "./_sync.ts";
import {
  aggregate,
  type RankReport,
  type WorkloadPathResult,
  type WorkloadResult,
} from "../schema/workload.ts";

const WORKER_URL = new URL("./_rank_worker.ts", import.meta.url);

/** Progress of a workload run, for the progress line. */
export interface WorkloadProgress {
  /** Iteration rank 0 is in, from 0 (warm-up first). */
  iteration: number;
  iterations: number;
  bytesRead: number;
  bytesWritten: number;
  elapsedMs: number;
  /** Bytes moved so far on each path (`local`, `remote`, …). */
  paths?: { name: string; bytesRead: number; bytesWritten: number }[];
}

/** What these steps use of the run's options (bench/workload.ts's RunWorkloadOptions). */
export interface RankRunOptions {
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: WorkloadProgress) => void;
  readonly s3?: S3TierOptions;
  readonly scratchId?: string;
  readonly beforeStart?: () => Promise<void>;
  readonly timeoutMs?: number;
  readonly verify?: boolean;
  readonly backgroundRate?: number;
  readonly lockDir?: string;
}

/** A workload run, built and checked, ready to start in its session. */
export interface WorkloadRun {
  readonly program: WorkloadProgram;
  /** The document's `workload`, filled in as the run goes. */
  readonly result: WorkloadResult;
  readonly byName: Map<string, TierSpec>;
  readonly engine: StreamEngine;
  readonly timelineIteration: number;
  readonly opts: RankRunOptions;
}

/** A tier under a path, with where its requests go, to give up a hung one. */
interface Opened {
  readonly tier: Tier;
  readonly under: string;
}

/**
 * The body of a workload run's session: the tiers opened, the ranks run,
 * their reports made the result; every Worker ended and the run's own lock
 * folder removed whatever happened.
 */
export async function runWorkloadSession(
  run: WorkloadRun,
  { doc, tier: open }: Session,
): Promise<RunStatus> {
  const { program, result, opts } = run;
  doc.workload = result;
  const workers: Worker[] = [];
  const usesLocks = program.ranks.some((r) => r.ops.some((op) => op.kind === "lock"));
  const lockDir = opts.lockDir ?? runLockDir(doc.run_id);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const opened: Opened[] = [];
  try {
    const runtimes: PathRuntime[] = [];
    for (const [index, policy] of program.paths.entries()) {
      runtimes.push(await openPath(run, open, policy, index, timeoutMs, opened));
    }
    const sync = new NodeSync(program.ranks.length, runtimes.length);
    const base = {
      paths: runtimes,
      ranks: program.ranks.length,
      sync: sync.buffers,
      timelineIteration: run.timelineIteration,
      ...(opts.beforeStart ? { gated: true } : {}),
      ...(opts.backgroundRate === undefined ? {} : { backgroundRate: opts.backgroundRate }),
      ...(usesLocks ? { lockDir } : {}),
      ...(opts.verify ? { verify: { runId: doc.run_id } } : {}),
    };
    const messages = await runRanks(run, sync, base, workers);
    for (const [i, path] of result.paths.entries()) {
      [path.peak_readers, path.peak_writers] = sync.peak(i);
    }
    abandonHung(messages, opened, timeoutMs);
    return settle(run, doc, messages);
  } finally {
    for (const w of workers) w.terminate();
    // the workers are gone, so no rank of this process opens a lock file again
    if (usesLocks && opts.lockDir === undefined) await removeLockDir(lockDir);
  }
}

/** Whether O_DIRECT opens in `dir` (some network file systems refuse it). */
function directWorks(dir: string): boolean {
  const path = join(dir, ".direct-probe");
  const fd = libc().open(cString(path), O.RDWR | O.CREAT | O.DIRECT | O.CLOEXEC, 0o600);
  if (fd >= 0) libc().close(fd);
  try {
    Deno.removeSync(path);
  } catch { /* not made */ }
  return fd >= 0;
}

/** Opens the tier under `policy`'s path and records the path in the result. */
async function openPath(
  { byName, opts, engine, result }: WorkloadRun,
  open: Session["tier"],
  policy: PathPolicy,
  index: number,
  timeoutMs: number,
  opened: Opened[],
): Promise<PathRuntime> {
  const spec = byName.get(policy.name);
  if (!spec) {
    throw new TypeError(`workload uses path "${policy.name}", which no tier provides`);
  }
  const tier = await open(spec, opts.s3, opts.scratchId);
  const facts = tier.describe();
  let direct = false;
  let runtime: PathRuntime;
  if (spec.kind === "s3") {
    const s3 = tier as S3Tier;
    runtime = {
      policy,
      index,
      direct,
      s3: { loc: s3.location, bucket: s3.bucket, prefix: s3.scratchPrefix },
      timeoutMs,
    };
    opened.push({ tier, under: "s3" });
  } else {
    const dir = (tier as FileBackedTier).scratchDir;
    direct = spec.kind !== "memory" && directWorks(dir);
    if (spec.kind === "pfs" && !direct) {
      result.notes.push(`${policy.name}: O_DIRECT refused on ${spec.path}; buffered I/O`);
    }
    runtime = { policy, index, direct, dir, engine, timeoutMs };
    opened.push({ tier, under: dir });
  }
  result.paths.push(
    {
      ...policy,
      direct,
      ...(spec.kind === "s3" ? {} : { engine }),
      tier: facts,
    } satisfies WorkloadPathResult,
  );
  return runtime;
}

/**
 * Starts one Worker per rank and waits until every rank has ended (and the
 * start gate's hook, if any, has settled); rejects with the hook's error.
 */
async function runRanks(
  { program, opts }: WorkloadRun,
  sync: NodeSync,
  base: Omit<RankStart, "program">,
  workers: Worker[],
): Promise<RankMessage[]> {
  const onAbort = () => sync.abort();
  opts.signal?.addEventListener("abort", onAbort);
  const messages: RankMessage[] = [];
  const timer = startProgress(opts.onProgress, program, sync, base.paths);
  // With a beforeStart hook, the ranks wait at the start gate after their layout.
  const gate = startGate(opts.beforeStart, program.ranks.length, sync);
  try {
    await new Promise<void>((resolve) => {
      const finish = (m: RankMessage) => {
        if (m.type === "ready") return gate.reach(m.rank);
        messages.push(m);
        // A rank that ended before the gate still lets the others meet there.
        gate.reach(m.type === "done" ? m.report.rank : m.rank);
        if (m.type !== "done") sync.abort();
        if (messages.length === program.ranks.length) resolve();
      };
      for (const rp of program.ranks) workers.push(startRank(rp, base, finish));
    });
    await gate.passed();
  } finally {
    if (timer !== undefined) clearInterval(timer);
    opts.signal?.removeEventListener("abort", onAbort);
  }
  return messages;
}

/** Starts rank `rp`'s Worker; what it sends back, and its crash, go to `finish`. */
function startRank(
  rp: RankProgram,
  base: Omit<RankStart, "program">,
  finish: (m: RankMessage) => void,
): Worker {
  const w = new Worker(WORKER_URL, { type: "module", name: `rank${rp.rank}` });
  w.onmessage = (e: MessageEvent<RankMessage>) => finish(e.data);
  w.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    finish({ type: "failed", rank: rp.rank, message: e.message });
  };
  const start: RankStart = { program: rp, ...base };
  w.postMessage(start);
  return w;
}

/** Calls `onProgress` every 200 ms with the bytes moved so far; the timer, if any. */
function startProgress(
  onProgress: ((p: WorkloadProgress) => void) | undefined,
  program: WorkloadProgram,
  sync: NodeSync,
  runtimes: readonly PathRuntime[],
): ReturnType<typeof setInterval> | undefined {
  const t0 = performance.now();
  if (!onProgress) return undefined;
  return setInterval(() => {
    const [r, w] = sync.totals();
    const perPath = sync.pathTotals();
    onProgress({
      iteration: sync.iteration,
      iterations: program.warmupIterations + program.iterations,
      bytesRead: r,
      bytesWritten: w,
      elapsedMs: performance.now() - t0,
      paths: runtimes.map((rt, i) => ({
        name: rt.policy.name,
        bytesRead: perPath[i]?.[0] ?? 0,
        bytesWritten: perPath[i]?.[1] ?? 0,
      })),
    });
  }, 200);
}

/**
 * The start gate: once every rank has laid out (or ended), `beforeStart`
 * runs and, when it resolves, opens the gate; when it rejects, every rank
 * is aborted and `passed` rejects with its error.
 */
function startGate(
  beforeStart: (() => Promise<void>) | undefined,
  ranks: number,
  sync: NodeSync,
): { reach(rank: number): void; passed(): Promise<void> } {
  const laidOut = new Set<number>();
  let gate: Promise<void> | undefined;
  let failed: { error: unknown } | undefined;
  return {
    reach(rank) {
      laidOut.add(rank);
      if (!beforeStart || gate || laidOut.size < ranks) return;
      gate = beforeStart().then(() => sync.open(), (error) => {
        failed = { error };
        sync.abort();
      });
    },
    async passed() {
      await gate;
      if (failed) throw failed.error;
    },
  };
}

/** Gives up the tiers under requests that timed out: touching them would hang too. */
function abandonHung(
  messages: readonly RankMessage[],
  opened: readonly Opened[],
  timeoutMs: number,
) {
  for (const m of messages) {
    if (m.type !== "failed" || m.timedOut === undefined) continue;
    // touching a tier that stopped answering would hang too: leave it to `clean`
    const hung = opened.find((o) =>
      m.timedOut === o.under || m.timedOut!.startsWith(`${o.under}/`)
    );
    hung?.tier.abandon?.(`a request timed out after ${timeoutMs / 1000} s`);
  }
}

/** The run's status from the ranks' messages; the result summed up when all are done. */
function settle(
  run: WorkloadRun,
  doc: ResultDocument,
  messages: readonly RankMessage[],
): RunStatus {
  const failure = messages.find((m) => m.type === "failed");
  if (failure && failure.type === "failed") {
    doc.error = `rank ${failure.rank}: ${failure.message}`;
    return "failed";
  }
  if (messages.some((m) => m.type === "aborted")) {
    doc.error = "interrupted";
    return "interrupted";
  }
  const reports = messages.flatMap((m) => (m.type === "done" ? [m.report] : []));
  reports.sort((a, b) => a.rank - b.rank);
  summarize(run, reports);
  return "ok";
}

/** Fills the result in from the ranks' reports, in rank order. */
function summarize(
  { program, result, opts, timelineIteration }: WorkloadRun,
  reports: RankReport[],
) {
  Object.assign(result, aggregate(program, reports, timelineIteration));
  if (opts.verify) {
    result.verify = {
      checked_bytes: reports.reduce((n, r) => n + (r.verified_bytes ?? 0), 0),
    };
  }
  const backgroundRate = opts.backgroundRate;
  if (backgroundRate !== undefined) {
    const schedules = reports.flatMap((r) => r.background ?? []);
    result.background_rate = {
      bytes_per_s: backgroundRate,
      met: schedules.every((x) => x.met),
      schedules,
    };
  }
}
