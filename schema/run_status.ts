/**
 * How a run, a group or a whole document ended: the status every document carries.
 *
 * @module
 */

/** How a run ended. */
export type RunStatus = "ok" | "interrupted" | "failed";
