/**
 * How a run, a group or a whole document ended: the status every document carries.
 *
 * @module
 */

/** How a run ended. */
export type RunStatus = "ok" | "interrupted" | "failed";

/**
 * The worst of several statuses: failed over interrupted over ok (ok for none).
 *
 * @example
 * ```ts
 * import { worstStatus } from "./run_status.ts";
 * console.assert(worstStatus(["ok", "interrupted", "ok"]) === "interrupted");
 * console.assert(worstStatus([]) === "ok");
 * ```
 */
export function worstStatus(statuses: readonly RunStatus[]): RunStatus {
  if (statuses.includes("failed")) return "failed";
  if (statuses.includes("interrupted")) return "interrupted";
  return "ok";
}
