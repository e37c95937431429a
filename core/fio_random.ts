/**
 * fio's random number streams, so a job file's random offsets, block sizes
 * and read/write mix come out as fio 3.33's do for the same file: the
 * combined Tausworthe generator (taus88, L'Ecuyer 1996), the seeds fio gives
 * each job (init.c setup_random_seeds, td_fill_rand_seeds), the hash fio
 * scatters ranks with (`val × 0x61C8864680B583EB`), Bob Jenkins' jhash of a
 * file's name, and the zipf, pareto and normal generators (lib/zipf.c,
 * lib/gauss.c).
 *
 * Seeds are 64-bit in fio; they are worked out with BigInt once per job, the
 * per-draw path is 32-bit integer arithmetic.
 *
 * @module
 */

const U64 = (1n << 64n) - 1n;
const GOLDEN_RATIO_64 = 0x61C8864680B583EBn;
/** fio's FIO_RANDSEED. */
const FIO_RANDSEED = 0xb1899bedn;
/** 2^32: FRAND32_MAX + 1. */
const FRAND32_MAX_PLUS_ONE = 4294967296;

/** The streams of fio's rand_seeds[] (fio.h FIO_RAND_*_OFF), by index. */
export const RAND = {
  BS: 0,
  BS1: 1,
  BS2: 2,
  VER: 3,
  MIX: 4,
  FILE: 5,
  BLOCK: 6,
  FILE_SIZE: 7,
  TRIM: 8,
  BUF: 9,
  SEQ_RAND_READ: 10,
  SEQ_RAND_WRITE: 11,
  SEQ_RAND_TRIM: 12,
  START_DELAY: 13,
  DEDUPE: 14,
  POISSON: 15,
  ZONE: 16,
  POISSON2: 17,
  POISSON3: 18,
  PRIO: 19,
  DEDUPE_WORKING_SET: 20,
  COUNT: 21,
} as const;

/**
 * fio's taus88 generator: 32-bit draws, seeded as fio's __init_rand32.
 *
 * @example
 * ```ts
 * import { Taus88 } from "./fio_random.ts";
 * const a = new Taus88(7), b = new Taus88(7);
 * console.assert(a.next() === b.next());
 * ```
 */
export class Taus88 {
  #s1: number;
  #s2: number;
  #s3: number;

  /** A generator seeded with the low 32 bits of `seed`. */
  constructor(seed: number | bigint) {
    const s = Number(BigInt.asUintN(32, BigInt(seed)));
    // LCG(x, seed) = x * 69069 ^ seed, with (2^31)+(2^17)+(2^7) = 29 ^ 19 ^ 5 in C
    const lcg = (x: number) => ((Math.imul(x, 69069) >>> 0) ^ s) >>> 0;
    const atLeast = (x: number, m: number) => (x < m ? x + m : x) >>> 0;
    this.#s1 = atLeast(lcg((2 ^ 31) + (2 ^ 17) + (2 ^ 7)), 1);
    this.#s2 = atLeast(lcg(this.#s1), 7);
    this.#s3 = atLeast(lcg(this.#s2), 15);
    for (let i = 0; i < 6; i++) this.next();
  }

