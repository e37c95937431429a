/**
 * Reading JSON files users name (results, plans, profiles) with errors in
 * one line that never quote the file: a file of secrets or binary junk given
 * by mistake is described, not echoed.
 *
 * @module
 */

import { InputError } from "./errors.ts";

/**
 * Why `text` is not JSON, in a few words and without quoting it: where the
 * parser stopped (line and column) when it says, else that it ends early or
 * does not begin like JSON.
 *
 * @example
 * ```ts
 * import { jsonProblem } from "./json_file.ts";
 * const text = '{"a": 1}\nsecret';
 * let why = "";
 * try { JSON.parse(text); } catch (e) { why = jsonProblem(e, text); }
 * console.assert(why === "not JSON (a syntax error at line 2, column 1)" && !why.includes("secret"));
 * ```
 */
export function jsonProblem(e: unknown, text: string): string {
  const message = e instanceof Error ? e.message : "";
  const at = /\(line (\d+) column (\d+)\)/.exec(message);
  if (at) return `not JSON (a syntax error at line ${at[1]}, column ${at[2]})`;
  if (/Unexpected end of JSON input/.test(message)) {
    return text.trim() === "" ? "empty, not JSON" : "not JSON (it ends early)";
  }
  const first = text.trimStart()[0];
  if (first !== "{" && first !== "[") return "not JSON (it does not begin with { or [)";
  return "not JSON (a syntax error)";
}

/**
 * The JSON document in the file at `path`, or an {@linkcode InputError}
 * naming `shown` (the path as the user wrote it) and why, in one line.
 *
 * @example
 * ```ts
 * import { readJsonFile } from "./json_file.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/x.json`, "password=hunter2\n");
 * try {
 *   await readJsonFile(`${dir}/x.json`, "x.json");
 * } catch (e) {
 *   console.assert((e as Error).message === "x.json: not JSON (it does not begin with { or [)");
 * }
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function readJsonFile(path: string, shown: string = path): Promise<unknown> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound
      ? "no such file"
      : e instanceof Deno.errors.IsADirectory
      ? "a directory, not a file"
      : `cannot be read (${(e as Error).name})`;
    throw new InputError(shown, why, undefined, { cause: e });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new InputError(shown, jsonProblem(e, text), undefined, { cause: e });
  }
}
