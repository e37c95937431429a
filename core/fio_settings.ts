/**
 * One fio job's options as fio holds them after parsing (its
 * `thread_options`): every entry in force for the job — the command line's
 * and `[global]`'s before it, then its own — looked up by fio's name or
 * alias, its value read as fio reads it (core/fio_values.ts), checked as
 * fio's option callbacks check it, later entries replacing earlier ones.
 * Typed getters give the value in force or fio's default.
 *
 * @module
 */

import { FIO_OPTION_FACTS, type FioOptionFacts } from "./fio_option_table.ts";
import { findFioOption, fioOptionUse } from "./fio_options.ts";
import {
  type FioValue,
  FioValueError,
  matchWord,
  readDecimal,
  readFioValue,
} from "./fio_values.ts";
import { type JobFileEntry, JobFileError } from "./jobfile.ts";

/** One option set for a job: its value, facts, and the entry that set it. */
export interface FioSetting {
  readonly facts: FioOptionFacts;
  readonly value: FioValue;
  readonly entry: JobFileEntry;
  /** Its place among the job's entries (a later one wins over related options). */
  readonly seq: number;
}

/** An entry's option name as a message names it: the key as written. */
function fail(entry: JobFileEntry, problem: string, cause?: unknown): never {
  throw new JobFileError(entry.where, entry.key, problem, cause ? { cause } : undefined);
}

/** The value an entry's key had last among `entries` (kb_base and ioengine are read first). */
function lastValue(entries: readonly JobFileEntry[], names: readonly string[]): string | undefined {
  let v: string | undefined;
  for (const e of entries) if (names.includes(e.key) && e.value !== undefined) v = e.value;
  return v;
}

/** What a bssplit or zoned split holds per direction: values and their percentages. */
export interface SplitEntry {
  readonly value: number;
  readonly perc: number;
}

/**
 * A `bssplit`-style list (`4k/60:64k/40`, `,` between directions) as fio's
 * str_split_parse reads it: per direction (read, write, trim), the entries
 * sorted by percentage, those without one sharing what is left.
 *
 * @throws {Error} with fio's reason where fio refuses the list.
 */
export function parseSplit(
  text: string,
  kbBase: number,
  o: { readonly absolute: boolean; readonly zoned: boolean; readonly max: number },
): (SplitEntry[] | undefined)[] {
  const byDir = text.trim().split(",");
  const one = (s: string | undefined): SplitEntry[] | undefined => {
    if (s === undefined) return undefined;
    const out: { value: number; perc: number }[] = [];
    for (const part of s.split(":")) {
      if (part === "") break;
      const slash = part.indexOf("/");
      const num = slash < 0 ? part : part.slice(0, slash);
      const p = slash < 0 ? undefined : part.slice(slash + 1);
      const v = readDecimal(num, { time: false, seconds: false, kbBase });
      if (!v || v.percent || v.value < 0) throw new Error(`"${part}": split conversion failed`);
      let perc: number;
      if (p === undefined) perc = o.absolute ? 0 : -1;
      else if (o.absolute) {
        const a = readDecimal(p, { time: false, seconds: false, kbBase });
        if (!a) throw new Error(`"${part}": split conversion failed`);
        perc = a.value;
      } else {
        const n = parseInt(p, 10);
        perc = Number.isNaN(n) || n === 0 ? -1 : Math.min(n, 100);
      }
      out.push({ value: v.value, perc });
      if (out.length === o.max) break;
    }
    if (out.length === 0) return [];
    return o.zoned ? zonedShares(out, o.absolute) : bsShares(out);
  };
  // one list: every direction; "r,w" or "r,w,t": each its own, a missing trim as write's
  if (byDir.length === 1) return [one(byDir[0]), one(byDir[0]), one(byDir[0])];
  return [one(byDir[0]), one(byDir[1]), one(byDir[2] ?? byDir[1])];
}

function bsShares(out: { value: number; perc: number }[]): SplitEntry[] {
  let perc = 0, missing = 0;
  for (const e of out) {
    if (e.perc === -1) missing++;
    else perc += e.perc;
  }
  if (perc > 100 && missing > 1) throw new Error("bssplit percentages add to more than 100%");
  if (missing) {
    if (missing === 1 && out.length === 1) perc = 100;
    for (const e of out) if (e.perc === -1) e.perc = Math.floor(Math.max(0, 100 - perc) / missing);
  }
  return out.sort((a, b) => a.perc - b.perc);
}

