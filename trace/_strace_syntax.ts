/**
 * strace's output syntax, as `strace -f -tt -T` (and `-ttt`, `-y`) writes
 * it: the thread and time in front of each line, calls cut in two around
 * other threads' lines (`<unfinished ...>`, `<... read resumed>`), the
 * arguments (quoted C strings, arrays, structs) and the result.
 *
 * @module
 */

/** One line of an strace log, sorted by what it says. */
export type StraceLine =
  | { kind: "call"; tid: number; us: number; text: string }
  | { kind: "unfinished"; tid: number; us: number; text: string }
  | { kind: "resumed"; tid: number; us: number; name: string; text: string }
  | { kind: "exit"; tid: number; us: number }
  | { kind: "other"; tid: number; us: number };

const PREFIX =
  /^(?:\[pid\s+(\d+)\]\s+|(\d+)\s+)?(?:(\d+):(\d\d):(\d\d)(?:\.(\d+))?|(\d+)\.(\d+))\s+/;
const UNFINISHED = " <unfinished ...>";

/** µs of a fraction of a second written with `digits` digits. */
function fractionUs(digits: string | undefined): number {
  if (!digits) return 0;
  return Math.round(Number(digits.padEnd(6, "0").slice(0, 6)));
}

/**
 * Sorts one line of an strace log; undefined for a line that has no time in
 * front (not strace -tt output, or a continuation).
 *
 * @example
 * ```ts
 * import { classifyLine } from "./_strace_syntax.ts";
 * const l = classifyLine('28784 18:47:07.523527 close(18) = 0 <0.000012>');
 * console.assert(l?.kind === "call" && l.tid === 28784 && l.text === "close(18) = 0 <0.000012>");
 * ```
 */
export function classifyLine(line: string): StraceLine | undefined {
  const m = PREFIX.exec(line);
  if (!m) return undefined;
  const tid = Number(m[1] ?? m[2] ?? 0);
  const us = m[3] !== undefined
    ? ((Number(m[3]) * 60 + Number(m[4])) * 60 + Number(m[5])) * 1e6 + fractionUs(m[6])
    : Number(m[7]) * 1e6 + fractionUs(m[8]);
  const text = line.slice(m[0].length);
  if (text.startsWith("<... ")) {
    const end = text.indexOf(" resumed>");
    if (end < 0) return { kind: "other", tid, us };
    return { kind: "resumed", tid, us, name: text.slice(5, end), text: text.slice(end + 9) };
  }
  if (text.startsWith("+++ ")) return { kind: "exit", tid, us };
  if (text.startsWith("--- ")) return { kind: "other", tid, us };
  if (text.endsWith(UNFINISHED)) {
    return { kind: "unfinished", tid, us, text: text.slice(0, -UNFINISHED.length) };
  }
  return { kind: "call", tid, us, text };
}

/** A complete call: its name, top-level argument texts, result and duration. */
export interface StraceCall {
  name: string;
  args: string[];
  /** The return value; NaN when strace printed `?` (not known). */
  ret: number;
  /** The errno name when it failed (`ENOENT`), else "". */
  errno: string;
  /** The path `-y` printed beside a returned descriptor, else undefined. */
  retPath: string | undefined;
  /** µs, or -1 without -T. */
  dur: number;
}

/** Index of the character closing the bracket at `open` (quotes respected), or -1. */
export function closeOf(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 34 /* " */) {
      i = endOfString(s, i);
      if (i < 0) return -1;
    } else if (c === 40 || c === 91 || c === 123) depth++;
    else if (c === 41 || c === 93 || c === 125) {
      if (--depth === 0) return i;
    } else if (c === 60 /* < */ && decorates(s, i)) {
      // a -y decoration after a descriptor: 3</path>, whose path may hold brackets
      const end = s.indexOf(">", i);
      if (end > 0) i = end;
    }
  }
  return -1;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** Whether the `<` at `i` opens a -y decoration (after a descriptor or AT_FDCWD). */
function decorates(s: string, i: number): boolean {
  return i > 0 && (isDigit(s.charCodeAt(i - 1)) || s.startsWith("AT_FDCWD", i - 8));
}

/** Index of the quote ending the string that starts at `i` (a quote), or -1. */
function endOfString(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c === 92 /* \ */) j++;
    else if (c === 34) return j;
  }
  return -1;
}

/**
 * Splits `s` (the inside of a bracket pair) at its top-level `, `.
 *
 * @example
 * ```ts
 * import { splitTop } from "./_strace_syntax.ts";
 * console.assert(splitTop('3, "a, b", [{x=1, y=2}], 8').length === 4);
 * ```
 */
