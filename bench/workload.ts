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

import { formatTierSpec, type TierSpec } from "../core/config.ts";
import { formatBytes } from "../core/units.ts";
import { ConfigError } from "../core/errors.ts";
import type { ResultDocument } from "../schema/result.ts";
import { withSession } from "./session.ts";
import { freeBytes } from "../core/libc.ts";
import type { S3TierOptions } from "../tiers/s3.ts";
import type { WorkloadDefinition, WorkloadOptions, WorkloadPaths } from "../workloads/common.ts";
import type { WorkloadProgram } from "../workloads/ops.ts";
import type { StreamEngine } from "./_rank.ts";
import { runWorkloadSession, type WorkloadProgress } from "./_workload_ranks.ts";

export { STREAM_ENGINES, type StreamEngine } from "./_rank.ts";
export type { WorkloadProgress } from "./_workload_ranks.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";
import type { WorkloadResult } from "../schema/workload.ts";
import { describeSetup, type TrainingSetup } from "../workloads/setup.ts";

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
  const program = buildProgram(def, setup, paths, workloadOptions);
  if (opts.backgroundRate !== undefined) checkBackgroundRate(program, byName);
  checkWorkloadSpace(program, byName);
  const timelineIteration = program.warmupIterations + program.iterations - 1;
  const result = newWorkloadResult(def, setup, workloadOptions, program, timelineIteration);
  const engine = opts.engine ?? "libaio";
  if (engine === "io_uring" && specs.some((s) => s.kind !== "s3")) {
    const refused = ioUringRefusal();
    if (refused !== undefined) throw new ConfigError("engine", refused);
  }
  const session = { ...opts, kind: "workload", config: opts.config ?? {} } as const;
  const run = { program, result, byName, engine, timelineIteration, opts };
  return await withSession(session, (s) => runWorkloadSession(run, s));
}

/**
 * Builds the program, first refusing one too large to hold.
 *
 * @throws {ConfigError} naming --iterations (too large) or --tiers (what the
 * workload cannot place on them).
 */
function buildProgram(
  def: WorkloadDefinition,
  setup: TrainingSetup,
  paths: WorkloadPaths,
  workloadOptions: WorkloadOptions,
): WorkloadProgram {
  try {
    checkProgramSize(def, setup, paths, workloadOptions);
    return def.build(setup, paths, workloadOptions);
  } catch (e) {
    if (e instanceof RangeError) throw new ConfigError("tiers", e.message, undefined, { cause: e });
    throw e;
  }
}

/** The document's `workload` before the run: what was set up, no figures yet. */
function newWorkloadResult(
  def: WorkloadDefinition,
  setup: TrainingSetup,
  workloadOptions: WorkloadOptions,
  program: WorkloadProgram,
  timelineIteration: number,
): WorkloadResult {
  return {
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
}
