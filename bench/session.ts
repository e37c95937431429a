/**
 * A session: several runs, maybe on several tiers, one result document. Sets
 * each tier up before its first run and disposes every tier at the end, so
 * scratch directories go whatever happens.
 *
 * @module
 */

import { openTier } from "../tiers/mod.ts";
import type { Tier } from "../tiers/types.ts";
import { newRunId } from "../tiers/scratch.ts";
import { formatTierSpec, type JobOptions } from "../core/config.ts";
import { hostFacts, peakRssBytes } from "../core/host.ts";
import { RESULT_SCHEMA, type ResultDocument, type RunStatus } from "../schema/result.ts";
import { runJob, type RunProgress } from "./runner.ts";

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
export async function runSession(
  jobs: readonly JobOptions[],
  opts: SessionOptions,
): Promise<SessionOutcome> {
  const runId = opts.runId ?? newRunId();
  const doc = newResultDocument(opts.kind, runId, opts.config);
  if (opts.remote) doc.remote = opts.remote;
  const tiers = new Map<string, Tier>();
  let error: unknown;
  let status: RunStatus = "ok";
  try {
    for (const [i, job] of jobs.entries()) {
      if (opts.signal?.aborted) {
        status = "interrupted";
        break;
      }
      const key = `${formatTierSpec(job.tier)} ${job.s3?.endpoint ?? ""} ${job.s3?.region ?? ""}`;
      let tier = tiers.get(key);
      if (!tier) {
        tier = openTier(job.tier, runId, job.s3);
        tiers.set(key, tier);
        await tier.setup();
      }
      opts.onRunStart?.(job, i);
      const hooks = {
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      };
      const result = await runJob(tier, job, hooks);
      doc.runs.push(result);
      if (result.status !== "ok") {
        status = result.status;
        if (result.error !== undefined) doc.error = result.error;
        break;
      }
    }
  } catch (e) {
    error = e;
    status = "failed";
    doc.error = e instanceof Error ? e.message : String(e);
  } finally {
    for (const tier of tiers.values()) await tier[Symbol.asyncDispose]();
  }
  return endResultDocument(doc, status, error);
}