export function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0, start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 34) {
      const e = endOfString(s, i);
      if (e < 0) break;
      i = e;
    } else if (c === 40 || c === 91 || c === 123) depth++;
    else if (c === 41 || c === 93 || c === 125) depth--;
    else if (c === 60 && decorates(s, i)) {
      const end = s.indexOf(">", i);
      if (end > 0) i = end;
    } else if (c === 44 /* , */ && depth === 0) {
      out.push(s.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = s.slice(start).trim();
  if (last !== "" || out.length > 0) out.push(last);
  return out;
}

const RESULT =
  /^\s*=\s*(-?\d+|0x[0-9a-fA-F]+|\?)(?:<([^>]*)>)?(?:\s+(E[A-Z0-9]+)\b)?.*?(?:<(\d+)\.(\d+)>)?\s*$/;

/**
 * Parses a complete call (`name(args) = result <dur>`); undefined when it
 * is not one (a line strace cut, an unknown form).
 *
 * @example
 * ```ts
 * import { parseCall } from "./_strace_syntax.ts";
 * const c = parseCall('openat(AT_FDCWD, "/x", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000009>')!;
 * console.assert(c.name === "openat" && c.ret === -1 && c.errno === "ENOENT" && c.dur === 9);
 * ```
 */
export function parseCall(text: string): StraceCall | undefined {
  const open = text.indexOf("(");
  if (open <= 0) return undefined;
  const close = closeOf(text, open);
  if (close < 0) return undefined;
  const m = RESULT.exec(text.slice(close + 1));
  if (!m) return undefined;
  const ret = m[1] === "?" ? NaN : Number(m[1]);
  return {
    name: text.slice(0, open),
    args: splitTop(text.slice(open + 1, close)),
    ret,
    errno: m[3] ?? "",
    retPath: m[2] === undefined ? undefined : unescape(m[2]),
    dur: m[4] === undefined ? -1 : Number(m[4]) * 1e6 + fractionUs(m[5]),
  };
}

const ESCAPES: Record<string, string> = {
  n: "\n",
  t: "\t",
  r: "\r",
  v: "\v",
  f: "\f",
  a: "\x07",
  b: "\b",
  "\\": "\\",
  '"': '"',
};

/** C escapes (`\n`, `\177`, `\x41`) decoded. */
export function unescape(s: string): string {
  if (!s.includes("\\")) return s;
  return s.replace(/\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/g, (_, e: string) => {
    if (e[0] === "x") return String.fromCharCode(parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
    return ESCAPES[e] ?? e;
  });
}

/**
 * A quoted string argument decoded (`"abc"...` too: strace's mark that it
 * cut the string); undefined when `arg` is not a quoted string.
 */
export function stringArg(arg: string | undefined): string | undefined {
  if (arg === undefined || arg[0] !== '"') return undefined;
  const end = endOfString(arg, 0);
  if (end < 0) return undefined;
  return unescape(arg.slice(1, end));
}

/**
 * A descriptor argument: its number and, with `-y`, the path strace put
 * beside it (`3</etc/passwd>`; `AT_FDCWD</home/x>` has fd -100).
 */
export function fdArg(arg: string | undefined): { fd: number; path: string | undefined } {
  if (arg === undefined) return { fd: NaN, path: undefined };
  const lt = arg.indexOf("<");
  const num = lt < 0 ? arg : arg.slice(0, lt);
  const fd = num === "AT_FDCWD" ? -100 : Number(num);
  const path = lt < 0 ? undefined : unescape(arg.slice(lt + 1, arg.endsWith(">") ? -1 : undefined));
  return { fd, path };
}

/** The `key=value` fields of a struct argument (`{aio_data=0, aio_fildes=18, …}`). */
export function structFields(arg: string): Map<string, string> {
  const out = new Map<string, string>();
  const inner = arg.startsWith("{") ? arg.slice(1, arg.endsWith("}") ? -1 : undefined) : arg;
  for (const part of splitTop(inner)) {
    const eq = part.indexOf("=");
    if (eq > 0) out.set(part.slice(0, eq), part.slice(eq + 1));
  }
  return out;
}

/**
 * The elements of an array argument (`[a, b, …]`) and whether strace cut it
 * short (a trailing `...`).
 */
export function arrayArg(arg: string | undefined): { items: string[]; cut: boolean } {
  if (arg === undefined || arg[0] !== "[") return { items: [], cut: true };
  const items = splitTop(arg.slice(1, arg.endsWith("]") ? -1 : undefined));
  const cut = items.length > 0 && items[items.length - 1] === "...";
  return { items: cut ? items.slice(0, -1) : items, cut };
}