function zonedShares(out: { value: number; perc: number }[], absolute: boolean): SplitEntry[] {
  // a zone: value = % of accesses, perc = % of the file (or bytes when absolute)
  let perc = 0, sperc = 0, smissing = 0;
  for (const e of out) {
    perc += e.value;
    if (!absolute) {
      if (e.perc === -1) smissing++;
      else sperc += e.perc;
    }
  }
  if (perc > 100 || sperc > 100) throw new Error("zone_split percentages add to more than 100%");
  if (perc < 100) {
    throw new Error(
      `access percentages don't add up to 100 for zoned random distribution (got=${perc})`,
    );
  }
  if (smissing) {
    if (smissing === 1 && out.length === 1) sperc = 100;
    for (const e of out) if (e.perc === -1) e.perc = Math.floor((100 - sperc) / smissing);
  }
  return out;
}

/** fio's random distributions with their parameter and center (-1: none). */
export type DistributionText =
  | { readonly kind: "random" }
  | { readonly kind: "zipf" | "pareto" | "normal"; readonly value: number; readonly center: number }
  | { readonly kind: "zoned" | "zoned_abs"; readonly zones: (SplitEntry[] | undefined)[] };

/** Reads `random_distribution` as str_random_distribution_cb does. */
export function parseDistribution(text: string, kbBase: number): DistributionText {
  const word = matchWord(
    ["random", "zipf", "pareto", "normal", "gauss", "zoned", "zoned_abs"],
    text,
  );
  if (word === undefined) {
    throw new Error(`"${text}" is not random, zipf, pareto, normal, gauss, zoned or zoned_abs`);
  }
  if (word === "random") return { kind: "random" };
  if (word === "zoned" || word === "zoned_abs") {
    const pre = `${word}:`;
    const t = text.trim();
    if (!t.startsWith(pre)) throw new Error(`mismatch in zoned input <${t}>`);
    return {
      kind: word,
      zones: parseSplit(t.slice(pre.length), kbBase, {
        absolute: word === "zoned_abs",
        zoned: true,
        max: 256,
      }),
    };
  }
  const kind: "zipf" | "pareto" | "normal" = word === "gauss"
    ? "normal"
    : word as "zipf" | "pareto" | "normal";
  let value = kind === "zipf" ? 1.1 : kind === "pareto" ? 0.2 : 0;
  let center = -1;
  const colon = text.indexOf(":");
  if (colon >= 0) {
    const post = text.slice(colon + 1).trim();
    const [v, c] = post.split(":", 2) as [string, string | undefined];
    const num = (s: string) => {
      const m = /^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(s);
      if (!m) throw new Error("random postfix parsing failed");
      return Number(m[0]);
    };
    value = num(v);
    if (c !== undefined) center = num(c);
  }
  if (center !== -1 && (center < 0 || center > 1)) {
    throw new Error("distribution center out of range (0 <= center <= 1.0)");
  }
  if (kind === "zipf" && value === 1) throw new Error("zipf theta must be different than 1.0");
  if (kind === "pareto" && (value <= 0 || value >= 1)) {
    throw new Error("pareto input out of range (0 < input < 1.0)");
  }
  if (kind === "normal" && (value < 0 || value >= 100)) {
    throw new Error("normal deviation out of range (0 <= input < 100.0)");
  }
  return { kind, value, center };
}

