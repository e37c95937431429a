/**
 * Sizes and durations in fio's notation: binary suffixes (k = 1024), seconds
 * by default.
 *
 * @module
 */

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
  t: 1024 ** 4,
};

const SIZE_RE = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i;

/**
 * Parses a size such as `4k`, `1m`, `512M`, `8g`, `1MiB` or `4096` into bytes.
 * Suffixes are binary (k = 1024), as in fio. Returns `undefined` when the text
 * is not a size, so callers can name the field in their own error.
 *
 * @example
 * ```ts
 * import { parseSize } from "./units.ts";
 * console.assert(parseSize("1m") === 1048576);
 * console.assert(parseSize("1.5k") === 1536);
 * console.assert(parseSize("ten") === undefined);
 * ```
 */
export function parseSize(text: string): number | undefined {
  const bytes = bytesWritten(text);
  return bytes !== undefined && Number.isSafeInteger(bytes) ? bytes : undefined;
}

/**
 * Whether text is written as a size but names more bytes than a number holds
 * exactly (above 2^53 − 1, 8 PiB less one byte), as `8192t` does: fio takes it,
 * {@linkcode parseSize} cannot.
 *
 * @example
 * ```ts
 * import { isSizeTooLarge } from "./units.ts";
 * console.assert(isSizeTooLarge("8192t"));
 * console.assert(!isSizeTooLarge("8191t"));
 * console.assert(!isSizeTooLarge("ten"));
 * ```
 */
export function isSizeTooLarge(text: string): boolean {
  const bytes = bytesWritten(text);
  return bytes !== undefined && bytes > Number.MAX_SAFE_INTEGER;
}

/**
 * What is wrong with a size refused, for an error: that it is too large
 * (text as {@linkcode isSizeTooLarge} finds it, or a number of bytes already
 * read past 2^53 − 1), else that it is not `what`. `written` is quoted as
 * given; `read` is the part of it that was read as a size, where that is
 * less (`8192t` of `8192t/s`).
 *
 * @example
 * ```ts
 * import { badSize } from "./units.ts";
 * console.assert(badSize("12q") === '"12q" is not a size');
 * console.assert(badSize("8192t").startsWith('"8192t" is too large'));
 * ```
 */
export function badSize(
  written: string | number,
  what = "a size",
  read: string | number = written,
): string {
  const tooLarge = typeof read === "number" ? read > Number.MAX_SAFE_INTEGER : isSizeTooLarge(read);
  return tooLarge
    ? `"${written}" is too large: a size is at most 2^53 − 1 bytes (8 PiB)`
    : `"${written}" is not ${what}`;
}

/** The bytes a size's text names, exact or not; `undefined` where it is not written as a size. */
function bytesWritten(text: string): number | undefined {
  const m = SIZE_RE.exec(text.trim());
  return m ? Number(m[1]) * SIZE_UNITS[m[2]!.toLowerCase()]! : undefined;
}

/**
 * Formats bytes with the largest binary unit that divides them exactly, in
 * the form {@linkcode parseSize} reads back (`1m`, `4k`, `1536`).
 *
 * @example
 * ```ts
 * import { formatSize } from "./units.ts";
 * console.assert(formatSize(1048576) === "1m");
 * console.assert(formatSize(1536) === "1536");
 * ```
 */
export function formatSize(bytes: number): string {
  for (const unit of ["t", "g", "m", "k"] as const) {
    const f = SIZE_UNITS[unit]!;
    if (bytes >= f && bytes % f === 0) return `${bytes / f}${unit}`;
  }
  return String(bytes);
}

/**
 * Bytes per second for people: `1234.5 MiB/s`, `812 KiB/s`.
 *
 * @example
 * ```ts
 * import { formatRate } from "./units.ts";
 * console.assert(formatRate(2 * 1024 ** 2) === "2.0 MiB/s");
 * ```
 */
export function formatRate(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond, ["B", "KiB", "MiB", "GiB"])}/s`;
}

/**
 * Bytes for people: `1.5 GiB`, `812.0 KiB`, `100.0 TiB`.
 *
 * @example
 * ```ts
 * import { formatBytes } from "./units.ts";
 * console.assert(formatBytes(1.5 * 1024 ** 3) === "1.5 GiB");
 * console.assert(formatBytes(100) === "100 B");
 * ```
 */
export function formatBytes(
  bytes: number,
  units: readonly string[] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"],
): string {
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION_RE = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/i;

/**
 * Parses a duration in milliseconds from fio-style text: a bare number is
 * seconds; `ms`, `s`, `m`, `h` suffixes are accepted. `undefined` when not a
 * duration.
 *
 * @example
 * ```ts
 * import { parseDuration } from "./units.ts";
 * console.assert(parseDuration("5") === 5000);
 * console.assert(parseDuration("250ms") === 250);
 * console.assert(parseDuration("2m") === 120000);
 * ```
 */
export function parseDuration(text: string): number | undefined {
  const m = DURATION_RE.exec(text.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * DURATION_UNITS[(m[2] ?? "s").toLowerCase()]!;
  // "999…9" (hundreds of digits) is Infinity: no run can last that long
  return ms <= Number.MAX_SAFE_INTEGER ? ms : undefined;
}
