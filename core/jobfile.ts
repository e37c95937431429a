/**
 * fio job files (`tierbench run JOB.fio`), read as fio 3.33 reads them
 * (init.c, parse.c): the first step of parse → resolve → run.
 *
 * - `[global]` (any section whose name starts with `global`) sets defaults
 *   for the jobs after it; every other `[section]` is a job. Options given
 *   beside the file on the command line are defaults too, under the file's.
 * - `key=value` or a bare `key`; `;` and `#` start a comment anywhere on a
 *   line (a value cannot hold them); blank space around the key goes, but a
 *   blank after `=` stays part of the value, as in fio.
 * - `include FILE` inside a section adds FILE's lines to it (relative to the
 *   current directory, else to the including file's).
 * - `${VAR}` is the environment's VAR (empty when unset); `$pagesize`,
 *   `$mb_memory` and `$ncpus` are this machine's, with their simple math.
 *
 * What each option means is core/jobfile_resolve.ts.
 *
 * @module
 */

import { dirname, isAbsolute, join } from "node:path";
import { ConfigError } from "./errors.ts";
import { type FioKeywords, replaceKeywords, substituteEnv } from "./fio_values.ts";

/**
 * A job file could not be used: says the file, line and key (none for a
 * line that is not one: its text is not echoed). Exit status 2 like any
 * ConfigError.
 */
export class JobFileError extends ConfigError {
  override name = "JobFileError";
  constructor(where: string, key: string, problem: string, options?: ErrorOptions) {
    super(key, problem, undefined, options);
    this.message = key === "" ? `${where}: ${problem}` : `${where}: ${key}: ${problem}`;
  }
}

/** One `key=value` (or bare key) as fio will parse it, with where it was written. */
export interface JobFileEntry {
  /** The key as written (an option's name or alias). */
  readonly key: string;
  /** The value after `${VAR}` and keyword substitution; `undefined` for a bare key. */
  readonly value: string | undefined;
  /** The line as written, before substitution, for messages. */
  readonly text: string;
  /** `file:line`, or `command line` for an option given beside the file. */
  readonly where: string;
}

/** One section of the file: a job, or `[global]` defaults. */
export interface JobFileSection {
  readonly name: string;
  readonly global: boolean;
  /** `file:line` of the section's header. */
  readonly where: string;
  readonly entries: readonly JobFileEntry[];
}

/** A parsed job file: its sections in order, the command line's defaults first. */
export interface ParsedJobFile {
  readonly sections: readonly JobFileSection[];
}

/** What a job file is read with besides its text. */
export interface JobFileContext {
  /** The environment, for `${VAR}` (default: Deno.env). */
  readonly env?: (name: string) => string | undefined;
  /** `$pagesize`, `$mb_memory`, `$ncpus`. */
  readonly keywords: FioKeywords;
  /** The directory relative names are read from (default: this process's). */
  readonly cwd?: string;
  /** Reads an included file (default: Deno.readTextFileSync, relative to `cwd`). */
  readonly readFile?: (path: string) => string;
  /** Whether a path exists from the current directory (default: Deno.statSync, relative to `cwd`). */
  readonly exists?: (path: string) => boolean;
  /** fio's `--section`: only these job sections (and every global one) are read. */
  readonly sections?: readonly string[];
  /** Options given beside the file (`--key=value`), defaults for every job. */
  readonly commandLine?: readonly { readonly key: string; readonly value: string | undefined }[];
}

/** `path` as read from `ctx.cwd`. */
function fromCwd(ctx: JobFileContext, path: string): string {
  return ctx.cwd === undefined || isAbsolute(path) ? path : join(ctx.cwd, path);
}

/** Reads a file's text as `ctx` says. */
function readText(ctx: JobFileContext, path: string): string {
  return ctx.readFile ? ctx.readFile(path) : Deno.readTextFileSync(fromCwd(ctx, path));
}

/** A line's own text: blanks around it and a `;` or `#` comment removed (strip_blank_end). */
function stripLine(line: string): string {
  let s = line.replace(/^\s+/, "");
  const semi = s.indexOf(";");
  if (semi >= 0) s = s.slice(0, semi);
  const hash = s.indexOf("#");
  if (hash >= 0) s = s.slice(0, hash);
  // trailing blanks and control characters (a \r of a DOS line end)
  let end = s.length;
  while (end > 0 && (s.charCodeAt(end - 1) <= 32 || s.charCodeAt(end - 1) === 127)) end--;
  return s.slice(0, end);
}

/** What an option's name can be: a line whose key is not one is not quoted back. */
const OPTION_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A line that is neither an option nor a section (not quoted: a file given by mistake may hold secrets). */
function notAnOption(where: string): JobFileError {
  return new JobFileError(where, "", "is neither key=value nor a [section] line");
}

/** `key=value` split as fio's get_option does: blanks after the key go, the value is as written. */
function entryOf(line: string, text: string, where: string, ctx: JobFileContext): JobFileEntry {
  const env = ctx.env ?? ((n: string) => Deno.env.get(n));
  const subst = replaceKeywords(substituteEnv(line, env), ctx.keywords);
  const rawKey = (line.includes("=") ? line.slice(0, line.indexOf("=")) : line).trim();
  if (subst === undefined) {
    throw new JobFileError(where, rawKey, `"${text.trim()}": its arithmetic cannot be worked out`);
  }
  const eq = subst.indexOf("=");
  const key = (eq < 0 ? subst : subst.slice(0, eq)).replace(/\s+$/, "");
  if (!OPTION_NAME.test(key)) throw notAnOption(where);
  return { key, value: eq < 0 ? undefined : subst.slice(eq + 1), text: text.trim(), where };
}

