/**
 * Runs a workload on real tiers: sets the tiers up, builds the programs,
 * starts one Worker per rank (ranks contend with each other, which is the
 * point), waits, aggregates, and removes every tier's scratch whatever
 * happened.
 *
 * Tiers map to the roles of a workload by kind: `memory:` is host memory
 * (and the device stand-in without a GPU), each `file:` is a node-local path
 * (`local`, `local2`, …), one `pfs:` or `s3://` is the remote path.
 *
 * @module
 */

import { join } from "node:path";
import { removeLockDir, runLockDir } from "./_node_lock.ts";
import { DEFAULT_TIMEOUT_MS, formatTierSpec, type TierSpec } from "../core/config.ts";
import type { Tier } from "../tiers/types.ts";
import { formatBytes } from "../core/units.ts";
import { ConfigError } from "../core/errors.ts";
import type { ResultDocument } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import { withSession } from "./session.ts";
import { cString, freeBytes, libc, O } from "../core/libc.ts";
import type { S3TierOptions } from "../tiers/s3.ts";
import type { S3Tier } from "../tiers/s3.ts";
import type { FileBackedTier } from "../tiers/file_backed.ts";
import type { WorkloadDefinition, WorkloadOptions, WorkloadPaths } from "../workloads/common.ts";
import type { WorkloadProgram } from "../workloads/ops.ts";
import type { PathRuntime, StreamEngine } from "./_rank.ts";

export { STREAM_ENGINES, type StreamEngine } from "./_rank.ts";
import type { RankMessage, RankStart } from "./_rank_worker.ts";
import { NodeSync } from "./_sync.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";
import { aggregate, type WorkloadPathResult, type WorkloadResult } from "../schema/workload.ts";
import { describeSetup, type TrainingSetup } from "../workloads/setup.ts";

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

/** Options of {@linkcode runWorkload}. */
export interface RunWorkloadOptions {
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: WorkloadProgress) => void;
  readonly s3?: S3TierOptions;
  readonly runId?: string;
  /** Recorded as is in the document. */
  readonly config?: Record<string, unknown>;
  /**
   * Names the tiers' scratch (default: the run id): a run across processes
   * gives each its own (`<run id>-r<rank>`), so nodes share a remote tier.
   */
  readonly scratchId?: string;
  /**
   * Called once every rank has laid out its objects (or failed to), before
   * any rank starts its first iteration; the ranks start when it resolves.
   * A run across processes meets the other nodes here. When it rejects, no
   * rank starts and the run fails with its error (the outcome's `error`).
   */
  readonly beforeStart?: () => Promise<void>;
  /** The rank streams' engine on memory, file and pfs paths (default libaio). */
  readonly engine?: StreamEngine;
  /**
   * How long one request may take (--timeout, default 30 s): past it the
   * rank fails naming it, and the tier under it is left for `clean`.
   */
  readonly timeoutMs?: number;
  /**
   * --verify: every byte a rank writes is a pattern of its object, write and
   * offset, and every object read back is checked against it.
   */
  readonly verify?: boolean;
  /**
   * `--background-rate`: bytes/s at which each rank moves the ops marked
   * `background` (a lazy flush), per path, on an open-loop schedule; by
   * default they go as fast as the tier allows.
   */
  readonly backgroundRate?: number;
  /**
   * The folder of the node-wide lock files (mlp-offload's locks), shared by
   * the processes of one run on one node, which remove it once every one is
   * done; by default the run's own under /dev/shm, removed at the end.
   */
  readonly lockDir?: string;
}

/** What a workload run produced; `error` when it ended early (the document says how). */
export interface WorkloadOutcome {
  readonly doc: ResultDocument;
  readonly error?: unknown;
}

