/**
 * Where a local service's daemon keeps its pid file and its log: named for
 * the daemon, in the layout's run and log directories.
 *
 * @module
 */

import { join } from "node:path";

/**
 * The pid file a daemon writes.
 *
 * @example
 * ```ts
 * import { pidFile } from "./daemon_files.ts";
 * console.assert(pidFile({ run: "/s/run" }, { name: "mon.a" }) === "/s/run/mon.a.pid");
 * ```
 */
export function pidFile(l: { run: string }, d: { name: string }): string {
  return join(l.run, `${d.name}.pid`);
}

/**
 * The log a daemon writes.
 *
 * @example
 * ```ts
 * import { logOf } from "./daemon_files.ts";
 * console.assert(logOf({ log: "/s/log" }, { name: "slurmd" }) === "/s/log/slurmd.log");
 * ```
 */
export function logOf(l: { log: string }, d: { name: string }): string {
  return join(l.log, `${d.name}.log`);
}
