/**
 * The documents as types: result, contention, sweep, workload, replay, plan and their status; report/, solver/ and compare read them.
 *
 * @module
 */
export * from "./concurrency.ts";
export * from "./contention.ts";
export * from "./plan.ts";
export * from "./profile.ts";
export * from "./replay.ts";
export * from "./result.ts";
export * from "./run_status.ts";
export * from "./scaling.ts";
export * from "./sweep.ts";
export * from "./trace_replay.ts";
export * from "./workload.ts";
