/**
 * A session: several runs, maybe on several tiers, one result document. Sets
 * each tier up before its first run and disposes every tier at the end, so
 * scratch directories go whatever happens.
 *
 * @module
 */

import { openTier } from "../tiers/mod.ts";
import { checkSpace } from "../tiers/space.ts";
import type { Tier } from "../tiers/types.ts";
import { newRunId } from "../tiers/scratch.ts";
import type { S3TierOptions } from "../tiers/s3.ts";
import {
  DEFAULT_TIMEOUT_MS,
  formatTierSpec,
  type JobOptions,
  type TierSpec,
} from "../core/config.ts";
import { hostFacts, peakRssBytes } from "../core/host.ts";
import { RESULT_SCHEMA, RESULT_SCHEMA_ID, type ResultDocument } from "../schema/result.ts";
import type { RunStatus } from "../schema/run_status.ts";
import { type SteadyCriterion, SteadyStop } from "./steady.ts";
import { runJob, type RunProgress, WORKER_URL } from "./runner.ts";
import { WorkerPool } from "./_worker_pool.ts";
export { leaveWorkersToExit } from "./_worker_pool.ts";
import { errorLine } from "../core/errors.ts";

/** The version written into results. */
export const VERSION = "0.1.0";

/**
 * A result document as every command opens it: schema, tool, run id, kind,
 * start (also `finished` until the end), host facts and configuration,
 * status "ok" and no runs yet.
 *
 * @example
 * ```ts
 * import { newResultDocument } from "./session.ts";
 * const doc = newResultDocument("run", "r1", { command: "run" });
 * console.assert(doc.status === "ok" && doc.finished === doc.started && doc.runs.length === 0);
 * ```
 */
export function newResultDocument(
  kind: ResultDocument["kind"],
  runId: string,
  config: Record<string, unknown>,
  started: string = new Date().toISOString(),
): ResultDocument {
  return {
    $schema: RESULT_SCHEMA_ID,
    schema: RESULT_SCHEMA,
    tool: { name: "tierbench", version: VERSION, deno: Deno.version.deno, peak_rss_bytes: 0 },
    run_id: runId,
    kind,
    started,
    finished: started,
    status: "ok",
    host: hostFacts(),
    config,
    runs: [],
  };
}

/**
 * Closes a result document: its status, the end time and the process's peak
 * memory; the outcome carries `error` when there was one.
 */
export function endResultDocument(
  doc: ResultDocument,
  status: RunStatus,
  error: unknown,
): SessionOutcome {
  doc.status = status;
  doc.finished = new Date().toISOString();
  doc.tool.peak_rss_bytes = peakRssBytes();
  return error === undefined ? { doc } : { doc, error };
}

/** Options of {@linkcode withSession}. */
export interface SessionSetup {
  readonly kind: ResultDocument["kind"];
  /** The resolved configuration, recorded as is. */
  readonly config: Record<string, unknown>;
  /** Names the tiers' scratch directories (default: a new run id). */
  readonly runId?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /**
   * How long one request to a tier may take (--timeout, default 30 s): each
   * tier's clean-up is bounded by it too.
   */
  readonly timeoutMs?: number | undefined;
}

/** What the body of {@linkcode withSession} is given. */
export interface Session {
  readonly runId: string;
  /** The result document, open: the body adds its runs and sections. */
  readonly doc: ResultDocument;
  /** Aborted on Ctrl-C (or by the caller): the body stops at its next step. */
  readonly signal: AbortSignal | undefined;
  /**
   * The tier `spec` names, opened and set up on first use and the same one
   * after; every tier opened here is disposed when the session ends.
   * `scratchId` names its scratch directory (default: the run id), for two
   * tiers that may share a directory.
   */
  tier(spec: TierSpec, s3?: S3TierOptions, scratchId?: string): Promise<Tier>;
  /** Job Workers reused from one run to the next (ended with the session: see leaveWorkersToExit). */
  readonly workers: WorkerPool;
}

/**
 * Opens a result document, runs `body` with it and the tiers it asks for,
 * then disposes every tier (removing its scratch) and closes the document,
 * whatever happened: on success, on a failed or interrupted run (the status
 * `body` returns) and on a throw. Never throws: an error thrown by `body` or
 * by a tier's disposal ends the session "failed" with the error's message in
 * the document's `error` and the error in the outcome.
 *
 * @example
 * ```ts
 * import { parseTierSpec } from "../core/config.ts";
 * import { withSession } from "./session.ts";
 * const { doc, error } = await withSession({ kind: "run", config: {} }, async (s) => {
 *   const tier = await s.tier(parseTierSpec("null:"));
 *   console.assert(tier === await s.tier(parseTierSpec("null:")));
 *   return "ok";
 * });
 * console.assert(doc.status === "ok" && error === undefined);
 * ```
 */