/** The lines of an included file, read as options of the current section. */
function included(
  name: string,
  from: string,
  ctx: JobFileContext,
  where: string,
  depth: number,
): JobFileEntry[] {
  if (depth > 16) throw new JobFileError(where, "include", `${name}: includes nest too deep`);
  const exists = ctx.exists ?? ((p: string) => {
    try {
      Deno.statSync(fromCwd(ctx, p));
      return true;
    } catch {
      return false;
    }
  });
  const path = !exists(name) && from.includes("/") ? join(dirname(from), name) : name;
  let text: string;
  try {
    text = readText(ctx, path);
  } catch (e) {
    throw new JobFileError(where, "include", `${path} cannot be read: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const out: JobFileEntry[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const at = `${path}:${i + 1}`;
    const line = stripLine(raw);
    if (line === "") continue;
    if (line.startsWith("[")) {
      throw new JobFileError(at, line, "an included file cannot start a new section");
    }
    if (line.startsWith("include")) {
      out.push(...included(line.slice(8), path, ctx, at, depth + 1));
      continue;
    }
    out.push(entryOf(line, raw, at, ctx));
  }
  return out;
}

/**
 * Parses a job file's text as fio does.
 *
 * @throws {JobFileError} for an option outside any section, a section in an
 * included file, an include that cannot be read, or a file with no job.
 *
 * @example
 * ```ts
 * import { parseJobFileText } from "./jobfile.ts";
 * const keywords = { pagesize: 4096, mbMemory: 1024, ncpus: 4 };
 * const f = parseJobFileText("[global]\nbs=4k ; a comment\n[a]\nnumjobs=$ncpus\n", "x.fio", {
 *   keywords,
 * });
 * console.assert(f.sections[0]!.entries[0]!.value === "4k");
 * console.assert(f.sections[1]!.entries[0]!.value === "4");
 * ```
 */
export function parseJobFileText(
  text: string,
  file: string,
  ctx: JobFileContext,
): ParsedJobFile {
  const sections: { name: string; global: boolean; where: string; entries: JobFileEntry[] }[] = [];
  if (ctx.commandLine && ctx.commandLine.length > 0) {
    sections.push({
      name: "global",
      global: true,
      where: "command line",
      entries: ctx.commandLine.map((o) => {
        const line = o.value === undefined ? o.key : `${o.key}=${o.value}`;
        return entryOf(line, `--${line}`, "command line", ctx);
      }),
    });
  }
  let current: JobFileEntry[] | undefined;
  let skipping = false;
  for (const [i, raw] of text.split("\n").entries()) {
    const where = `${file}:${i + 1}`;
    const line = stripLine(raw);
    if (line === "") continue;
    if (line.startsWith("[") && line.length > 1) {
      // sscanf("[%255[^\n]]"): the rest of the line, its last character dropped
      const name = line.slice(1, 256).slice(0, -1);
      const global = name.startsWith("global");
      skipping = !global && ctx.sections !== undefined && ctx.sections.length > 0 &&
        !ctx.sections.includes(name);
      if (skipping) {
        current = undefined;
        continue;
      }
      const s = { name, global, where, entries: [] as JobFileEntry[] };
      sections.push(s);
      current = s.entries;
      continue;
    }
    if (current === undefined) {
      if (skipping) continue;
      const key = line.split("=")[0]!.trim();
      if (!OPTION_NAME.test(key)) throw notAnOption(where);
      throw new JobFileError(where, key, "comes before any [section] (fio: option outside of [])");
    }
    if (line.startsWith("include")) {
      current.push(...included(line.slice(8), file, ctx, where, 1));
      continue;
    }
    current.push(entryOf(line, raw, where, ctx));
  }
  if (!sections.some((s) => !s.global)) {
    const why = ctx.sections?.length
      ? `no section named ${ctx.sections.join(", ")} (--section)`
      : "the file has no job section (only [global])";
    throw new JobFileError(file, "jobs", why);
  }
  return { sections };
}

/**
 * Reads and parses a job file (`-` is stdin, as fio reads it).
 *
 * @throws {JobFileError} as {@linkcode parseJobFileText}; a file that cannot be read as well.
 */
export function readJobFileText(path: string, ctx: JobFileContext): ParsedJobFile {
  let text: string;
  try {
    text = path === "-" ? new TextDecoder().decode(readAllStdin()) : readText(ctx, path);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).message;
    throw new JobFileError(path, "job file", `cannot be read (${why}; fio: unable to open it)`, {
      cause: e,
    });
  }
  return parseJobFileText(text, path, ctx);
}

function readAllStdin(): Uint8Array {
  const chunks: Uint8Array[] = [];
  const buf = new Uint8Array(65536);
  for (;;) {
    const n = Deno.stdin.readSync(buf);
    if (n === null || n === 0) break;
    chunks.push(buf.slice(0, n));
  }
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
