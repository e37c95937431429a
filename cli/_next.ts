/**
 * The last line of a command that wrote a result: the file, and the command
 * to run next, spelled as this tierbench was started (`./tierbench` for the
 * single binary, `npx -y deno@X task tierbench` under npx, else `deno task
 * tierbench`), so it can be pasted as it is.
 *
 * @module
 */

import { basename, relative } from "node:path";
import { userCwd } from "./_paths.ts";

/** The environment and paths {@linkcode tierbenchCommand} reads (the process's by default). */
export interface Invocation {
  /** The running executable (`Deno.execPath()`). */
  readonly execPath: string;
  /** npm's `npm_lifecycle_event` and `npm_lifecycle_script`: `npx` and `deno…` under npx. */
  readonly npmEvent?: string | undefined;
  readonly npmScript?: string | undefined;
  readonly denoVersion: string;
  /** Where the user stands (paths are shown relative to it). */
  readonly cwd: string;
}

function current(): Invocation {
  return {
    execPath: Deno.execPath(),
    npmEvent: Deno.env.get("npm_lifecycle_event"),
    npmScript: Deno.env.get("npm_lifecycle_script"),
    denoVersion: Deno.version.deno,
    cwd: userCwd(),
  };
}

/**
 * How to run tierbench the way it runs now.
 *
 * @example
 * ```ts
 * import { tierbenchCommand } from "./_next.ts";
 * const under = { execPath: "/x/deno", denoVersion: "2.9.6", cwd: "/w" };
 * console.assert(tierbenchCommand(under) === "deno task tierbench");
 * console.assert(tierbenchCommand({ ...under, npmEvent: "npx", npmScript: "deno" }) ===
 *   "npx -y deno@2.9.6 task tierbench");
 * console.assert(tierbenchCommand({ ...under, npmEvent: "npx", npmScript: "'deno'" }) ===
 *   "npx -y deno@2.9.6 task tierbench");
 * console.assert(tierbenchCommand({ ...under, execPath: "/w/tierbench" }) === "./tierbench");
 * ```
 */
export function tierbenchCommand(at: Invocation = current()): string {
  const exe = basename(at.execPath);
  if (exe !== "deno" && exe !== "deno.exe") {
    const rel = relative(at.cwd, at.execPath);
    return rel.startsWith("..") ? at.execPath : `./${rel}`;
  }
  // npm 11 quotes the script (`'deno'`), earlier ones do not
  if (at.npmEvent === "npx" && /^['"]?deno\b/.test(at.npmScript ?? "")) {
    return `npx -y deno@${at.denoVersion} task tierbench`;
  }
  return "deno task tierbench";
}

/** `arg` quoted for a POSIX shell where it needs it. */
function shellWord(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * `path` relative to `cwd` (where the user stands) when it lies under it,
 * else as it is.
 *
 * @example
 * ```ts
 * import { shownPath } from "./_next.ts";
 * console.assert(shownPath("/w/results/a.json", "/w") === "results/a.json");
 * console.assert(shownPath("/tmp/a.json", "/w") === "/tmp/a.json");
 * ```
 */
export function shownPath(path: string, cwd: string = userCwd()): string {
  if (!path.startsWith("/")) return path;
  const rel = relative(cwd, path);
  return rel !== "" && !rel.startsWith("..") ? rel : path;
}

/**
 * The line `label: FILE; next: COMMAND ARGS…` (`next` the arguments of the
 * command to run next), absolute paths shown relative to where the user
 * stands when they lie under it.
 *
 * @example
 * ```ts
 * import { resultLine } from "./_next.ts";
 * const at = { execPath: "/x/deno", denoVersion: "2.9.6", cwd: "/w" };
 * console.assert(resultLine("results", "/w/results/a.json", ["report", "/w/results/a.json"], at) ===
 *   "results: results/a.json; next: deno task tierbench report results/a.json");
 * ```
 */
export function resultLine(
  label: string,
  file: string,
  next: readonly string[],
  at: Invocation = current(),
): string {
  const args = next.map((a) => shellWord(shownPath(a, at.cwd))).join(" ");
  return `${label}: ${shellWord(shownPath(file, at.cwd))}; next: ${tierbenchCommand(at)} ${args}`;
}