  /** The next draw in [0, 2^32). */
  next(): number {
    // TAUSWORTHE(s, a, b, c, d) = ((s & c) << d) ^ (((s << a) ^ s) >> b), 32-bit unsigned
    const s1 = this.#s1, s2 = this.#s2, s3 = this.#s3;
    this.#s1 = (((s1 & 4294967294) << 12) ^ (((s1 << 13) ^ s1) >>> 19)) >>> 0;
    this.#s2 = (((s2 & 4294967288) << 4) ^ (((s2 << 2) ^ s2) >>> 25)) >>> 0;
    this.#s3 = (((s3 & 4294967280) << 17) ^ (((s3 << 3) ^ s3) >>> 11)) >>> 0;
    return (this.#s1 ^ this.#s2 ^ this.#s3) >>> 0;
  }

  /** A draw in [start, end], both included (fio's rand_between). */
  between(start: number, end: number): number {
    const r = this.next();
    return start + Math.trunc((end - start + 1) * (r / FRAND32_MAX_PLUS_ONE));
  }

  /** A draw in [0, 1) as fio's `r / (FRAND32_MAX + 1.0)`. */
  unit(): number {
    return this.next() / FRAND32_MAX_PLUS_ONE;
  }
}

/** fio's __hash_u64: `val × GOLDEN_RATIO_64` modulo 2^64. */
export function hashU64(val: bigint): bigint {
  return (val * GOLDEN_RATIO_64) & U64;
}

/** fio's jhash of `key` (hash.h; its 12-byte rounds add one byte each, as fio's does). */
export function jhash(key: Uint8Array, initval = 0): number {
  const rol = (w: number, s: number) => ((w << s) | (w >>> (32 - s))) >>> 0;
  let a = (0x61c88647 + key.length + initval) >>> 0; // fio's GOLDEN_RATIO_32
  let b = a, c = a;
  let length = key.length;
  let k = 0;
  const mix = () => {
    a = (a - c) >>> 0;
    a = (a ^ rol(c, 4)) >>> 0;
    c = (c + b) >>> 0;
    b = (b - a) >>> 0;
    b = (b ^ rol(a, 6)) >>> 0;
    a = (a + c) >>> 0;
    c = (c - b) >>> 0;
    c = (c ^ rol(b, 8)) >>> 0;
    b = (b + a) >>> 0;
    a = (a - c) >>> 0;
    a = (a ^ rol(c, 16)) >>> 0;
    c = (c + b) >>> 0;
    b = (b - a) >>> 0;
    b = (b ^ rol(a, 19)) >>> 0;
    a = (a + c) >>> 0;
    c = (c - b) >>> 0;
    c = (c ^ rol(b, 4)) >>> 0;
    b = (b + a) >>> 0;
  };
  while (length > 12) {
    a = (a + key[k]!) >>> 0;
    b = (b + key[k + 4]!) >>> 0;
    c = (c + key[k + 8]!) >>> 0;
    mix();
    length -= 12;
    k += 12;
  }
  if (length === 0) return c >>> 0;
  // the last block: byte i of it goes to a, b or c (4 each), little end first
  for (let i = length - 1; i >= 0; i--) {
    const v = (key[k + i]! << (8 * (i % 4))) >>> 0;
    if (i < 4) a = (a + v) >>> 0;
    else if (i < 8) b = (b + v) >>> 0;
    else c = (c + v) >>> 0;
  }
  c = (c ^ b) >>> 0;
  c = (c - rol(b, 14)) >>> 0;
  a = (a ^ c) >>> 0;
  a = (a - rol(c, 11)) >>> 0;
  b = (b ^ a) >>> 0;
  b = (b - rol(a, 25)) >>> 0;
  c = (c ^ b) >>> 0;
  c = (c - rol(b, 16)) >>> 0;
  a = (a ^ c) >>> 0;
  a = (a - rol(c, 4)) >>> 0;
  b = (b ^ a) >>> 0;
  b = (b - rol(a, 14)) >>> 0;
  c = (c ^ b) >>> 0;
  c = (c - rol(b, 24)) >>> 0;
  return c >>> 0;
}

/** What fio's seeds of a job depend on. */
export interface SeedOptions {
  /** fio's thread_number: 1 for the first job of the file, counting every clone. */
  readonly threadNumber: number;
  /** randseed (fio's default 0x89). */
  readonly randseed: number;
  /** randrepeat (default true); false: seeds from the system's randomness. */
  readonly randrepeat: boolean;
  /** Whether randseed was set (it then leaves randrepeat's reseeding off). */
  readonly randseedSet: boolean;
  /** allrandrepeat. */
  readonly allrandrepeat: boolean;
  /** The job is random (rand* rw): only then are its block offsets seeded. */
  readonly random: boolean;
}

/** The 64-bit seeds of a job's streams, as fio 3.33 sets them (each used as its low 32 bits). */
export function jobSeeds(o: SeedOptions): bigint[] {
  const seeds: bigint[] = new Array(RAND.COUNT).fill(0n);
  const tn = BigInt(o.threadNumber);
  if (!o.randrepeat && !o.randseedSet) {
    const r = crypto.getRandomValues(new BigUint64Array(RAND.COUNT));
    for (let i = 0; i < RAND.COUNT; i++) seeds[i] = r[i]!;
  } else {
    let seed = BigInt.asUintN(64, BigInt(o.randseed));
    for (let i = 0; i < 4; i++) seed = (seed * 0x9e370001n) & U64;
    for (let i = 0; i < RAND.COUNT; i++) {
      seeds[i] = (seed * tn + BigInt(i)) & U64;
      seed = (seed * 0x9e370001n) & U64;
    }
  }
  if (o.allrandrepeat) {
    for (let i = 0; i < RAND.COUNT; i++) seeds[i] = (FIO_RANDSEED * tn + BigInt(i)) & U64;
  }
  // setup_random_seeds runs before randseed turns randrepeat off: block offsets keep
  // FIO_RANDSEED × thread_number whenever randrepeat is on (fio's default)
  if (o.random && (o.randrepeat || o.randseedSet)) {
    seeds[RAND.BLOCK] = (FIO_RANDSEED * tn) & U64;
  }
  return seeds;
}

/** A generator of ranks in [0, n) (zipf, pareto, normal), fio's way. */
export interface RankGenerator {
  next(): number;
}

/** fio's zipf over `nranges` ranks with `theta`, scattered by hash unless `center` is set. */
export class Zipf implements RankGenerator {
  readonly #n: number;
  readonly #theta: number;
  readonly #zetan: number;
  readonly #zeta2: number;
  readonly #rand: Taus88;
  readonly #off: bigint;
  readonly #hash: boolean;