/** Assigns tiers to roles and names the paths. */
export function pathsOf(
  specs: readonly TierSpec[],
): { paths: WorkloadPaths; byName: Map<string, TierSpec> } {
  const byName = new Map<string, TierSpec>();
  const local: string[] = [];
  let host: string | undefined, remote: string | undefined;
  for (const spec of specs) {
    switch (spec.kind) {
      case "memory":
        if (host !== undefined) {
          throw new ConfigError("tiers", "name at most one memory: tier (host memory)");
        }
        host = "host";
        byName.set(host, spec);
        break;
      case "file": {
        const name = local.length === 0 ? "local" : `local${local.length + 1}`;
        local.push(name);
        byName.set(name, spec);
        break;
      }
      case "pfs":
      case "s3":
        if (remote !== undefined) {
          throw new ConfigError("tiers", "name at most one remote tier (pfs:DIR or s3://BUCKET)");
        }
        remote = "remote";
        byName.set(remote, spec);
        break;
      case "null":
        throw new ConfigError(
          "tiers",
          "null: has no place in a workload",
          "memory:DIR, file:DIR (one or more), pfs:DIR or s3://BUCKET",
        );
    }
  }
  const paths: WorkloadPaths = {
    local,
    ...(host !== undefined ? { host } : {}),
    ...(remote !== undefined ? { remote } : {}),
  };
  return { paths, byName };
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

/**
 * The most ops a run's program may hold, over all ranks and iterations: every
 * op is an object in memory before the first byte moves (about 360 bytes each,
 * so this is some 700 MiB; 7 M ops ran Deno out of heap).
 */
export const MAX_PROGRAM_OPS = 2_000_000;

/**
 * Refuses, before building it, a program too large to hold: one iteration is
 * built to count its ops, and the whole run is that times its iterations.
 *
 * @throws {ConfigError} naming --iterations, with the most this setup allows.
 */
function checkProgramSize(
  def: WorkloadDefinition,
  setup: TrainingSetup,
  paths: WorkloadPaths,
  options: WorkloadOptions,
): void {
  const once = def.build({ ...setup, warmupIterations: 0, iterations: 1 }, paths, options);
  const perIteration = once.ranks.reduce((n, r) => n + r.ops.length, 0);
  const iterations = setup.warmupIterations + setup.iterations;
  if (perIteration * iterations <= MAX_PROGRAM_OPS) return;
  const most = Math.max(0, Math.floor(MAX_PROGRAM_OPS / perIteration) - setup.warmupIterations);
  throw new ConfigError(
    "iterations",
    `${setup.iterations} iterations (and ${setup.warmupIterations} warm-up) of ${def.name} ` +
      `with this setup make about ${perIteration * iterations} ops, more than the ` +
      `${MAX_PROGRAM_OPS} a run holds in memory`,
    `at most ${most} here, or a smaller --scale or a larger --subgroup-size`,
  );
}

/**
 * Refuses `--background-rate` for a program with no background ops, or with
 * some on an s3 path (the S3 streams have no schedule yet).
 *
 * @throws {ConfigError} naming --background-rate.
 */
function checkBackgroundRate(program: WorkloadProgram, byName: Map<string, TierSpec>): void {
  const paths = new Set<string>();
  for (const r of program.ranks) {
    for (const op of r.ops) {
      if (op.background && op.path !== undefined && (op.kind === "read" || op.kind === "write")) {
        paths.add(op.path);
      }
    }
  }
  if (paths.size === 0) {
    throw new ConfigError(
      "background-rate",
      `${program.workload} has no background I/O to pace`,
      "a workload with background ops, e.g. datastates (its lazy flush)",
    );
  }
  for (const name of paths) {
    if (byName.get(name)?.kind === "s3") {
      throw new ConfigError(
        "background-rate",
        `is not available on an s3 path yet (${program.workload}'s background ops go to ` +
          `${name}, an s3:// tier)`,
        "memory, file and pfs paths",
      );
    }
  }
}

/**
 * The bytes of objects each file-backed path holds by the end of the run:
 * every object a rank lays out or writes, at the largest extent written
 * (objects stay until the scratch is removed).
 */
function footprint(program: WorkloadProgram): Map<string, number> {
  const extents = new Map<string, number>();
  const grow = (key: string, end: number) => extents.set(key, Math.max(extents.get(key) ?? 0, end));
  for (const r of program.ranks) {
    for (const o of r.initial) grow(`${o.path}\0${r.rank}\0${o.object}`, o.bytes);
    for (const op of r.ops) {
      if (op.kind !== "write" || op.path === undefined) continue;
      grow(`${op.path}\0${r.rank}\0${op.object}`, (op.offset ?? 0) + op.bytes);
    }
  }
  const perPath = new Map<string, number>();
  for (const [key, bytes] of extents) {
    const path = key.slice(0, key.indexOf("\0"));
    perPath.set(path, (perPath.get(path) ?? 0) + bytes);
  }
  return perPath;
}

/**
 * Refuses, before any I/O, a program whose objects do not fit in the free
 * space of a file-backed tier.
 *
 * @throws {ConfigError} naming --scale, the bytes needed and free, and the tier.
 */
function checkWorkloadSpace(program: WorkloadProgram, byName: Map<string, TierSpec>): void {
  for (const [name, need] of footprint(program)) {
    const spec = byName.get(name);
    if (spec === undefined || spec.kind === "s3" || spec.kind === "null") continue;
    const free = freeBytes(spec.path);
    if (free === undefined || need <= free) continue;
    throw new ConfigError(
      "scale",
      `the ${name} path's objects need ${formatBytes(need)} on ${formatTierSpec(spec)} and its ` +
        `file system has ${formatBytes(free)} free`,
      "a smaller --scale, fewer --iterations or ranks, or free space there",
    );
  }
}

/**
 * Runs `def` with `setup` on the tiers named by `specs`.
 *
 * @example
 * ```ts ignore
 * import { parseTierSpec } from "../core/config.ts";
 * import { resolveSetup } from "../workloads/setup.ts";
 * import { zeroInfinity } from "../workloads/zero_infinity.ts";
 * const { doc } = await runWorkload(zeroInfinity, resolveSetup({ model: "7b", scale: 1e-4 }),
 *   [parseTierSpec("file:/mnt/nvme")]);
 * console.log(doc.workload?.summary?.update_s);
 * ```
 */
export async function runWorkload(
  def: WorkloadDefinition,
  setup: TrainingSetup,
  specs: readonly TierSpec[],
  workloadOptions: WorkloadOptions = {},
  opts: RunWorkloadOptions = {},
): Promise<WorkloadOutcome> {
  const { paths, byName } = pathsOf(specs);
  let program;
  try {
    checkProgramSize(def, setup, paths, workloadOptions);
    program = def.build(setup, paths, workloadOptions);
  } catch (e) {
    if (e instanceof RangeError) throw new ConfigError("tiers", e.message, undefined, { cause: e });
    throw e;
  }
  const backgroundRate = opts.backgroundRate;
  if (backgroundRate !== undefined) checkBackgroundRate(program, byName);
  checkWorkloadSpace(program, byName);
  const timelineIteration = program.warmupIterations + program.iterations - 1;
  const result: WorkloadResult = {
    name: def.name,
    setup: describeSetup(setup),
    options: Object.fromEntries(
      Object.entries(workloadOptions).filter(([, v]) => typeof v === "number"),
    ) as Record<string, number>,
    derived: { ...program.derived },
    notes: [...program.notes],
    paths: [],
    summary: null,
    iterations: [],
    ranks: [],
    timeline: {
      iteration: timelineIteration,
      columns: ["rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"],
      spans: [],
    },
  };
  const engine = opts.engine ?? "libaio";
  if (engine === "io_uring" && specs.some((s) => s.kind !== "s3")) {
    const refused = ioUringRefusal();
    if (refused !== undefined) throw new ConfigError("engine", refused);
  }
  const session = { ...opts, kind: "workload", config: opts.config ?? {} } as const;
  return await withSession(session, async ({ doc, tier: open }) => {
    doc.workload = result;
    const workers: Worker[] = [];
    const usesLocks = program.ranks.some((r) => r.ops.some((op) => op.kind === "lock"));
    const lockDir = opts.lockDir ?? runLockDir(doc.run_id);
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    /** The tiers under the paths, with where their requests go, to give up a hung one. */
    const opened: { tier: Tier; under: string }[] = [];
    let status: RunStatus = "ok";
    try {
      const runtimes: PathRuntime[] = [];
      for (const [index, policy] of program.paths.entries()) {
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
        runtimes.push(runtime);
        result.paths.push(
          {
            ...policy,
            direct,
            ...(spec.kind === "s3" ? {} : { engine }),
            tier: facts,
          } satisfies WorkloadPathResult,
        );
      }
      const sync = new NodeSync(program.ranks.length, runtimes.length);
      const onAbort = () => sync.abort();
      opts.signal?.addEventListener("abort", onAbort);
      const messages: RankMessage[] = [];
      const t0 = performance.now();
      const timer = opts.onProgress
        ? setInterval(() => {
          const [r, w] = sync.totals();
          const perPath = sync.pathTotals();
          opts.onProgress!({
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
        }, 200)
        : undefined;
      // With a beforeStart hook, the ranks wait at the start gate after their layout.
      const beforeStart = opts.beforeStart;
      const laidOut = new Set<number>();
      let gate: Promise<void> | undefined;
      let gateFailed: { error: unknown } | undefined;
      const reachGate = (rank: number) => {
        laidOut.add(rank);
        if (!beforeStart || gate || laidOut.size < program.ranks.length) return;
        gate = beforeStart().then(() => sync.open(), (error) => {
          gateFailed = { error };
          sync.abort();
        });
      };
      try {
        await new Promise<void>((resolve) => {
          for (const rp of program.ranks) {
            const w = new Worker(WORKER_URL, { type: "module", name: `rank${rp.rank}` });
            workers.push(w);
            const finish = (m: RankMessage) => {
              if (m.type === "ready") return reachGate(m.rank);
              messages.push(m);
              // A rank that ended before the gate still lets the others meet there.
              reachGate(m.type === "done" ? m.report.rank : m.rank);
              if (m.type !== "done") sync.abort();
              if (messages.length === program.ranks.length) resolve();
            };
            w.onmessage = (e: MessageEvent<RankMessage>) => finish(e.data);
            w.onerror = (e: ErrorEvent) => {
              e.preventDefault();
              finish({ type: "failed", rank: rp.rank, message: e.message });
            };
            const start: RankStart = {
              program: rp,
              paths: runtimes,
              ranks: program.ranks.length,
              sync: sync.buffers,
              timelineIteration,
              ...(beforeStart ? { gated: true } : {}),
              ...(backgroundRate === undefined ? {} : { backgroundRate }),
              ...(usesLocks ? { lockDir } : {}),
              ...(opts.verify ? { verify: { runId: doc.run_id } } : {}),
            };
            w.postMessage(start);
          }
        });
        await gate;
      } finally {
        if (timer !== undefined) clearInterval(timer);
        opts.signal?.removeEventListener("abort", onAbort);
      }
      if (gateFailed) throw gateFailed.error;
      for (const [i, path] of result.paths.entries()) {
        [path.peak_readers, path.peak_writers] = sync.peak(i);
      }
      const failure = messages.find((m) => m.type === "failed");
      for (const m of messages) {
        if (m.type !== "failed" || m.timedOut === undefined) continue;
        // touching a tier that stopped answering would hang too: leave it to `clean`
        const hung = opened.find((o) =>
          m.timedOut === o.under || m.timedOut!.startsWith(`${o.under}/`)
        );
        hung?.tier.abandon?.(`a request timed out after ${timeoutMs / 1000} s`);
      }
      if (failure && failure.type === "failed") {
        status = "failed";
        doc.error = `rank ${failure.rank}: ${failure.message}`;
      } else if (messages.some((m) => m.type === "aborted")) {
        status = "interrupted";
        doc.error = "interrupted";
      } else {
        const reports = messages.flatMap((m) => (m.type === "done" ? [m.report] : []));
        reports.sort((a, b) => a.rank - b.rank);
        Object.assign(result, aggregate(program, reports, timelineIteration));
        if (opts.verify) {
          result.verify = {
            checked_bytes: reports.reduce((n, r) => n + (r.verified_bytes ?? 0), 0),
          };
        }
        if (backgroundRate !== undefined) {
          const schedules = reports.flatMap((r) => r.background ?? []);
          result.background_rate = {
            bytes_per_s: backgroundRate,
            met: schedules.every((x) => x.met),
            schedules,
          };
        }
      }
    } finally {
      for (const w of workers) w.terminate();
      // the workers are gone, so no rank of this process opens a lock file again
      if (usesLocks && opts.lockDir === undefined) await removeLockDir(lockDir);
    }
    return status;
  });
}
