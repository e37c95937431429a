/**
 * The one error of this folder: a trace, strace log or fio iolog that cannot
 * be used, said in one line naming the file, the line and what is wrong.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";

/**
 * A trace (or a log to import) is unusable: names the file, the line (0 for
 * the file as a whole) and the problem. A {@linkcode ConfigError}, so the
 * command line exits with status 2.
 *
 * @example
 * ```ts
 * import { TraceError } from "./errors.ts";
 * const e = new TraceError("run.trace.gz", 7, "unknown record kind \"bogus\"");
 * console.assert(e.message === 'run.trace.gz: line 7: unknown record kind "bogus"');
 * ```
 */
export class TraceError extends ConfigError {
  override name = "TraceError";
  /** The file at fault. */
  readonly file: string;
  /** Its line, from 1; 0 when the problem is the file as a whole. */
  readonly line: number;

  constructor(file: string, line: number, problem: string, options?: ErrorOptions) {
    super("trace", problem, undefined, options);
    this.file = file;
    this.line = line;
    this.message = line > 0 ? `${file}: line ${line}: ${problem}` : `${file}: ${problem}`;
  }
}