/** The bytes of a `buffer_pattern` as fio's parse_and_fill_pattern builds them. */
export function parsePattern(text: string, readFile: (path: string) => Uint8Array): Uint8Array {
  const out: number[] = [];
  let s = text;
  while (s.length > 0) {
    if (s[0] === "'") {
      const end = s.indexOf("'", 1);
      if (end < 0) throw new Error(`${s}: a file name needs its closing '`);
      out.push(...readFile(s.slice(1, end)).subarray(0, 512 - out.length));
      s = s.slice(end + 1);
    } else if (s[0] === '"') {
      const end = s.indexOf('"', 1);
      if (end < 0) throw new Error(`${s}: a string needs its closing "`);
      out.push(...new TextEncoder().encode(s.slice(1, end)));
      s = s.slice(end + 1);
    } else if (/^0[xX][0-9a-fA-F]/.test(s)) {
      let digits = /^0[xX]([0-9a-fA-F]+)/.exec(s)![1]!;
      // "0xff0x14": the next 0x starts another number
      const next = digits.toLowerCase().indexOf("0x", 1);
      if (next > 0 && /[xX]/.test(s[2 + next + 1] ?? "")) digits = digits.slice(0, next);
      let hex = digits;
      if (hex.length % 2 === 1) hex = "0" + hex;
      for (let i = 0; i < hex.length; i += 2) out.push(parseInt(hex.slice(i, i + 2), 16));
      s = s.slice(2 + digits.length);
    } else {
      const m = /^\s*[+-]?\d+/.exec(s.split(/0[xX]/)[0] ?? "");
      if (!m) throw new Error(`"${s}" is not a number, "string", 'file' or 0x… pattern`);
      const v = Number(m[0]);
      if (v > 2 ** 31 - 1 || v < -(2 ** 31)) throw new Error(`${m[0]} is out of range`);
      if (v === 0) out.push(0);
      else for (let u = v >>> 0; u; u >>>= 8) out.push(u & 0xff);
      s = s.slice(m[0].length);
    }
    if (out.length > 512) throw new Error("the pattern is longer than fio's 512 bytes");
  }
  if (out.length === 0) throw new Error("the pattern is empty");
  return new Uint8Array(out);
}

const ERRNO_NAMES = [
  "EPERM",
  "ENOENT",
  "ESRCH",
  "EINTR",
  "EIO",
  "ENXIO",
  "E2BIG",
  "ENOEXEC",
  "EBADF",
  "ECHILD",
  "EAGAIN",
  "ENOMEM",
  "EACCES",
  "EFAULT",
  "ENOTBLK",
  "EBUSY",
  "EEXIST",
  "EXDEV",
  "ENODEV",
  "ENOTDIR",
  "EISDIR",
  "EINVAL",
  "ENFILE",
  "EMFILE",
  "ENOTTY",
  "ETXTBSY",
  "EFBIG",
  "ENOSPC",
  "ESPIPE",
  "EROFS",
  "EMLINK",
  "EPIPE",
  "EDOM",
  "ERANGE",
]; // deno-fmt-ignore

/** `ignore_error`'s lists per error type (read, write, verify) as errno numbers. */
export function parseIgnoreError(text: string): number[][] {
  return text.trim().split(",").map((list) => {
    const out: number[] = [];
    for (const name of list.split(":")) {
      if (name === "") break;
      const n = name[0] === "E"
        ? ERRNO_NAMES.indexOf(name) + 1
        : Math.abs(parseInt(name, 10) || 0);
      if (!n) throw new Error(`unknown error ${name}, use its number`);
      out.push(n);
    }
    return out;
  });
}

/** Checks fio's callbacks make of a value, for the options tierbench reads. */
function checkCallback(name: string, v: FioValue, kbBase: number, readFile: ReadFile): void {
  const text = v.kind === "word" || v.kind === "text" ? v.text : "";
  switch (name) {
    case "rw": {
      const colon = text.indexOf(":");
      if (colon >= 0 && v.kind === "word" && !v.word!.startsWith("rand") && v.word !== "randrw") {
        const post = text.slice(colon + 1).trim();
        if (!readDecimal(post, { time: false, seconds: false, kbBase })) {
          throw new Error(`"${post}": rw postfix parsing failed`);
        }
      }
      return;
    }
    case "bssplit":
      parseSplit(text, kbBase, { absolute: false, zoned: false, max: 64 });
      return;
    case "random_distribution":
      parseDistribution(text, kbBase);
      return;
    case "buffer_pattern":
      parsePattern(text, readFile);
      return;
    case "ignore_error":
      parseIgnoreError(text);
      return;
    case "file_service_type": {
      const word = v.kind === "word" ? v.word : undefined;
      const colon = text.indexOf(":");
      if (
        (word === "zipf" || word === "pareto" || word === "normal" || word === "gauss") &&
        colon >= 0
      ) {
        parseDistribution(`${word === "gauss" ? "normal" : word}${text.slice(colon)}`, kbBase);
      }
      return;
    }
  }
}

