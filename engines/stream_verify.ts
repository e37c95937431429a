/**
 * `--verify` for a rank's streams (workloads, replay): every byte a stream
 * writes is a pattern fixed by the object, the write (its generation) and
 * the byte's place in the object, so any request read back later — whole
 * objects, regions, slices cut at other boundaries than the writes' — is
 * checked byte for byte against the write that last covered it, and a
 * mismatch is named at its exact offset.
 *
 * Unlike the job engines' blocks (core/verify.ts: a header and checksum per
 * bs block), a stream's requests need not line up with the writes that made
 * what they read (an object written whole and read in regions), hence a
 * pattern of position rather than stamped blocks.
 *
 * @module
 */

import { VerifyError } from "../core/verify.ts";

/** One write's span of an object and its generation. */
interface Extent {
  start: number;
  end: number;
  generation: number;
}

/** 32-bit FNV-1a of a string. */
function fnv(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The pattern word of 32-bit word `w` (offset 4w) under `seed` (murmur3's finaliser). */
function word(seed: number, w: number): number {
  let h =
    (Math.imul(w >>> 0, 0x9e3779b1) ^ seed ^ Math.imul(Math.floor(w / 4294967296), 0x85ebca6b)) >>>
    0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** The pattern byte at offset `at` under `seed`. */
function byteAt(seed: number, at: number): number {
  return (word(seed, Math.floor(at / 4)) >>> ((at % 4) * 8)) & 0xff;
}

/** Writes the pattern of `seed` for offsets [at, at + buf.length) into `buf`. */
function paint(buf: Uint8Array, seed: number, at: number): void {
  let i = 0;
  for (; i < buf.length && (at + i) % 4 !== 0; i++) buf[i] = byteAt(seed, at + i);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  for (; i + 4 <= buf.length; i += 4) view.setUint32(i, word(seed, (at + i) / 4), true);
  for (; i < buf.length; i++) buf[i] = byteAt(seed, at + i);
}

/** The first offset in `buf` (read from `at`) that differs from the pattern of `seed`, or -1. */
function firstDiff(buf: Uint8Array, seed: number, at: number): number {
  let i = 0;
  for (; i < buf.length && (at + i) % 4 !== 0; i++) if (buf[i] !== byteAt(seed, at + i)) return i;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  for (; i + 4 <= buf.length; i += 4) {
    if (view.getUint32(i, true) !== word(seed, (at + i) / 4)) {
      for (let b = i; b < i + 4; b++) if (buf[b] !== byteAt(seed, at + b)) return b;
    }
  }
  for (; i < buf.length; i++) if (buf[i] !== byteAt(seed, at + i)) return i;
  return -1;
}

function hex(bytes: ArrayLike<number>): string {
  let s = "0x";
  for (let i = 0; i < bytes.length; i++) s += bytes[i]!.toString(16).padStart(2, "0");
  return s;
}

/**
 * One rank's verify state, shared by its streams: the generation of every
 * span of every object it wrote (a file path, or `s3://bucket/key`). A write transfer takes a generation with
 * {@linkcode written} and fills each request with {@linkcode fill}; a read
 * checks each completed request with {@linkcode check}.
 *
 * @example
 * ```ts
 * import { StreamVerifier } from "./stream_verify.ts";
 * const v = new StreamVerifier("run1");
 * const gen = v.written("/d/r0/params", 0, 8192);
 * const block = new Uint8Array(4096);
 * v.fill(block, "/d/r0/params", gen, 4096);
 * v.check(block, "/d/r0/params", 4096); // throws VerifyError on a mismatch
 * console.assert(v.checkedBytes === 4096);
 * ```
 */
export class StreamVerifier {
  readonly #salt: number;
  readonly #objects = new Map<string, Extent[]>();
  #generation = 0;
  /** Bytes read and checked so far. */
  checkedBytes = 0;

  /** `runId` makes a run's bytes its own. */
  constructor(runId: string) {
    this.#salt = fnv(runId, 0x7e57ab1e);
  }

  #seed(object: string, generation: number): number {
    return (fnv(object, this.#salt) ^ Math.imul(generation, 0x27d4eb2d)) >>> 0;
  }

  /** Records a write of [at, at + bytes) of `object`; returns the generation its bytes carry. */
  written(object: string, at: number, bytes: number): number {
    const generation = ++this.#generation;
    const end = at + bytes;
    const kept: Extent[] = [];
    for (const e of this.#objects.get(object) ?? []) {
      if (e.end <= at || e.start >= end) kept.push(e);
      else {
        if (e.start < at) kept.push({ start: e.start, end: at, generation: e.generation });
        if (e.end > end) kept.push({ start: end, end: e.end, generation: e.generation });
      }
    }
    kept.push({ start: at, end, generation });
    kept.sort((a, b) => a.start - b.start);
    this.#objects.set(object, kept);
    return generation;
  }

  /** Fills `buf`, the bytes of `object` from `at` of write `generation`, with their pattern. */
  fill(buf: Uint8Array, object: string, generation: number, at: number): void {
    paint(buf, this.#seed(object, generation), at);
  }

  /**
   * Checks `buf`, read from `object` at `at`, against the writes that last
   * covered each of its bytes.
   *
   * @throws {VerifyError} at the first byte that differs, or a byte no write of this run covered.
   */
  check(buf: Uint8Array, object: string, at: number): void {
    const tier = object.startsWith("s3://") ? "s3" : "file";
    const end = at + buf.length;
    let pos = at;
    for (const e of this.#objects.get(object) ?? []) {
      if (e.end <= pos || e.start >= end) continue;
      if (e.start > pos) break; // a gap: bytes nothing wrote
      const to = Math.min(end, e.end);
      const part = buf.subarray(pos - at, to - at);
      const seed = this.#seed(object, e.generation);
      const d = firstDiff(part, seed, pos);
      if (d >= 0) {
        const want = new Uint8Array(Math.min(8, part.length - d));
        paint(want, seed, pos + d);
        throw new VerifyError({
          tier,
          key: object,
          offset: pos + d,
          expected: hex(want),
          found: hex(part.subarray(d, d + want.length)),
          detail: `(of the object's write ${e.generation} of this run)`,
        });
      }
      pos = to;
      if (pos >= end) break;
    }
    if (pos < end) {
      throw new VerifyError({
        tier,
        key: object,
        offset: pos,
        expected: "bytes this run wrote",
        found: "bytes no write of this run covered",
      });
    }
    this.checkedBytes += buf.length;
  }
}
