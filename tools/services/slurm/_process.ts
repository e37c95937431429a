/**
 * Process helpers of the Slurm launcher: the services' own (tools/services/service),
 * with commands that fail throwing a {@linkcode SlurmError}, and every
 * process named by its pid and start time.
 *
 * @module
 */

import type * as service from "../service/process.ts";
import { run as runCommand } from "../service/process.ts";
import { SlurmError } from "./errors.ts";

export {
  alive,
  allExited,
  busyPorts,
  exists,
  kill,
  lastLines,
  message,
  onPath,
  type ProcStat,
  procStat,
  readText,
  running,
  type RunResult,
  seconds,
  signal,
  sleep,
} from "../service/process.ts";

/** A process: its pid and start time (clock ticks since boot), which together name one process. */
export type Proc = Required<service.Proc>;

/** Runs a command to completion with a hard time limit (default 30 s); a missing binary or a timeout throws. */
export function run(
  cmd: string,
  args: string[],
  opts: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<service.RunResult> {
  return runCommand(cmd, args, { timeoutMs: 30_000, ...opts, error: SlurmError });
}