type ReadFile = (path: string) => Uint8Array;

/** The engines whose options core/fio_option_table.ts has (tierbench's, and pvsync2's). */
const ENGINES_WITH_OPTIONS = [
  "psync",
  "sync",
  "vsync",
  "pvsync",
  "pvsync2",
  "libaio",
  "io_uring",
  "null",
];

/** The options of one job (or of a `[global]` section) as fio holds them. */
export class FioSettings {
  readonly #set = new Map<string, FioSetting>();
  /** Every setting read, in order, later ones of an option too. */
  readonly #history: FioSetting[] = [];
  readonly kbBase: number;
  readonly ioengine: string;

  /** The entry that names the job's ioengine, if any. */
  readonly #engineEntry: JobFileEntry | undefined;

  private constructor(kbBase: number, ioengine: string, engineEntry: JobFileEntry | undefined) {
    this.kbBase = kbBase;
    this.ioengine = ioengine;
    this.#engineEntry = engineEntry;
  }

  /**
   * Reads `entries` in order, each checked as fio checks it.
   *
   * @throws {JobFileError} naming the entry's line and key: an option fio
   * does not know, or a value it would refuse.
   */
  static read(entries: readonly JobFileEntry[], readFile: ReadFile): FioSettings {
    const kb = lastValue(entries, ["kb_base"]);
    const kbBase = kb !== undefined && matchWord(["1024", "1000"], kb) === "1000" ? 1000 : 1024;
    const engine = (lastValue(entries, ["ioengine"]) ?? "psync").trim();
    const engineEntry = entries.findLast((e) => e.key === "ioengine");
    const s = new FioSettings(kbBase, engine.split(":")[0]!, engineEntry);
    for (const [i, e] of entries.entries()) s.#add(e, readFile, i);
    return s;
  }

