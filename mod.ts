/**
 * tierbench as a library: each folder's public API, lowest layer first
 * (docs/architecture.md). The command line is `./main.ts` (export `./cli`).
 *
 * @module
 */
export * from "./core/mod.ts";
export * from "./trace/mod.ts";
export * from "./tiers/mod.ts";
export * from "./engines/mod.ts";
export * from "./workloads/mod.ts";
export * from "./schema/mod.ts";
export * from "./solver/mod.ts";
export * from "./bench/mod.ts";
export * from "./report/mod.ts";
export { formatContentionTable } from "./cli/contention_table.ts";
export { formatPlan } from "./cli/plan_table.ts";
export { formatTable } from "./cli/run_table.ts";
