/**
 * Process helpers of the Ceph launcher: the services' own (tools/services/service),
 * with commands that fail throwing a {@linkcode CephError}.
 *
 * @module
 */

import { CephError } from "./errors.ts";
import * as service from "../service/process.ts";

export {
  alive,
  allExited,
  busyPorts,
  exists,
  kill,
  lastLine,
  message,
  onPath,
  type Proc,
  processArgv,
  type ProcStat,
  procStat,
  readProc,
  readText,
  type RunResult,
  seconds,
  signal,
  sleep,
} from "../service/process.ts";

/** Runs a command to completion with a hard time limit (default 60 s); a missing binary or timeout throws. */
export function run(
  cmd: string,
  args: string[],
  opts: Omit<service.RunOptions, "error"> = {},
): Promise<service.RunResult> {
  return service.run(cmd, args, { ...opts, error: CephError });
}

/** Like {@linkcode run} but throws, with the last line of stderr, on a non-zero exit. */
export function exec(cmd: string, args: string[], what = cmd): Promise<string> {
  return service.exec(cmd, args, what, CephError);
}
