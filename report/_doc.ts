/**
 * Reading the documents a report draws: result documents
 * (`tierbench/result@1`, bench/result.ts) and plan documents
 * (`tierbench/plan@1`, solver/plan.ts), and the sweep section's contract.
 *
 * @module
 */

import { ConfigError } from "../bench/errors.ts";
import { RESULT_SCHEMA, type ResultDocument } from "../bench/result.ts";
import { PLAN_SCHEMA, type PlanDocument } from "../solver/plan.ts";

/** One point of a sweep (`doc.kind === "sweep"`, `doc.sweep`). */
export interface SweepPoint {
  bs: number;
  iodepth: number;
  numjobs: number;
  bw_bytes: number;
  iops: number;
  lat_p50_ns: number;
  lat_p99_ns: number;
  runtime_ms: number;
  steady: boolean;
  /** Index into `doc.runs`. */
  run: number;
}

/** One tier's grid of a sweep. */
export interface SweepTier {
  tier: string;
  rw: string;
  points: SweepPoint[];
  best: SweepPoint;
  aio: Record<string, unknown>;
}

/** The `sweep` section of a result document. */
export interface SweepResult {
  criterion: string;
  tiers: SweepTier[];
}

/** A result document as a report reads it: a sweep may carry a `sweep` section. */
export type ReportDocument = ResultDocument & { sweep?: SweepResult };

/** A document read from a file: a result or a plan. */
export type LoadedDocument =
  | { kind: "result"; path: string; doc: ReportDocument }
  | { kind: "plan"; path: string; doc: PlanDocument };

/**
 * Reads a result or plan document, telling them apart by `schema`. A file
 * that cannot be read, is not JSON, or is neither throws a
 * {@linkcode ConfigError} naming `field` (the argument it came from).
 *
 * @example
 * ```ts ignore
 * const d = await loadDocument("results/readme-contention.json", "result");
 * console.assert(d.kind === "result");
 * ```
 */
export async function loadDocument(path: string, field: string): Promise<LoadedDocument> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    throw new ConfigError(field, `${path}: cannot be read (${(e as Error).name})`, undefined, {
      cause: e,
    });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(field, `${path}: not JSON (${(e as Error).message})`, undefined, {
      cause: e,
    });
  }
  const doc = json as { schema?: unknown; runs?: unknown; placement?: unknown } | null;
  if (doc?.schema === RESULT_SCHEMA && Array.isArray(doc.runs)) {
    return { kind: "result", path, doc: json as ReportDocument };
  }
  if (doc?.schema === PLAN_SCHEMA && doc.placement && typeof doc.placement === "object") {
    return { kind: "plan", path, doc: json as PlanDocument };
  }
  throw new ConfigError(
    field,
    `${path}: neither a ${RESULT_SCHEMA} nor a ${PLAN_SCHEMA} document`,
    "a result JSON of run, bench, contention, workload or sweep, or a plan JSON",
  );
}

/** The sweep section when the document is a sweep and the section has the contract's shape. */
export function sweepOf(doc: ReportDocument): SweepResult | undefined {
  const s = doc.kind === ("sweep" as string) ? doc.sweep : undefined;
  if (!s || !Array.isArray(s.tiers)) return undefined;
  const tiers = s.tiers.filter((t) =>
    t && typeof t.tier === "string" && Array.isArray(t.points) && t.points.length > 0
  );
  return { criterion: typeof s.criterion === "string" ? s.criterion : "", tiers };
}