  constructor(nranges: number, theta: number, center: number, seed: number, hash = true) {
    this.#n = nranges;
    this.#theta = theta;
    this.#rand = new Taus88(seed);
    const r = this.#rand.next();
    this.#off = BigInt(center !== -1 ? Math.trunc(nranges * center) : r);
    this.#zeta2 = Math.pow(1.0, theta) + Math.pow(0.5, theta);
    let zetan = 0;
    const toGen = Math.min(nranges, 10_000_000);
    for (let i = 0; i < toGen; i++) zetan += Math.pow(1.0 / (i + 1), theta);
    this.#zetan = zetan;
    this.#hash = hash;
  }

  next(): number {
    const n = this.#n;
    const alpha = 1.0 / (1.0 - this.#theta);
    const eta = (1.0 - Math.pow(2.0 / n, 1.0 - this.#theta)) / (1.0 - this.#zeta2 / this.#zetan);
    const uni = this.#rand.next() / 4294967295;
    const z = uni * this.#zetan;
    let val: number;
    if (z < 1.0) val = 1;
    else if (z < 1.0 + Math.pow(0.5, this.#theta)) val = 2;
    else val = 1 + Math.trunc(n * Math.pow(eta * uni - eta + 1.0, alpha));
    val--;
    return scatter(val, this.#hash, this.#off, n);
  }
}

/** fio's pareto over `nranges` ranks with power `h`. */
export class Pareto implements RankGenerator {
  readonly #n: number;
  readonly #pow: number;
  readonly #rand: Taus88;
  readonly #off: bigint;

  constructor(nranges: number, h: number, center: number, seed: number) {
    this.#n = nranges;
    this.#rand = new Taus88(seed);
    const r = this.#rand.next();
    this.#off = BigInt(center !== -1 ? Math.trunc(nranges * center) : r);
    this.#pow = Math.log(h) / Math.log(1.0 - h);
  }

  next(): number {
    const rand = this.#rand.next() / 4294967295;
    const v = Math.trunc((this.#n - 1) * Math.pow(rand, this.#pow));
    return scatter(v, true, this.#off, this.#n);
  }
}

/** fio's normal (gauss) over `nranges` ranks, `dev` % of them wide. */
export class Gauss implements RankGenerator {
  readonly #n: number;
  readonly #stddev: number;
  readonly #rand: Taus88;
  readonly #off: bigint;

  constructor(nranges: number, dev: number, center: number, seed: number) {
    this.#n = nranges;
    this.#rand = new Taus88(seed);
    let sd = 0;
    if (dev !== 0) {
      sd = Math.ceil((nranges * dev) / 100.0);
      if (sd > Math.floor(nranges / 2)) sd = Math.floor(nranges / 2);
    }
    this.#stddev = sd;
    this.#off = center === -1 ? 0n : BigInt(Math.trunc(nranges * (center - 0.5)));
  }

  next(): number {
    let sum = 0;
    for (let i = 0; i < 12; i++) sum += this.#rand.next() % (this.#n + 1);
    sum = Math.floor((sum + 11) / 12);
    if (this.#stddev) {
      const r = this.#rand.next();
      let dev = Math.trunc(this.#stddev * (r / 4294967296)) - Math.trunc(this.#stddev / 2);
      while (dev + sum >= this.#n) dev = Math.trunc(dev / 2);
      sum += dev;
    }
    return scatter(sum, true, this.#off, this.#n);
  }
}

/** `(hash(v) + off) mod n` in 64-bit unsigned arithmetic, as fio returns a rank. */
function scatter(v: number, hash: boolean, off: bigint, n: number): number {
  const x = hash ? hashU64(BigInt.asUintN(64, BigInt(v))) : BigInt.asUintN(64, BigInt(v));
  return Number(((x + off) & U64) % BigInt(n));
}
