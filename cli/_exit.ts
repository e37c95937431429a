/**
 * How the command line ends: its exit statuses and the one line that says
 * why it failed.
 *
 * Exit status: 0 success, 1 the run failed or was interrupted (partial
 * results written), 2 a usage error. Failures print one line, never a stack.
 *
 * @module
 */

import { CommanderError } from "@commander-js/extra-typings";
import { ConfigError, errorLine } from "../core/errors.ts";
import { redactSecrets } from "../core/secrets.ts";

/** Exit status for usage errors. */
export const EXIT_USAGE = 2;
/** Exit status for failed or interrupted runs. */
export const EXIT_FAILED = 1;

/** Prints `tierbench: message` (secrets redacted) on stderr and exits with `code`. */
export function fail(message: string, code: number): never {
  console.error(`tierbench: ${redactSecrets(message)}`);
  Deno.exit(code);
}

/**
 * Ends the process for an error out of parsing or an action: usage errors
 * (commander's and {@linkcode ConfigError}) exit 2, anything else 1, each
 * in one line; `--help` and `--version` return.
 */
export function exitOnError(e: unknown): void {
  if (e instanceof CommanderError) {
    if (e.exitCode === 0) return; // --help, --version
    // one line: commander puts its "(Did you mean --tiers?)" on a second
    fail(e.message.replace(/^error: /, "").replace(/\s*\n\s*/g, " "), EXIT_USAGE);
  }
  if (e instanceof ConfigError) fail(e.message, EXIT_USAGE);
  fail(errorLine(e), EXIT_FAILED);
}
