/**
 * What a job file's writes carry, as fio's buffer options make it (io_u.c
 * fill_io_buffer, get_buf_state, small_content_scramble): random bytes, a
 * `buffer_pattern`, zeros; `buffer_compress_percentage` of each
 * `buffer_compress_chunk` zeros after random bytes; `dedupe_percentage` of
 * the writes repeating an earlier write's contents (the last unique one, or
 * one of a working set); fresh contents before every write
 * (`refill_buffers`), or a light scramble of each 512-byte block (fio's
 * default `scramble_buffers`). The bytes are tierbench's own; how much of
 * them compresses and repeats is fio's.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import type { FioData } from "../core/fio_job.ts";
import { XorShift32 } from "../core/offsets.ts";

/** Fills write buffers of one clone. */
export class WriteFiller {
  readonly #d: FioData;
  readonly #rng: XorShift32;
  readonly #dedupe: XorShift32;
  #prevSeed: number;
  readonly #workingSet: number[];
  /** Fill the whole buffer before each write (refill), else only scramble it. */
  readonly #refill: boolean;
  readonly #scramble: boolean;
  #scrambleCount = 0;

  constructor(d: FioData, seed: number, uniquePages: number) {
    this.#d = d;
    this.#rng = new XorShift32(seed);
    this.#dedupe = new XorShift32(seed ^ 0x5bd1e995);
    this.#prevSeed = this.#rng.next();
    const ws = d.dedupeMode === "working_set" && d.dedupePercentage > 0
      ? Math.max(1, uniquePages)
      : 0;
    const wsRng = new XorShift32(d.dedupeGlobal ? 0x2545f491 : seed ^ 0x27d4eb2d);
    this.#workingSet = Array.from({ length: ws }, () => wsRng.next());
    this.#refill = d.refill || d.compressPercentage > 0;
    this.#scramble = d.scramble && d.compressPercentage === 0 && !d.zero &&
      d.pattern === undefined;
  }

  /** Whether a write changes the buffer at all (else it is filled once). */
  get perWrite(): boolean {
    return this.#refill || this.#scramble;
  }

  /** Makes `buf` ready for a write of `len` bytes at `offset` (fio's get_io_u for a write). */
  fill(buf: Uint8Array, len: number, offset: number): void {
    if (this.#refill) this.fillWhole(buf, len);
    else if (this.#scramble) this.#scrambleBlocks(buf, len, offset);
  }

  /** fio's fill_io_buffer: the whole contents of a buffer. */
  fillWhole(buf: Uint8Array, len: number): void {
    const d = this.#d;
    if (d.compressPercentage > 0 || d.dedupePercentage > 0) {
      const seed = this.#bufSeed();
      const rng = new XorShift32(seed);
      const chunk = Math.min(len, d.compressChunk || len) || len;
      for (let at = 0; at < len; at += chunk) {
        const n = Math.min(chunk, len - at);
        const random = Math.floor((n * (100 - d.compressPercentage)) / 100);
        rng.fillBytes(buf.subarray(at, at + random));
        const rest = buf.subarray(at + random, at + n);
        if (d.pattern) repeat(rest, d.pattern);
        else rest.fill(0);
      }
      return;
    }
    if (d.pattern) repeat(buf.subarray(0, len), d.pattern);
    else if (d.zero) buf.fill(0, 0, len);
    else new XorShift32(this.#rng.next()).fillBytes(buf.subarray(0, len));
  }

  /** fio's get_buf_state: a new buffer's seed, or an earlier one's to repeat it. */
  #bufSeed(): number {
    const d = this.#d;
    if (d.dedupePercentage === 0) return (this.#prevSeed = this.#rng.next());
    if (d.dedupePercentage === 100) return this.#prevSeed;
    const v = 1 + (this.#dedupe.next() % 100);
    if (v <= d.dedupePercentage) {
      if (d.dedupeMode === "working_set") {
        return this.#workingSet[this.#dedupe.next() % this.#workingSet.length]!;
      }
      return this.#prevSeed;
    }
    return (this.#prevSeed = this.#rng.next());
  }

  /** fio's small_content_scramble: the offset and a counter into each 512-byte block. */
  #scrambleBlocks(buf: Uint8Array, len: number, offset: number): void {
    const blocks = len >>> 9;
    if (!blocks) return;
    const view = new DataView(buf.buffer, buf.byteOffset, len);
    const stamp = ++this.#scrambleCount;
    const line = (stamp ^ offset) & 7;
    for (let i = 0; i < blocks; i++) {
      const p = i * 512;
      view.setFloat64(p + (line << 6), offset + p, true);
      view.setUint32(p + 48, stamp, true);
    }
  }
}

function repeat(b: Uint8Array, pattern: readonly number[]): void {
  const n = pattern.length;
  for (let i = 0; i < b.byteLength; i++) b[i] = pattern[i % n]!;
}

/**
 * The filler of a clone whose writes need one (a job file's buffer options),
 * else undefined (the buffer keeps the random bytes it was filled with).
 */
export function writeFiller(plan: JobPlan): WriteFiller | undefined {
  const d = plan.data;
  if (!d) return undefined;
  const minBs = plan.pattern
    ? Math.min(plan.pattern.sizes[1].min, plan.pattern.sizes[0].min)
    : plan.bs;
  const size = plan.pattern ? plan.pattern.files.reduce((a, f) => a + f.ioSize, 0) : plan.size;
  const unique = Math.floor((size * d.dedupeWorkingSetPercentage) / 100 / minBs);
  return new WriteFiller(d, (plan.seed ^ 0x9e3779b9 ^ (plan.job * 0x85ebca6b)) >>> 0, unique);
}
