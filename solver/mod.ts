/**
 * The placement solver: profile to plan, the simulator and the exports; it reads documents and never runs I/O.
 *
 * @module
 */
export * from "./activations.ts";
export * from "./export.ts";
export * from "./model.ts";
export * from "./plan_check.ts";
export * from "./planner.ts";
export * from "./profile.ts";
export * from "./simulate.ts";
export * from "./slowdown.ts";
export * from "./solve.ts";
