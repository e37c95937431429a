/**
 * Multi-process runs: which launcher started this process
 * ({@linkcode detectLaunch}), and the group of processes with its barrier,
 * gather and broadcast ({@linkcode joinGroup}), over TCP or MPI.
 *
 * @example
 * ```ts
 * import { detectLaunch, joinGroup } from "./mod.ts";
 * await using group = await joinGroup(detectLaunch({}), { version: "1.0.0", timeoutMs: 1000 });
 * await group.barrier("phase 1", 1000);
 * ```
 *
 * @module
 */

export * from "./errors.ts";
export * from "./types.ts";
export { detectLaunch } from "./launch.ts";
export { joinGroup, type JoinOptions } from "./group.ts";
