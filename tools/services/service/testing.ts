/**
 * What the launchers' tests share: running a launcher's script and
 * checking the command line every launcher has.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

/** What a finished script printed and how it exited. */
export interface ScriptResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `deno run -A script args…` to completion. */
export async function runScript(script: URL, ...args: string[]): Promise<ScriptResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", fileURLToPath(script), ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

/** Checks that `--help` exits 0 and lists each of `words` at the start of a line. */
async function assertHelpNames(script: URL, words: readonly string[]): Promise<void> {
  const r = await runScript(script, "--help");
  assert.equal(r.code, 0);
  for (const word of words) {
    assert.match(r.stdout, new RegExp(`^\\s+${word}\\b`, "m"), `no ${word} in:\n${r.stdout}`);
  }
}

/** Checks that no command, or an unknown one, is a usage error (2) of one line named `name`, with the usage. */
async function assertUsageErrors(script: URL, name: string): Promise<void> {
  const none = await runScript(script);
  assert.equal(none.code, 2);
  assert.match(none.stderr, new RegExp(`^${name}: no command given$`, "m"));
  assert.match(none.stderr, /Usage:/);
  const unknown = await runScript(script, "sideways");
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, new RegExp(`^${name}: unknown command 'sideways'`, "m"));
}

/**
 * Registers the tests of the command line every launcher's main.ts has:
 * `--help` lists each of `words` and exits 0; no command, or an unknown
 * one, is a usage error (2) of one line prefixed `name:`.
 */
export function testCommandLine(script: URL, name: string, words: readonly string[]): void {
  Deno.test("main.ts --help names every command and option and exits 0", async () => {
    await assertHelpNames(script, words);
  });
  Deno.test("main.ts without a command, or with an unknown one, is a usage error (2)", async () => {
    await assertUsageErrors(script, name);
  });
}

/** Runs `fn` with a fresh temporary directory, removed afterwards. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir();
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
