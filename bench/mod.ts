/**
 * Scheduling and measurement: the runner and its job worker, the session, the contention matrix, sweeps, node profiles, the workload executor and replay.
 *
 * @module
 */
export * from "./contention.ts";
export * from "./node_profile.ts";
export * from "./replay.ts";
export * from "./runner.ts";
export * from "./session.ts";
export * from "./sweep.ts";
export * from "./trace_record.ts";
export * from "./trace_replay.ts";
export * from "./workload.ts";