export async function withSession(
  setup: SessionSetup,
  body: (session: Session) => Promise<RunStatus>,
): Promise<SessionOutcome> {
  const runId = setup.runId ?? newRunId();
  const doc = newResultDocument(setup.kind, runId, setup.config);
  const tiers = new Map<string, Tier>();
  using workers = new WorkerPool(WORKER_URL);
  const session: Session = {
    runId,
    doc,
    signal: setup.signal,
    workers,
    async tier(spec, s3, scratchId = runId) {
      const key = `${scratchId} ${formatTierSpec(spec)} ${s3?.endpoint ?? ""} ${s3?.region ?? ""}`;
      let tier = tiers.get(key);
      if (!tier) {
        tier = openTier(spec, scratchId, s3, { timeoutMs: setup.timeoutMs ?? DEFAULT_TIMEOUT_MS });
        tiers.set(key, tier);
        await tier.setup();
      }
      return tier;
    },
  };
  let error: unknown;
  let status: RunStatus;
  try {
    status = await body(session);
  } catch (e) {
    error = e;
    status = "failed";
    doc.error = errorLine(e);
  }
  for (const tier of tiers.values()) {
    try {
      await tier[Symbol.asyncDispose]();
    } catch (e) {
      error ??= e;
      status = "failed";
      doc.error ??= errorLine(e);
    }
  }
  return endResultDocument(doc, status, error);
}

/** The longest --timeout of `jobs`: how long their tiers' clean-up may take. */
export function sessionTimeout(jobs: readonly JobOptions[]): number {
  if (jobs.length === 0) return DEFAULT_TIMEOUT_MS;
  return Math.max(...jobs.map((j) => j.timeoutMs ?? DEFAULT_TIMEOUT_MS));
}

/** Options of {@linkcode runSession}. */
export interface SessionOptions {
  readonly kind: ResultDocument["kind"];
  /** The resolved configuration, recorded as is. */
  readonly config: Record<string, unknown>;
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: RunProgress) => void;
  /** Called before each run starts. */
  readonly onRunStart?: (job: JobOptions, index: number) => void;
  readonly remote?: ResultDocument["remote"];
  readonly runId?: string;
  /** Stop each run once its bandwidth is steady (at most its runtime); absent, runs measure it all. */
  readonly steady?: SteadyCriterion;
  /** How long one request may take; default: the longest of the jobs' --timeout. */
  readonly timeoutMs?: number;
}

/** What a session produced: the document, and the error that ended it early, if any. */
export interface SessionOutcome {
  readonly doc: ResultDocument;
  /** A thrown error (bad config for a tier, setup failure); undefined otherwise. */
  readonly error?: unknown;
}

/**
 * Runs jobs in order and gathers their results. Stops at the first run that
 * fails or is interrupted; the document holds every run measured until then.
 *
 * @example
 * ```ts
 * import { parseJobOptions } from "../core/config.ts";
 * import { runSession } from "./session.ts";
 * const job = parseJobOptions({ tier: "null:", size: "1m", ioSize: "1m" });
 * const { doc } = await runSession([job], { kind: "run", config: {} });
 * console.assert(doc.status === "ok" && doc.runs.length === 1);
 * ```
 */
export function runSession(
  jobs: readonly JobOptions[],
  opts: SessionOptions,
): Promise<SessionOutcome> {
  checkSpace(jobs.map((j) => [j])); // before any tier is touched: files that cannot fit are refused now
  const timeoutMs = opts.timeoutMs ?? sessionTimeout(jobs);
  return withSession({ ...opts, timeoutMs }, async ({ doc, tier: open, workers }) => {
    if (opts.remote) doc.remote = opts.remote;
    for (const [i, job] of jobs.entries()) {
      if (opts.signal?.aborted) return "interrupted";
      const tier = await open(job.tier, job.s3);
      opts.onRunStart?.(job, i);
      const steady = new SteadyStop(opts.steady);
      const result = await runJob(tier, job, {
        ...(opts.signal ? { signal: opts.signal } : {}),
        onProgress: (p) => {
          steady.see(0, p);
          opts.onProgress?.(p);
        },
        ...(opts.steady ? { stonewall: steady.signal } : {}),
        workers,
      });
      const stated = steady.result();
      if (stated) result.steady = stated;
      doc.runs.push(result);
      if (result.status !== "ok") {
        if (result.error !== undefined) doc.error = result.error;
        return result.status;
      }
    }
    return "ok";
  });
}
