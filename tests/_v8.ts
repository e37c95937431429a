/**
 * Test helpers: a child Deno with the V8 flags the command line runs jobs
 * with (deno.json's `tierbench` task).
 *
 * @module
 */

import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/** The V8 flags the command line runs jobs with, comma-separated, as deno.json's `tierbench` task gives them. */
export async function commandLineV8Flags(): Promise<string> {
  const tasks = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))).tasks;
  const flags = /--v8-flags=(\S+)/.exec(tasks.tierbench)?.[1];
  assert.ok(flags, "deno.json's tierbench task sets V8 flags");
  return flags;
}

/**
 * Runs `code` (a module; {@linkcode repoUrl} gives a repository file's URL as a
 * string literal to import) in a child `deno eval` with the command line's
 * V8 flags and `extra` ones: its stdout, after asserting it exited 0.
 */
export async function evalWithJobFlags(code: string, extra: string[] = []): Promise<string> {
  const flags = [await commandLineV8Flags(), ...extra].join(",");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "-q", `--v8-flags=${flags}`, code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

/** A repository file's URL as a string literal, for `import` in {@linkcode evalWithJobFlags}'s code. */
export function repoUrl(path: string): string {
  return JSON.stringify(new URL(path, ROOT).href);
}
