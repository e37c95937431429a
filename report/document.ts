/**
 * Reading the documents a report draws: result documents
 * (`tierbench/result@1`, bench/result.ts) and plan documents
 * (`tierbench/plan@1`, solver/plan.ts).
 *
 * @module
 */

import { InputError } from "../core/errors.ts";
import { readJsonFile } from "../core/json_file.ts";
import { RESULT_SCHEMA, type ResultDocument } from "../schema/result.ts";
import { PLAN_SCHEMA, type PlanDocument } from "../schema/plan.ts";
import { fromFioJson, isFioJson } from "../schema/fio_json_read.ts";

import type { SweepResult } from "../schema/sweep.ts";

/** A result document as a report reads it (a sweep carries its `sweep` section). */
export type ReportDocument = ResultDocument;

/** A document read from a file: a result or a plan. */
export type LoadedDocument =
  | { kind: "result"; path: string; doc: ReportDocument }
  | { kind: "plan"; path: string; doc: PlanDocument };

/**
 * Reads a result or plan document, telling them apart by `schema`; fio's
 * JSON (json, json+, fio's own or tierbench's fio-json) is read as a result
 * document (schema/fio_json_read.ts). A file that cannot be read, is not
 * JSON, or is none of these throws an {@linkcode InputError} naming the
 * file, in one line.
 *
 * @example
 * ```ts ignore
 * const d = await loadDocument("results/readme-contention.json");
 * console.assert(d.kind === "result");
 * ```
 */
export async function loadDocument(path: string): Promise<LoadedDocument> {
  const json = await readJsonFile(path);
  const doc = json as { schema?: unknown; runs?: unknown; placement?: unknown } | null;
  if (isFioJson(json)) return { kind: "result", path, doc: fromFioJson(json, path) };
  if (doc?.schema === RESULT_SCHEMA && Array.isArray(doc.runs)) {
    return { kind: "result", path, doc: json as ReportDocument };
  }
  if (doc?.schema === PLAN_SCHEMA && doc.placement && typeof doc.placement === "object") {
    return { kind: "plan", path, doc: json as PlanDocument };
  }
  throw new InputError(
    path,
    `neither a ${RESULT_SCHEMA} nor a ${PLAN_SCHEMA} document, nor fio's JSON`,
    "a result JSON of run, bench, contention, workload or sweep, a plan JSON, or fio's " +
      "--output-format=json or json+",
  );
}

/** The sweep section when the document is a sweep and the section has the contract's shape. */
export function sweepOf(doc: ReportDocument): SweepResult | undefined {
  const s = doc.kind === "sweep" ? doc.sweep : undefined;
  if (!s || !Array.isArray(s.tiers)) return undefined;
  const tiers = s.tiers.filter((t) =>
    t && typeof t.tier === "string" && Array.isArray(t.points) && t.points.length > 0
  );
  return { criterion: typeof s.criterion === "string" ? s.criterion : "", tiers };
}
