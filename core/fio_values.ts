/**
 * fio's option values, read as fio 3.33 reads them (parse.c): sizes with
 * `kb_base`, times, bools, integer ranges, `,`-separated per-direction
 * values (read,write,trim), the words of a string option, and what fio does
 * to a line before it parses it: `${VAR}` from the environment, the reserved
 * keywords `$pagesize`, `$mb_memory` and `$ncpus` with their simple math, and
 * arithmetic in parentheses.
 *
 * fio's reading is kept where it surprises: `bs = 4k` (a space before the
 * number) is 4 bytes, `1.5k` is 1 byte, `4kib` is 4000 with the default
 * `kb_base=1024`, `10sec` is 10 microseconds. Values fio would store as a
 * negative number wrapped to 2^64 are refused instead. What an option means
 * is core/fio_options.ts; this module only reads values.
 *
 * @module
 */

import type { FioOptionFacts } from "./fio_option_table.ts";

/** The system facts fio's reserved keywords name. */
export interface FioKeywords {
  /** `$pagesize`: bytes. */
  readonly pagesize: number;
  /** `$mb_memory`: MiB of memory. */
  readonly mbMemory: number;
  /** `$ncpus`: CPUs configured. */
  readonly ncpus: number;
}

/** This machine's keywords, as fio reads them. */
export function hostKeywords(): FioKeywords {
  return {
    pagesize: 4096,
    mbMemory: Math.floor(Deno.systemMemoryInfo().total / (1024 * 1024)),
    ncpus: navigator.hardwareConcurrency,
  };
}

/** One option's value as read: what fio stores, slot by slot. */
export type FioValue =
  /**
   * A number per slot (read, write, trim; or low, high), undefined where fio
   * stores none; `parts`: each part's value as fio read it (a percentage
   * negative), in order.
   */
  | {
    readonly kind: "numbers";
    readonly slots: readonly (number | undefined)[];
    readonly parts?: readonly number[];
  }
  /** A bool or flag (after `neg`). */
  | { readonly kind: "flag"; readonly value: number }
  /** One of the option's words, and the whole text (for suffixes such as `randread:8`). */
  | { readonly kind: "word"; readonly word: string | undefined; readonly text: string }
  /** Several words (`sync_file_range`). */
  | { readonly kind: "words"; readonly words: readonly string[] }
  /** Text stored as is (names, paths, lists the option reads itself). */
  | { readonly kind: "text"; readonly text: string }
  /** A range per slot (`bsrange`: read, write, trim). */
  | { readonly kind: "ranges"; readonly slots: readonly (readonly [number, number] | undefined)[] }
  /** A list of floats (`percentile_list`). */
  | { readonly kind: "floats"; readonly values: readonly number[] }
  /** Accepted and ignored (fio's soft-deprecated options). */
  | { readonly kind: "none" };

/** A value fio would refuse, and why (fio's words where it has some). */
export class FioValueError extends Error {
  override name = "FioValueError";
  /** Set where fio takes the value after all: what it makes of it. */
  readonly fioTakes: string | undefined;

  constructor(message: string, fioTakes?: string) {
    super(message);
    this.fioTakes = fioTakes;
  }
}

/** `${NAME}` replaced by the environment's value, or nothing when unset (fio_option_dup_subs). */
export function substituteEnv(line: string, env: (name: string) => string | undefined): string {
  let out = "";
  let i = 0;
  while (i < line.length) {
    if (line[i] === "$" && line[i + 1] === "{") {
      const close = line.indexOf("}", i);
      if (close > i + 1) {
        out += env(line.slice(i + 2, close)) ?? "";
        i = close + 1;
        continue;
      }
    }
    out += line[i];
    i++;
  }
  return out;
}

/**
 * `$pagesize`, `$mb_memory` and `$ncpus` replaced anywhere in `key=value`;
 * where one was, a value with `+ - * /` is worked out as `bc` does (whole
 * numbers, division truncated), as fio does. Undefined where `bc` would fail.
 *
 * @example
 * ```ts
 * import { replaceKeywords } from "./fio_values.ts";
 * const k = { pagesize: 4096, mbMemory: 1024, ncpus: 8 };
 * console.assert(replaceKeywords("size=2*$mb_memory", k) === "size=2048");
 * console.assert(replaceKeywords("numjobs=$ncpus", k) === "numjobs=8");
 * ```
 */
