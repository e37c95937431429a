/**
 * The parts of a plan document that `tierbench replay` reads, checked before
 * it runs anything: a hand-edited or damaged plan is refused in one line
 * naming the file and field (an {@linkcode InputError}, exit 2) instead of
 * failing inside the replay with a TypeError.
 *
 * @module
 */

import { z } from "zod";
import { InputError } from "../core/errors.ts";
import { PLAN_SCHEMA, type PlanDocument } from "../schema/plan.ts";
import { describeZodIssue } from "../core/zod_issue.ts";

const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const positiveCount = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const pathSchema = z.object({
  name: z.string().min(1),
  tier: z.string(),
  subgroups: count,
  cache_subgroups: count,
  readers: count.optional(),
  writers: count.optional(),
  bs: positiveCount,
  iodepth: positiveCount,
});
const planSchema = z.object({
  schema: z.literal(PLAN_SCHEMA),
  profile: z.object({ source: z.string() }),
  setup: z.record(z.string(), z.union([z.number(), z.string()])),
  placement: z.object({
    paths: z.array(pathSchema).min(1).refine((ps) => ps.some((p) => p.name === "local"), {
      message: 'has no "local" path',
    }),
  }),
  predictions: z.object({
    plan: z.object({
      update_s: z.number().nonnegative(),
      bytes: z.record(z.string(), z.number().nonnegative()),
      path_s: z.record(z.string(), z.number()).optional(),
    }),
  }),
});

/**
 * `json` as a plan document, or an {@linkcode InputError} naming the file
 * and the first field at fault (`FILE: placement.paths[0].bs: …`).
 *
 * @example
 * ```ts
 * import { checkPlanDocument } from "./plan_check.ts";
 * try {
 *   checkPlanDocument({ schema: "tierbench/plan@1", placement: "x" }, "p.json");
 * } catch (e) {
 *   console.assert((e as Error).message.startsWith("p.json: placement: "));
 * }
 * ```
 */
export function checkPlanDocument(json: unknown, source: string): PlanDocument {
  const parsed = planSchema.safeParse(json);
  if (parsed.success) return json as PlanDocument;
  const { where: path, problem } = describeZodIssue(parsed.error.issues, { input: json });
  if (path === "" || path === "schema") {
    throw new InputError(
      source,
      `not a ${PLAN_SCHEMA} document: write one with \`tierbench plan\``,
    );
  }
  throw new InputError(
    source,
    `${path}: ${problem}; write the plan again with \`tierbench plan\``,
  );
}
