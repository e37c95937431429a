/**
 * `trace replay --verify`: every byte a replay writes is fixed by its file
 * and its offset (not by which write put it there, so writes of any size, in
 * any order, by any thread agree), and a read is checked against it where
 * this thread knows the bytes were written or laid out.
 *
 * @module
 */

/** The 32-bit word of file `key` at word index `w`. */
function word(key: number, w: number): number {
  let h = Math.imul(key ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(w, 0xc2b2ae35);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return h >>> 0;
}

/** The pattern's byte of file `key` at byte offset `p`. */
function byteAt(key: number, p: number): number {
  return (word(key, Math.floor(p / 4)) >>> ((p % 4) * 8)) & 0xff;
}

/**
 * Fills `bytes` with file `key`'s pattern from byte `offset` on.
 *
 * @example
 * ```ts
 * import { checkPattern, fillPattern } from "./_trace_pattern.ts";
 * const b = new Uint8Array(10);
 * fillPattern(b, 3, 4097);
 * console.assert(checkPattern(b, 3, 4097) === -1 && checkPattern(b, 3, 4096) >= 0);
 * ```
 */
export function fillPattern(bytes: Uint8Array, key: number, offset: number): void {
  let i = 0;
  for (; i < bytes.length && (offset + i) % 4 !== 0; i++) bytes[i] = byteAt(key, offset + i);
  const aligned = bytes.byteOffset + i;
  const words = Math.floor((bytes.length - i) / 4);
  if (aligned % 4 === 0) {
    const u32 = new Uint32Array(bytes.buffer, aligned, words);
    const w0 = (offset + i) / 4;
    for (let k = 0; k < words; k++) u32[k] = word(key, w0 + k);
    i += words * 4;
  }
  for (; i < bytes.length; i++) bytes[i] = byteAt(key, offset + i);
}

/** The index of the first byte of `bytes` that is not file `key`'s pattern at `offset`, or -1. */
export function checkPattern(bytes: Uint8Array, key: number, offset: number): number {
  let i = 0;
  for (; i < bytes.length && (offset + i) % 4 !== 0; i++) {
    if (bytes[i] !== byteAt(key, offset + i)) return i;
  }
  const aligned = bytes.byteOffset + i;
  const words = Math.floor((bytes.length - i) / 4);
  if (aligned % 4 === 0) {
    const u32 = new Uint32Array(bytes.buffer, aligned, words);
    const w0 = (offset + i) / 4;
    for (let k = 0; k < words; k++) {
      if (u32[k] !== word(key, w0 + k)) {
        for (let j = i + k * 4; j < i + k * 4 + 4; j++) {
          if (bytes[j] !== byteAt(key, offset + j)) return j;
        }
      }
    }
    i += words * 4;
  }
  for (; i < bytes.length; i++) if (bytes[i] !== byteAt(key, offset + i)) return i;
  return -1;
}

/** Most intervals kept per file: past it, new ranges are not followed (reads there go unchecked). */
const MAX_INTERVALS = 10_000;

/**
 * The byte ranges of one file known to hold the pattern, merged: what was
 * laid out and what this thread wrote.
 */
export class Coverage {
  /** Sorted, disjoint, not touching: start, end, start, end … */
  #iv: number[] = [];

  /** Adds [start, end). */
  add(start: number, end: number): void {
    if (end <= start) return;
    const iv = this.#iv;
    const n = iv.length;
    if (n === 0 || start > iv[n - 1]!) {
      if (n / 2 < MAX_INTERVALS) iv.push(start, end);
      return;
    }
    if (start >= iv[n - 2]! || (start <= iv[n - 1]! && start >= iv[n - 2]!)) {
      iv[n - 1] = Math.max(iv[n - 1]!, end);
      return;
    }
    const out: number[] = [];
    let s = start, e = end, placed = false;
    for (let k = 0; k < n; k += 2) {
      const a = iv[k]!, b = iv[k + 1]!;
      if (b < s) out.push(a, b);
      else if (a > e) {
        if (!placed) (out.push(s, e), placed = true);
        out.push(a, b);
      } else (s = Math.min(s, a), e = Math.max(e, b));
    }
    if (!placed) out.push(s, e);
    this.#iv = out.length / 2 <= MAX_INTERVALS ? out : iv;
  }

  /** How many bytes of [start, end) are covered, and the ranges, for a check. */
  covered(start: number, end: number): [number, number][] {
    const out: [number, number][] = [];
    const iv = this.#iv;
    for (let k = 0; k < iv.length; k += 2) {
      const a = Math.max(start, iv[k]!), b = Math.min(end, iv[k + 1]!);
      if (a < b) out.push([a, b]);
      if (iv[k]! >= end) break;
    }
    return out;
  }

  /** Forgets everything (the file was truncated, renamed or removed). */
  clear(): void {
    this.#iv = [];
  }
}
