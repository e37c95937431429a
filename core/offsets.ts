/**
 * Offset streams: where each I/O of a job lands, deterministic for a seed and
 * free of per-op memory.
 *
 * Random offsets visit every block of the file exactly once per pass, like
 * fio's random map, without keeping a map: a full-period linear congruential
 * generator modulo the next power of two, scrambled by a bijection and
 * filtered to the block count.
 *
 * @module
 */

/** Yields block offsets for one job. */
export interface OffsetStream {
  /** The byte offset of the next I/O. */
  next(): number;
}

/**
 * Sequential offsets from 0 to the end of the file, then from 0 again.
 *
 * @example
 * ```ts
 * import { SequentialOffsets } from "./offsets.ts";
 * const s = new SequentialOffsets(4096 * 2, 4096);
 * console.assert(s.next() === 0 && s.next() === 4096 && s.next() === 0);
 * ```
 */
export class SequentialOffsets implements OffsetStream {
  readonly #size: number;
  readonly #bs: number;
  #offset = 0;

  constructor(size: number, bs: number) {
    if (size < bs || bs <= 0) throw new RangeError(`size ${size} must be ≥ bs ${bs} > 0`);
    this.#size = size - (size % bs);
    this.#bs = bs;
  }

  next(): number {
    const o = this.#offset;
    this.#offset = o + this.#bs >= this.#size ? 0 : o + this.#bs;
    return o;
  }
}

/**
 * A random permutation of the file's blocks, a new one each pass.
 *
 * @example
 * ```ts
 * import { RandomOffsets } from "./offsets.ts";
 * const r = new RandomOffsets(4096 * 10, 4096, 7);
 * const seen = new Set(Array.from({ length: 10 }, () => r.next()));
 * console.assert(seen.size === 10);
 * ```
 */
export class RandomOffsets implements OffsetStream {
  readonly #blocks: number;
  readonly #bs: number;
  readonly #mask: number;
  readonly #shift: number;
  #state: number;
  #increment: number;
  #emitted = 0;

  constructor(size: number, bs: number, seed: number) {
    if (size < bs || bs <= 0) throw new RangeError(`size ${size} must be ≥ bs ${bs} > 0`);
    this.#blocks = Math.floor(size / bs);
    if (this.#blocks > 2 ** 32) {
      throw new RangeError(`${this.#blocks} blocks exceed the 2^32 a random stream can walk`);
    }
    this.#bs = bs;
    const bits = Math.max(1, Math.ceil(Math.log2(this.#blocks)));
    this.#mask = bits >= 32 ? 0xffffffff : (1 << bits) - 1;
    this.#shift = Math.max(1, bits >>> 1);
    this.#state = (mix32(seed) & this.#mask) >>> 0;
    this.#increment = (mix32(seed ^ 0x9e3779b9) | 1) >>> 0;
  }

  next(): number {
    if (this.#emitted === this.#blocks) {
      // A new pass: another odd increment gives another permutation.
      this.#emitted = 0;
      this.#increment = (mix32(this.#increment) | 1) >>> 0;
    }
    let block: number;
    do {
      // x ← (a·x + c) mod 2^bits has full period for a ≡ 1 (mod 4) and odd c.
      this.#state =
        (((Math.imul(this.#state, 0x2c9277b5) + this.#increment) >>> 0) & this.#mask) >>> 0;
      block = this.#scramble(this.#state);
    } while (block >= this.#blocks);
    this.#emitted++;
    return block * this.#bs;
  }

  /** A bijection on [0, 2^bits): breaks the LCG's regular low bits. */
  #scramble(x: number): number {
    x = (x ^ (x >>> this.#shift)) >>> 0;
    x = (Math.imul(x, 0x2c1b3c6d | 1) & this.#mask) >>> 0;
    return (x ^ (x >>> this.#shift)) >>> 0;
  }
}

/**
 * xorshift32: a tiny seeded generator for the read/write mix, block sizes,
 * and the bytes that fill buffers.
 *
 * @example
 * ```ts
 * import { XorShift32 } from "./offsets.ts";
 * const a = new XorShift32(5), b = new XorShift32(5);
 * console.assert(a.next() === b.next());
 * const words = new Uint32Array(3);
 * a.fill(words);
 * console.assert(words[2] === (b.next(), b.next(), b.next()));
 * const bytes = new Uint8Array(5);
 * a.fillBytes(bytes);
 * console.assert(bytes[4] === ((b.next(), b.next()) & 0xff));
 * ```
 */
export class XorShift32 {
  /**
   * The state as a signed 32-bit integer, the value {@linkcode next} returns
   * being its unsigned reading: kept unsigned, a state above 2^31 made V8
   * box a number on every store, and a value cost about 9 ns instead of 2.
   */
  #s: number;

  constructor(seed: number) {
    this.#s = (mix32(seed) || 0x6d2b79f5) | 0;
  }

  /** The next value in [0, 2^32). */
  next(): number {
    let x = this.#s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#s = x;
    return x >>> 0;
  }

  /** Fills `words` with the next `words.length` values, as as many calls of {@linkcode next} would. */
  fill(words: Uint32Array): void {
    let x = this.#s;
    for (let i = 0; i < words.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      words[i] = x;
    }
    this.#s = x;
  }

  /**
   * Fills `bytes` with the next values, each a little-endian 32-bit word
   * (through a Uint32Array where the host and the alignment allow: 5 times a
   * DataView's speed), the bytes after the last whole word one value each.
   */
  fillBytes(bytes: Uint8Array): void {
    const words = bytes.byteLength >>> 2;
    if (LITTLE_ENDIAN && bytes.byteOffset % 4 === 0) {
      this.fill(new Uint32Array(bytes.buffer, bytes.byteOffset, words));
    } else {
      const w = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let i = 0; i < words; i++) w.setUint32(i * 4, this.next(), true);
    }
    for (let i = words * 4; i < bytes.byteLength; i++) bytes[i] = this.next() & 0xff;
  }
}

/** Whether a Uint32Array stores a word low byte first, as {@linkcode XorShift32.fillBytes}'s words are. */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** murmur3's 32-bit finaliser: spreads a seed over all bits. */
function mix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
