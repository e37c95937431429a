/**
 * What CLI tests repeat: running a command and reading the JSON document it
 * wrote, and checking that bad input is refused with one line.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type CliResult, runCli } from "./_helpers.ts";

/** What {@linkcode cliJson} returns: the run and the document it wrote. */
export interface CliJson {
  r: CliResult;
  // deno-lint-ignore no-explicit-any
  doc: any;
}

/**
 * Runs the CLI with `--output out` after `args`, checks that it exited 0 and
 * (for a result document) that its status is ok, and returns the document.
 */
export async function cliJson(args: readonly string[], out: string): Promise<CliJson> {
  const r = await runCli([...args, "--output", out]);
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(await Deno.readTextFile(out));
  if (typeof doc === "object" && doc !== null && "status" in doc) {
    assert.equal(doc.status, "ok", doc.error);
  }
  return { r, doc };
}

/**
 * Checks that a run exited `code` with one line on stderr, `tierbench: …`,
 * that matches `pattern`, and no stack trace; `what` names the case in a
 * failure's message.
 */
export function assertOneLine(r: CliResult, code: number, pattern: RegExp, what?: string): void {
  const at = what === undefined ? "" : `${what}: `;
  assert.equal(r.code, code, `${at}exit ${r.code}, stderr: ${r.stderr}`);
  const lines = r.stderr.trim().split("\n");
  assert.equal(lines.length, 1, `${at}one line expected, got:\n${r.stderr}`);
  assert.match(lines[0]!, /^tierbench: /, `${at}${lines[0]}`);
  assert.match(lines[0]!, pattern, `${at}${lines[0]} does not match ${pattern}`);
  assert.doesNotMatch(r.stderr, /^\s+at /m);
}

/**
 * Runs each case's command and checks that it exits 2 (a usage error) with
 * one line on stderr that matches the case's pattern.
 */
export async function assertUsageErrors(
  cases: readonly (readonly [readonly string[], RegExp])[],
): Promise<void> {
  for (const [args, want] of cases) {
    assertOneLine(await runCli([...args]), 2, want, args.join(" "));
  }
}