export function replaceKeywords(line: string, k: FioKeywords): string | undefined {
  const words: [string, number][] = [
    ["$pagesize", k.pagesize],
    ["$mb_memory", k.mbMemory],
    ["$ncpus", k.ncpus],
  ];
  let replaced = false;
  for (const [word, value] of words) {
    if (line.includes(word)) {
      line = line.split(word).join(String(value));
      replaced = true;
    }
  }
  if (!replaced || !/[-+*/]/.test(line) || line.includes("'")) return line;
  const eq = line.indexOf("=");
  if (eq < 0) return line;
  if (line.length >= 128 || line.length - eq - 1 > 100) return line;
  const v = bcEval(line.slice(eq + 1));
  return v === undefined ? undefined : `${line.slice(0, eq + 1)}${v}`;
}

/** Integer arithmetic as `bc` with scale 0: + - * / % ^, parentheses, unary minus. */
function bcEval(text: string): bigint | undefined {
  const tokens = text.match(/\d+|[-+*/%^()]|\S/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const primary = (): bigint => {
    const t = tokens[i++];
    if (t === "(") {
      const v = sum();
      if (tokens[i++] !== ")") throw new SyntaxError("missing )");
      return v;
    }
    if (t === "-") return -primary();
    if (t !== undefined && /^\d+$/.test(t)) return BigInt(t);
    throw new SyntaxError(`unexpected ${t}`);
  };
  const power = (): bigint => {
    const base = primary();
    if (peek() !== "^") return base;
    i++;
    const e = power();
    if (e < 0n) return 0n;
    return base ** e;
  };
  const product = (): bigint => {
    let v = power();
    for (;;) {
      const op = peek();
      if (op !== "*" && op !== "/" && op !== "%") return v;
      i++;
      const r = power();
      if (op !== "*" && r === 0n) throw new RangeError("divide by zero");
      v = op === "*" ? v * r : op === "/" ? v / r : v % r;
    }
  };
  const sum = (): bigint => {
    let v = product();
    for (;;) {
      const op = peek();
      if (op !== "+" && op !== "-") return v;
      i++;
      const r = product();
      v = op === "+" ? v + r : v - r;
    }
  };
  try {
    const v = sum();
    return i === tokens.length ? v : undefined;
  } catch {
    return undefined;
  }
}

const SEPARATORS = ":-,/";

/** The multiplier of a size suffix (`k`, `mib`, `%`…) at `p`, with kb_base (__get_mult_bytes). */
function sizeMultiplier(p: string, kbBase: number): { mult: number; percent: boolean } {
  let c = "";
  for (const ch of p.toLowerCase()) {
    if (SEPARATORS.includes(ch)) break;
    c += ch;
  }
  const other = kbBase === 1000 ? 1024 : 1000;
  const table: [string, number, number][] = [
    ["pib", 5, other],
    ["tib", 4, other],
    ["gib", 3, other],
    ["mib", 2, other],
    ["kib", 1, other],
    ["p", 5, kbBase],
    ["t", 4, kbBase],
    ["g", 3, kbBase],
    ["m", 2, kbBase],
    ["k", 1, kbBase],
  ];
  for (const [prefix, pow, base] of table) {
    if (c.startsWith(prefix)) return { mult: base ** pow, percent: false };
  }
  return { mult: 1, percent: c.startsWith("%") };
}

/** The multiplier of a time suffix, in microseconds (get_mult_time). */
function timeMultiplier(rest: string, seconds: boolean): number {
  if (!/^[a-z]/i.test(rest)) return seconds ? 1_000_000 : 1;
  const c = rest.toLowerCase();
  if (c.startsWith("us") || c.startsWith("usec")) return 1;
  if (c.startsWith("ms") || c.startsWith("msec")) return 1000;
  if (c === "s") return 1_000_000;
  if (c === "m") return 60_000_000;
  if (c === "h") return 3_600_000_000;
  if (c === "d") return 86_400_000_000;
  return 1;
}

/** The largest value strtoll reads (LLONG_MAX). */
const LLONG_MAX = 2n ** 63n - 1n;

/** C's strtoll on the start of `s` (leading blanks, a sign, digits; hex where fio asks). */
function strtoll(s: string, hex: boolean): { value: number; end: number } | undefined {
  const m = hex ? /^[\s]*([+-]?)(?:0[xX])?([0-9a-fA-F]+)/.exec(s) : /^[\s]*([+-]?)([0-9]+)/.exec(s);
  if (!m) return undefined;
  // strtoll fails with ERANGE past a signed 64-bit integer, and fio fails the value with it
  const big = BigInt((hex ? "0x" : "") + m[2]!) * (m[1] === "-" ? -1n : 1n);
  if (big > LLONG_MAX || big < -LLONG_MAX - 1n) return undefined;
  const v = parseInt(m[2]!, hex ? 16 : 10);
  return { value: m[1] === "-" ? -v : v, end: m[0].length };
}

/** A size or time value as str_to_decimal reads it; undefined where fio fails. */
export function readDecimal(
  str: string,
  o: { readonly time: boolean; readonly seconds: boolean; readonly kbBase: number },
): { value: number; percent: boolean } | undefined {
  if (str.length === 0) return undefined;
  if (str.startsWith("(")) {
    const v = evalArithmetic(str, o);
    if (v === undefined) return undefined;
    // str_to_decimal: a count of seconds keeps whole seconds (ival / 10^6 × 10^6)
    return { value: o.time && o.seconds ? Math.trunc(v / 1e6) * 1e6 : v, percent: false };
  }
  const n = strtoll(str, str.includes("0x") || str.includes("0X"));
  if (n === undefined) return undefined;
  if (!o.time) {
    // get_mult_bytes: past the digits (and a sign before them), a letter or % names the unit
    let p = 0;
    let digit = false;
    while (p < str.length) {
      const c = str[p]!;
      const isDigit = c >= "0" && c <= "9";
      if (!isDigit && ((c !== "+" && c !== "-") || digit)) break;
      digit ||= isDigit;
      p++;
    }
    const at = str.length < 2 ? str : str.slice(p);
    const unit = str.length < 2 || /^[a-z%]/i.test(at)
      ? sizeMultiplier(at, o.kbBase)
      : { mult: 1, percent: false };
    return unit.percent
      ? { value: n.value, percent: true }
      : { value: n.value * unit.mult, percent: false };
  }
  let p = 0;
  while (p < str.length && /[0-9+-]/.test(str[p]!)) p++;
  return { value: n.value * timeMultiplier(str.slice(p), o.seconds), percent: false };
}

/** The multipliers of the units fio's arithmetic takes (`m` aside: minutes or MiB). */
const ARITHMETIC_UNITS: Record<string, number> = {
  k: 1024,
  kb: 1024,
  mb: 1024 ** 2,
  ms: 1000,
  us: 1,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1024 ** 4,
  p: 1024 ** 5,
  pb: 1024 ** 5,
  kib: 1000,
  mib: 1e6,
  gib: 1e9,
  pib: 1e12,
  s: 1e6,
  d: 86_400e6,
  h: 3_600e6,
};

/** A unit's multiplier in fio's arithmetic; `m` is minutes for a time, else MiB. */
function arithmeticUnit(token: string, time: boolean): number | undefined {
  const l = token.toLowerCase();
  if (l === "m") return time ? 60e6 : 1024 ** 2;
  return ARITHMETIC_UNITS[l];
}

/**
 * Reads fio's arithmetic tokens by recursive descent: a sum of products of
 * powers (`^` binds right) of numbers, each with an optional unit. Throws on
 * a token out of place or a division by zero.
 */
class ArithmeticReader {
  /** The next token's index. */
  i = 0;
  /** Whether some number carried a unit. */
  units = false;

  constructor(readonly tokens: readonly string[], readonly time: boolean) {}

  /** A number with its unit, a parenthesised sum, or a negated primary. */
  primary(): number {
    const t = this.tokens[this.i++];
    let v: number;
    if (t === "(") {
      v = this.sum();
      if (this.tokens[this.i++] !== ")") throw new SyntaxError("missing )");
    } else if (t === "-") return -this.primary();
    else if (t !== undefined && /^\d*\.?\d/.test(t)) v = Number(t);
    else throw new SyntaxError(`unexpected ${t}`);
    const next = this.tokens[this.i];
    const s = next === undefined ? undefined : arithmeticUnit(next, this.time);
    if (s !== undefined) {
      this.i++;
      this.units = true;
      v *= s;
    }
    return v;
  }

  power(): number {
    const b = this.primary();
    if (this.tokens[this.i] !== "^") return b;
    this.i++;
    return b ** this.power();
  }

  product(): number {
    let v = this.power();
    for (;;) {
      const op = this.tokens[this.i];
      if (op !== "*" && op !== "/" && op !== "%") return v;
      this.i++;
      const r = this.power();
      if (op !== "*" && r === 0) throw new RangeError("divide by zero");
      v = op === "*" ? v * r : op === "/" ? v / r : v % r;
    }
  }

  sum(): number {
    let v = this.product();
    for (;;) {
      const op = this.tokens[this.i];
      if (op !== "+" && op !== "-") return v;
      this.i++;
      const r = this.product();
      v = op === "+" ? v + r : v - r;
    }
  }
}

/**
 * fio's arithmetic in parentheses (HOWTO "Job file parameters"): + - * / % ^
 * on numbers with size or time suffixes; a time without a unit is in
 * microseconds, or seconds for options counted in seconds.
 */
function evalArithmetic(
  str: string,
  o: { readonly time: boolean; readonly seconds: boolean; readonly kbBase: number },
): number | undefined {
  const cut = str.search(/[#:,]/);
  const text = cut < 0 ? str : str.slice(0, cut);
  const tokens = text.match(/\d*\.?\d+(?:[eE][-+]?\d+)?|[a-zA-Z]+|[-+*/%^()]|\S/g) ?? [];
  const reader = new ArithmeticReader(tokens, o.time);
  try {
    let v = reader.sum();
    if (reader.i !== tokens.length) return undefined;
    // a time without a unit is in the option's own unit: seconds (10^6 µs) or µs
    if (!reader.units && o.seconds) v *= 1e6;
    return Math.trunc(v);
  } catch {
    return undefined;
  }
}

/** C's sscanf("%u") / ("%x") as check_int: leading blanks, a sign, digits; trailing text ignored. */
function checkInt(p: string): number | undefined {
  if (p.length === 0) return undefined;
  const hex = p.includes("0x") || p.includes("0X");
  const m = hex ? /^\s*(?:0[xX])?([0-9a-fA-F]+)/.exec(p) : /^\s*([+-]?)(\d+)/.exec(p);
  if (!m) return undefined;
  if (hex) return parseInt(m[1]!, 16);
  const v = Number(m[2]);
  // %u of a negative number wraps as unsigned int, then read back as int
  return m[1] === "-" ? (-v | 0) : v > 0xffffffff ? -1 : v | 0;
}

/** How much of `s` the word match compares: up to a `,` or `:` (opt_len). */
function optLen(s: string): number {
  const comma = s.indexOf(",");
  if (comma >= 0) return comma;
  const colon = s.indexOf(":");
  return colon >= 0 ? colon : s.length;
}

/** The word of `words` that `s` names as fio matches them (longest word first); undefined if none. */
export function matchWord(words: readonly string[], s: string): string | undefined {
  const sorted = [...words].filter((w) => w !== "").sort((a, b) => b.length - a.length);
  for (const w of sorted) {
    const n = Math.max(w.length, optLen(s));
    if (w.slice(0, n) === s.slice(0, n)) return w;
  }
  return undefined;
}

/** Splits a value as handle_option does: the parts and whether each has more after it. */
function splitParts(o: FioOptionFacts, value: string): string[] {
  const splitOn = o.type === "STR_MULTI" || o.type === "RANGE" ? [","] : [",", ":", "-"];
  const parts: string[] = [];
  let ptr = value;
  for (;;) {
    let at = -1;
    for (const sep of splitOn) {
      at = ptr.indexOf(sep);
      if (at >= 0) {
        if (sep === "," && at === ptr.length - 1) {
          ptr = ptr.slice(0, at);
          at = -1;
          continue;
        }
        break;
      }
    }
    if (at < 0) {
      parts.push(ptr);
      return parts;
    }
    // fio hands each part the rest of the string; a number ends at the separator anyway
    parts.push(ptr);
    ptr = ptr.slice(at + 1);
  }
}

const NUMERIC = new Set(["INT", "ULL", "STR_VAL", "STR_VAL_TIME", "STR_VAL_ZONE"]);

/**
 * Reads `value` (undefined: the bare key) as fio reads option `o`'s values.
 *
 * @throws {FioValueError} where fio would refuse the value (its reason).
 *
 * @example
 * ```ts
 * import { readFioValue } from "./fio_values.ts";
 * import { FIO_OPTION_FACTS } from "./fio_option_table.ts";
 * const bs = FIO_OPTION_FACTS.find((o) => o.name === "bs")!;
 * const v = readFioValue(bs, "4k,8k", 1024);
 * console.assert(v.kind === "numbers" && v.slots.join() === "4096,8192,8192");
 * ```
 */
export function readFioValue(
  o: FioOptionFacts,
  value: string | undefined,
  kbBase: number,
): FioValue {
  switch (o.type) {
    case "DEPRECATED":
      throw new FioValueError("is deprecated and fio no longer accepts it");
    case "UNSUPPORTED":
      throw new FioValueError(o.help ?? "is not supported by this build of fio");
    case "SOFT_DEPRECATED":
      return { kind: "none" };
  }
  if (value === undefined && o.type !== "STR_SET" && o.type !== "STR") {
    throw new FioValueError("needs a value");
  }
  if (o.type === "STR" || o.type === "STR_ULL") return word(o, value);
  if (o.type === "STR_STORE") {
    if (!value) throw new FioValueError("needs a value");
    return { kind: "text", text: value };
  }
  if (o.type === "FLOAT_LIST") return floats(o, value!);
  const parts = splitParts(o, value ?? "");
  if (o.type === "STR_MULTI") {
    const words = parts.map((p) => p.split(",")[0]!).map((p) => matchWord(o.words ?? [], p));
    if (words.some((w) => w === undefined)) throw notAWord(o, value!);
    return { kind: "words", words: words as string[] };
  }
  if (o.type === "RANGE") return ranges(parts, kbBase);
  if (o.type === "BOOL" || o.type === "STR_SET") return flag(o, value, parts);
  if (NUMERIC.has(o.type)) return numbers(o, parts, kbBase);
  throw new FioValueError(`has a value type (${o.type}) fio itself does not read`);
}

function notAWord(o: FioOptionFacts, value: string): FioValueError {
  return new FioValueError(`"${value}" is not one of ${(o.words ?? []).join(", ")}`);
}

function word(o: FioOptionFacts, value: string | undefined): FioValue {
  const words = (o.words ?? []).filter((w) => w !== "");
  if (words.length === 0) return { kind: "word", word: undefined, text: value ?? "" };
  if (value === undefined) throw new FioValueError(`needs one of ${words.join(", ")}`);
  const w = matchWord(words, value);
  if (w === undefined) throw notAWord(o, value);
  return { kind: "word", word: w, text: value };
}

function floats(o: FioOptionFacts, value: string): FioValue {
  const values: number[] = [];
  for (const p of value.split(":")) {
    const m = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(p);
    if (!m) throw new FioValueError(`"${p}" is not a floating point value`);
    values.push(Number(m[0]));
  }
  if (o.name === "percentile_list" && values.length > 20) {
    throw new FioValueError("the list exceeds fio's 20 values");
  }
  return { kind: "floats", values };
}

function ranges(parts: readonly string[], kbBase: number): FioValue {
  const slots: ([number, number] | undefined)[] = [undefined, undefined, undefined];
  let ok = false;
  for (const [curr, raw] of parts.entries()) {
    const part = raw.split(",")[0]!;
    const sep = part.includes("-") ? part.indexOf("-") : part.indexOf(":");
    const size = { time: false, seconds: false, kbBase };
    const a = sep < 0 ? undefined : readDecimal(part.slice(0, sep), size);
    const b = sep < 0 ? undefined : readDecimal(part.slice(sep + 1), size);
    if (!a || !b || a.percent || b.percent) {
      if (curr === 0 && parts.length > 1) continue;
      throw new FioValueError(`"${raw}" is not a range (LOW-HIGH or LOW:HIGH)`);
    }
    ok = true;
    const r: [number, number] = a.value <= b.value ? [a.value, b.value] : [b.value, a.value];
    const more = curr < parts.length - 1;
    if (curr === 0) slots[0] = r;
    if (curr === 1) slots[1] = r;
    if (curr === 2) slots[2] = r;
    if (!more) { for (let s = curr + 1; s < 3; s++) slots[s] = r; }
  }
  if (!ok) throw new FioValueError("is not a range");
  return { kind: "ranges", slots };
}

function flag(o: FioOptionFacts, value: string | undefined, parts: readonly string[]): FioValue {
  if (value === undefined) return { kind: "flag", value: o.neg ? 0 : 1 };
  let first: number | undefined;
  let any = false;
  for (const [curr, raw] of parts.entries()) {
    const v = checkInt(raw.split(/[,:-]/)[0]!);
    if (v === undefined) {
      if (curr === 0 && parts.length > 1) continue;
      throw new FioValueError(`"${value}" is not a number (0 or 1)`);
    }
    const max = o.type === "BOOL" ? 1 : o.maxval;
    const min = o.type === "BOOL" ? 0 : o.minval;
    if (max !== undefined && v > max) throw new FioValueError(`${v} is above its ${max} maximum`);
    if (min !== undefined && min !== 0 && v < min) {
      throw new FioValueError(`${v} is below its ${min} minimum`);
    }
    if (curr === 0) first = v;
    any = true;
  }
  if (!any || first === undefined) return { kind: "flag", value: o.neg ? 1 : 0 };
  return { kind: "flag", value: o.neg ? (first ? 0 : 1) : first };
}

function numbers(o: FioOptionFacts, parts: readonly string[], kbBase: number): FioValue {
  const slots: (number | undefined)[] = new Array(Math.max(1, o.offs)).fill(undefined);
  const read: number[] = [];
  let ok = false;
  let failure: string | undefined;
  for (const [curr, raw] of parts.entries()) {
    const tmp = raw.split(",")[0]!;
    if (tmp.endsWith("z")) {
      throw new FioValueError(
        o.type === "STR_VAL_ZONE"
          ? `"${tmp}" counts zones, which exist on zoned block devices only (zonemode=zbd)`
          : `"${tmp}": the 'z' (zones) suffix does not apply to ${o.name}`,
      );
    }
    const time = o.type === "STR_VAL_TIME" || o.time === true;
    const r = readDecimal(tmp, { time, seconds: o.seconds === true, kbBase });
    const more = curr < parts.length - 1;
    if (r === undefined) {
      // fio goes on to the next part when a first one is empty ("bs=,8k")
      if (curr === 0 && more) {
        failure = `"${tmp}" is not a number`;
        continue;
      }
      throw new FioValueError(`"${tmp}" is not a ${time ? "time" : "number"}`);
    }
    if (r.percent) {
      if (
        o.name !== "size" && o.name !== "io_size" && o.name !== "offset" &&
        o.name !== "offset_increment" && o.name !== "zoneskip"
      ) {
        throw new FioValueError(`"${tmp}": a percentage does not apply to ${o.name}`);
      }
    }
    const v = r.percent ? -r.value : r.value;
    const isInt = o.type === "INT";
    const max = o.maxval ?? (isInt ? 0xffffffff : undefined);
    if (!r.percent && v < 0) {
      // fio reads values unsigned: a negative one wraps, then fails a maximum where there is one
      throw new FioValueError(
        `${tmp} is negative`,
        max === undefined ? "as 2^64 - 1, in effect no limit" : undefined,
      );
    }
    if (o.pow2 && (v <= 0 || (v & (v - 1)) !== 0)) {
      throw new FioValueError(`${tmp}: must be a power of 2`);
    }
    if (max !== undefined && v > max) {
      throw new FioValueError(`${tmp} is above its maximum of ${max}`);
    }
    if (o.minval !== undefined && v < o.minval && !r.percent) {
      throw new FioValueError(`${tmp} is below its minimum of ${o.minval}`);
    }
    if (o.words && o.words.length > 0 && !o.words.includes(String(v))) {
      throw new FioValueError(`${v} is not one of ${o.words.join(", ")}`);
    }
    ok = true;
    read.push(v);
    store(o, slots, v, curr, more);
  }
  if (!ok) throw new FioValueError(failure ?? "needs a value");
  return { kind: "numbers", slots, parts: read };
}

/** Where fio's val_store puts part `curr` of a numeric value (INT and ULL fill the later slots). */
function store(
  o: FioOptionFacts,
  slots: (number | undefined)[],
  v: number,
  curr: number,
  more: boolean,
): void {
  if (o.cb && o.offs <= 1) {
    slots[0] = v; // the callback is called with each part: the last one stays
    return;
  }
  if (o.type === "INT" || o.type === "ULL") {
    if (curr === 0) slots[0] = v;
    if (curr === 1 && slots.length > 1) slots[1] = v;
    if (curr === 2 && slots.length > 2) slots[2] = v;
    if (!more) { for (let s = curr + 1; s < slots.length; s++) slots[s] = v; }
    return;
  }
  if (curr === 0) slots[0] = v;
  if (!more && slots.length > 1) slots[1] = v;
}