  #add(e: JobFileEntry, readFile: ReadFile, seq: number): void {
    const facts = findFioOption(e.key, this.ioengine);
    if (!facts) {
      // an option of an engine tierbench has not: the engine is what cannot run
      if (this.#engineEntry && !ENGINES_WITH_OPTIONS.includes(this.ioengine)) {
        fail(
          this.#engineEntry,
          `${this.ioengine} is not an engine tierbench has (it has psync, sync, vsync and ` +
            `pvsync as psync, libaio, io_uring, null), and ${e.key} (${e.where}) is its option`,
        );
      }
      const other = FIO_OPTION_FACTS.find((o) => o.name === e.key && o.engine);
      fail(
        e,
        other
          ? `is an option of ioengine=${other.engine}, not of ${this.ioengine} (fio: Bad option)`
          : "is not an option fio knows (fio: Bad option)",
      );
    }
    let value: FioValue;
    try {
      value = readFioValue(facts, e.value, this.kbBase);
      checkCallback(facts.name, value, this.kbBase, readFile);
    } catch (err) {
      if (!(err instanceof FioValueError) && !(err instanceof Error)) throw err;
      const unset = [...e.text.matchAll(/\$\{([^}]*)\}/g)].map((m) => m[1]!)
        .filter((v) => Deno.env.get(v) === undefined);
      const shown = e.value === undefined || e.value.trim() === "" ? "" : `${e.value.trim()}: `;
      const why = unset.length > 0 && e.value !== undefined && e.value.trim() === ""
        ? `\${${unset[0]}} is not set in the environment, which leaves it empty: `
        : "";
      const takes = err instanceof FioValueError ? err.fioTakes : undefined;
      const fio = takes === undefined
        ? "fio refuses it too"
        : `fio takes it ${takes}; tierbench refuses it`;
      fail(e, `${why}${shown}${(err as Error).message} (${fio})`, err);
    }
    const setting = { facts, value, entry: e, seq };
    this.#set.delete(facts.name);
    this.#set.set(facts.name, setting);
    this.#history.push(setting);
  }

  /** The setting of option `name` (fio's name), if the job sets it. */
  get(name: string): FioSetting | undefined {
    return this.#set.get(name);
  }

  /** Whether the job sets option `name`. */
  has(name: string): boolean {
    return this.#set.has(name);
  }

  /** Every option set, its last setting each, in the order set. */
  all(): FioSetting[] {
    return [...this.#set.values()];
  }

  /** Every setting read, in order, an option set twice twice. */
  history(): readonly FioSetting[] {
    return this.#history;
  }

  /** Of options `names`, the one set last (undefined when none is set). */
  latest(...names: string[]): string | undefined {
    let best: FioSetting | undefined;
    for (const n of names) {
      const x = this.#set.get(n);
      if (x && (!best || x.seq > best.seq)) best = x;
    }
    return best?.facts.name;
  }

  /** The entry of option `name`, for messages (undefined when at its default). */
  where(name: string): JobFileEntry | undefined {
    return this.#set.get(name)?.entry;
  }

  #value(name: string): FioValue {
    const s = this.#set.get(name);
    if (s) return s.value;
    // an engine's own option (io_uring's fixedbufs) has its default in that engine's entry
    const facts = FIO_OPTION_FACTS.find((o) => o.name === name && !o.engine) ??
      FIO_OPTION_FACTS.find((o) => o.name === name);
    if (!facts) throw new TypeError(`no fio option ${name}`);
    if (facts.def === undefined) {
      if (facts.type === "STR_STORE" || facts.type === "STR") {
        return { kind: "text", text: "" };
      }
      if (facts.type === "BOOL" || facts.type === "STR_SET") return { kind: "flag", value: 0 };
      return { kind: "numbers", slots: new Array(Math.max(1, facts.offs)).fill(0) };
    }
    return readFioValue(facts, facts.def, this.kbBase);
  }

  /** A number slot (read 0, write 1, trim 2) in force, fio's default otherwise, 0 when none. */
  num(name: string, slot = 0): number {
    const v = this.#value(name);
    if (v.kind === "numbers") return v.slots[slot] ?? v.slots[0] ?? 0;
    if (v.kind === "flag") return v.value;
    if (v.kind === "word") return Number(v.word ?? v.text) || 0;
    return 0;
  }

  /** A bool or flag in force. */
  flag(name: string): boolean {
    const v = this.#value(name);
    if (v.kind === "flag") return v.value !== 0;
    if (v.kind === "numbers") return (v.slots[0] ?? 0) !== 0;
    return false;
  }

  /** The word of a STR option in force (fio's default otherwise). */
  word(name: string): string {
    const v = this.#value(name);
    if (v.kind === "word") return v.word ?? v.text;
    if (v.kind === "text") return v.text;
    return "";
  }

  /** The whole text of a STR or STR_STORE option as set (with any `:` suffix). */
  text(name: string): string | undefined {
    const s = this.#set.get(name);
    if (!s) return undefined;
    const v = s.value;
    return v.kind === "word" || v.kind === "text" ? v.text : s.entry.value;
  }

  /** The ranges of a RANGE option as set. */
  ranges(name: string): readonly (readonly [number, number] | undefined)[] | undefined {
    const v = this.#set.get(name)?.value;
    return v?.kind === "ranges" ? v.slots : undefined;
  }

  /** The options set that tierbench refuses (with a value other than fio's default). */
  refusals(): { entry: JobFileEntry; note: string }[] {
    const out: { entry: JobFileEntry; note: string }[] = [];
    for (const s of this.#set.values()) {
      const use = fioOptionUse(s.facts);
      if (use.how !== "refused") continue;
      if (s.facts.def !== undefined && sameAsDefault(s, this.kbBase)) continue;
      out.push({ entry: s.entry, note: use.note });
    }
    return out;
  }
}

/** Whether a setting's value is fio's default (then refusing its option would help no one). */
function sameAsDefault(s: FioSetting, kbBase: number): boolean {
  try {
    const d = readFioValue(s.facts, s.facts.def, kbBase);
    return JSON.stringify(d) === JSON.stringify(s.value) ||
      (d.kind === "word" && s.value.kind === "word" && d.word === s.value.word);
  } catch {
    return false;
  }
}
