/**
 * A fio job's I/O pattern and the stream of I/Os it makes: which file, which
 * direction, which offset and how many bytes, chosen as fio 3.33 chooses them
 * (io_u.c: get_next_file, get_rw_ddir, get_next_offset, get_next_buflen) with
 * fio's random streams (core/fio_random.ts), so the same job file gives the
 * same I/Os in tierbench as in fio.
 *
 * Covered: sequential and random I/O with fio's random map (every block once
 * per pass, a taken block giving way to the next free one) or without it,
 * the zipf, pareto, normal, zoned and zoned_abs distributions, `rw=…:N`
 * (sequential holes and backwards I/O, random runs), `percentage_random`,
 * `rw_sequencer`, block sizes from `bs`, `bsrange` and `bssplit` per
 * direction (`bs_is_seq_rand`, `bs_unaligned`, `blockalign`), the read/write
 * mix of `rwmixread` in fio's cycles, file service (roundrobin, sequential,
 * random, with `:N`), and a job's budget: io_size × loops, number_ios.
 *
 * @module
 */

import {
  Gauss,
  jhash,
  jobSeeds,
  Pareto,
  RAND,
  type RankGenerator,
  Taus88,
  Zipf,
} from "./fio_random.ts";

/** How block sizes are drawn for one direction. */
export interface SizeDraw {
  readonly min: number;
  readonly max: number;
  /** bssplit: sizes and their percentages, sorted by percentage as fio sorts them. */
  readonly split?: readonly { readonly bs: number; readonly perc: number }[];
}

/** A zone of a zoned distribution: % of accesses, and its part of the file. */
export interface Zone {
  readonly access: number;
  /** zoned: % of the file; zoned_abs: bytes. */
  readonly size: number;
}

/** How random offsets are drawn. */
export type Distribution =
  | { readonly kind: "random" }
  | { readonly kind: "zipf"; readonly theta: number; readonly center: number }
  | { readonly kind: "pareto"; readonly h: number; readonly center: number }
  | { readonly kind: "normal"; readonly dev: number; readonly center: number }
  | { readonly kind: "zoned" | "zoned_abs"; readonly zones: readonly (readonly Zone[])[] };

/** One file of a job as the pattern addresses it. */
export interface PatternFile {
  /** Its name, as fio's distributions hash it into their seed. */
  readonly name: string;
  /** The file's size in bytes (fio's real_file_size). */
  readonly size: number;
  /** Where I/O starts in it (fio's file_offset). */
  readonly start: number;
  /** How many bytes from `start` I/O addresses (fio's io_size of the file). */
  readonly ioSize: number;
}

/** A fio job's pattern: everything that decides its I/Os, structured-clone friendly. */
export interface IoPattern {
  /** Reads, writes, or both (rwmixread decides). */
  readonly dirs: "read" | "write" | "mixed";
  /** rand* modes. */
  readonly random: boolean;
  /** rwmixread, rwmixwrite (percent). */
  readonly rwmix: readonly [number, number];
  /** Per direction (read, write). */
  readonly sizes: readonly [SizeDraw, SizeDraw];
  readonly unaligned: boolean;
  /** bs_is_seq_rand: the read sizes for sequential I/O, the write sizes for random. */
  readonly seqRand: boolean;
  /** blockalign per direction (random offsets are multiples of it). */
  readonly align: readonly [number, number];
  /** fio's random map (off with norandommap and with any non-uniform distribution). */
  readonly randommap: boolean;
  readonly distribution: Distribution;
  /** rw=read:N: bytes added after each sequential I/O (negative: backwards). */
  readonly seqAdd: number;
  /** rw=randread:N: a new random offset every N I/Os (0: never). */
  readonly seqNr: number;
  /** percentage_random per direction. */
  readonly percentageRandom: readonly [number, number];
  readonly sequencer: "sequential" | "identical";
  readonly files: readonly PatternFile[];
  readonly service: { readonly kind: "roundrobin" | "sequential" | "random"; readonly nr: number };
  /** Bytes of one loop (io_size, or size). */
  readonly loopBytes: number;
  /** loops. */
  readonly loops: number;
  /** io_size was given: passes go on while the budget lasts. */
  readonly ioSizeSet: boolean;
  /** I/Os to issue at most (number_ios); 0: no cap. */
  readonly numberIos: number;
  readonly timeBased: boolean;
  /** fsync (1) or fdatasync (2) every N writes, fio's fsync= and fdatasync=; 0: never. */
  readonly syncEvery: readonly [number, number];
  /** What fio seeds the job's streams with. */
  readonly seeds: {
    readonly threadNumber: number;
    readonly randseed: number;
    readonly randseedSet: boolean;
    readonly randrepeat: boolean;
    readonly allrandrepeat: boolean;
  };
}

/** Per-file state of a stream. */
interface FileState {
  readonly f: PatternFile;
  /** Its index in the pattern's files. */
  readonly index: number;
  /** fio's last_pos and last_start per direction (absolute offsets; -1: none yet). */
  lastPos: [number, number];
  lastStart: [number, number];
  done: boolean;
  map: Uint32Array | undefined;
  mapBits: number;
  rank: RankGenerator | undefined;
}

/** What an I/O of the stream is. */
export const OP = { READ: 0, WRITE: 1, FSYNC: 2, FDATASYNC: 3 } as const;

/**
 * The I/Os of one job (one numjobs clone), one after another. After each
 * {@linkcode OpStream.next} that returns true, `op`, `file`, `offset` and
 * `length` describe the I/O (a sync has length 0).
 *
 * @example
 * ```ts
 * import { type IoPattern, OpStream } from "./io_pattern.ts";
 * const p: IoPattern = {
 *   dirs: "read", random: false, rwmix: [50, 50],
 *   sizes: [{ min: 4096, max: 4096 }, { min: 4096, max: 4096 }], unaligned: false,
 *   seqRand: false, align: [4096, 4096], randommap: true, distribution: { kind: "random" },
 *   seqAdd: 0, seqNr: 1, percentageRandom: [100, 100], sequencer: "sequential",
 *   files: [{ name: "a", size: 16384, start: 0, ioSize: 16384 }],
 *   service: { kind: "roundrobin", nr: 1 }, loopBytes: 16384, loops: 1, ioSizeSet: false,
 *   numberIos: 0, timeBased: false, syncEvery: [0, 0],
 *   seeds: { threadNumber: 1, randseed: 0x89, randseedSet: false, randrepeat: true,
 *     allrandrepeat: false },
 * };
 * const s = new OpStream(p);
 * const offsets: number[] = [];
 * while (s.next()) offsets.push(s.offset);
 * console.assert(offsets.join() === "0,4096,8192,12288");
 * ```
 */
export class OpStream {
  /** The current I/O's kind: {@linkcode OP}. */
  op: number = OP.READ;
  /** Its file's index in the pattern's files. */
  file = 0;
  /** Its offset in the file (bytes). */
  offset = 0;
  /** Its length (bytes). */
  length = 0;

  readonly #p: IoPattern;
  #files: FileState[] = [];
  readonly #seeds: bigint[];
  #block!: Taus88;
  #mix!: Taus88;
  #bs!: [Taus88, Taus88];
  #seqRand!: [Taus88, Taus88];
  #zone!: Taus88;
  #fileRand!: Taus88;
  readonly #issues: [number, number] = [0, 0];
  #rwmixDdir = 0;
  #rwmixIssues = 0;
  #seqNrLeft = 1;
  #next = 0;
  #current: FileState | undefined;
  #serviceLeft = 0;
  #issued = 0;
  #issuedIos = 0;
  #passes = 1;
  #lastWasSync = false;
  /** Files done this pass. */
  #done = 0;
  /** Whether the offset #offsetOf chose was drawn at random. */
  #drawn = false;
  readonly #rwMinBs: number;
  readonly #maxBs: number;

  constructor(pattern: IoPattern) {
    this.#p = pattern;
    this.#rwMinBs = Math.min(pattern.sizes[0].min, pattern.sizes[1].min);
    this.#maxBs = Math.max(pattern.sizes[0].max, pattern.sizes[1].max);
    this.#seeds = jobSeeds({ ...pattern.seeds, random: pattern.random });
    this.#seed();
    this.#files = pattern.files.map((f, i) => this.#fileState(f, i));
  }

  /** Whether the current I/O reads. */
  get read(): boolean {
    return this.op === OP.READ;
  }

  /** Bytes issued so far. */
  get issuedBytes(): number {
    return this.#issued;
  }

  #seed(): void {
    const s = this.#seeds;
    this.#bs = [new Taus88(s[RAND.BS]!), new Taus88(s[RAND.BS1]!)];
    this.#mix = new Taus88(s[RAND.MIX]!);
    this.#fileRand = new Taus88(s[RAND.FILE]!);
    this.#zone = new Taus88(s[RAND.ZONE]!);
    this.#block = new Taus88(s[RAND.BLOCK]!);
    this.#seqRand = [new Taus88(s[RAND.SEQ_RAND_READ]!), new Taus88(s[RAND.SEQ_RAND_READ]!)];
  }

  #fileState(f: PatternFile, index: number): FileState {
    const p = this.#p;
    const fsize = Math.min(f.size, f.ioSize);
    const mapBits = Math.floor(fsize / this.#rwMinBs);
    const st: FileState = {
      f,
      index,
      lastPos: [f.start, f.start],
      lastStart: [-1, -1],
      done: false,
      map: p.random && p.randommap ? new Uint32Array(Math.ceil(mapBits / 32) || 1) : undefined,
      mapBits,
      rank: undefined,
    };
    const d = p.distribution;
    if (p.random && (d.kind === "zipf" || d.kind === "pareto" || d.kind === "normal")) {
      const nranges = Math.ceil(fsize / this.#rwMinBs);
      const seed = p.seeds.randrepeat && !p.seeds.randseedSet
        ? Math.imul(jhashName(f.name), p.seeds.threadNumber) >>> 0
        : Number(BigInt.asUintN(32, this.#seeds[RAND.BLOCK]!));
      st.rank = d.kind === "zipf"
        ? new Zipf(nranges, d.theta, d.center, seed)
        : d.kind === "pareto"
        ? new Pareto(nranges, d.h, d.center, seed)
        : new Gauss(nranges, d.dev, d.center, seed);
    }
    return st;
  }

  /** A new pass over the files (a loop), the streams reseeded as fio's clear_io_state does. */
  #newPass(): void {
    const p = this.#p;
    if (p.seeds.randrepeat && !p.seeds.randseedSet) this.#seed();
    this.#files = p.files.map((f, i) => this.#fileState(f, i));
    this.#done = 0;
    this.#rwmixIssues = 0;
    this.#current = undefined;
    this.#next = 0;
    this.#passes++;
  }

  #budget(): number {
    const p = this.#p;
    return p.timeBased ? Infinity : p.loopBytes * Math.max(1, p.loops);
  }

  /** Chooses the next I/O; false when the job has issued all it should. */
  next(): boolean {
    const p = this.#p;
    if (p.numberIos > 0 && this.#issuedIos >= p.numberIos) return false;
    const budget = this.#budget();
    if (this.#issued >= budget) return false;
    let fresh = false;
    for (;;) {
      const f = this.#nextFile();
      if (f !== undefined) {
        if (this.#fill(f)) {
          this.#issuedIos++;
          this.#issued += this.length;
          return true;
        }
        f.done = true;
        this.#done++;
        if (this.#current === f) this.#current = undefined;
        continue;
      }
      // every file is done: another pass, as fio's keep_running decides
      if (fresh) return false;
      const left = budget - this.#issued;
      const more = p.timeBased ||
        (left >= this.#maxBs && (this.#passes < Math.max(1, p.loops) || p.ioSizeSet));
      if (!more) return false;
      this.#newPass();
      fresh = true;
    }
  }

  #nextFile(): FileState | undefined {
    const files = this.#files;
    const n = files.length;
    if (this.#done >= n) return undefined;
    const cur = this.#current;
    const svc = this.#p.service;
    if (cur && !cur.done) {
      if (svc.kind === "sequential") return cur;
      if (this.#serviceLeft > 0) {
        this.#serviceLeft--;
        return cur;
      }
    }
    let f: FileState | undefined;
    if (svc.kind === "random") {
      do f = files[Math.trunc(n * this.#fileRand.unit())]!; while (f.done);
    } else {
      for (let i = 0; i < n; i++) {
        const c = files[this.#next]!;
        this.#next = (this.#next + 1) % n;
        if (!c.done) {
          f = c;
          break;
        }
      }
    }
    this.#current = f;
    this.#serviceLeft = svc.nr - 1;
    return f;
  }

  /** fio's fill_io_u for file `f`: kind, offset, length; false when the file is done. */
  #fill(f: FileState): boolean {
    const p = this.#p;
    const sync = this.#syncDue();
    if (sync !== 0) {
      this.op = sync;
      this.file = f.index;
      this.offset = 0;
      this.length = 0;
      this.#lastWasSync = true;
      return true;
    }
    const ddir = this.#ddir();
    this.op = ddir;
    let seqHit = false;
    if (p.seqNr && --this.#seqNrLeft === 0) {
      seqHit = true;
      this.#seqNrLeft = p.seqNr;
    }
    const off = this.#offsetOf(f, ddir, seqHit);
    if (off < 0) return false;
    const random = this.#drawn;
    if (off - f.f.start >= f.f.ioSize || off >= f.f.size) return false;
    const len = this.#length(f, ddir, off, random);
    if (len === 0 || off + len > f.f.size) return false;
    const length = f.map && random ? this.#mark(f, ddir, off, len) : len;
    this.file = f.index;
    this.offset = off;
    this.length = length;
    f.lastStart[ddir] = off;
    f.lastPos[ddir] = off + length;
    this.#issues[ddir]!++;
    this.#lastWasSync = false;
    return true;
  }

  /** fio's should_fsync: a sync before the next write when N writes have gone. */
  #syncDue(): number {
    const p = this.#p;
    if (this.#lastWasSync || p.dirs === "read") return 0;
    const w = this.#issues[1];
    if (w === 0) return 0;
    if (p.syncEvery[0] && w % p.syncEvery[0] === 0) return OP.FSYNC;
    if (p.syncEvery[1] && w % p.syncEvery[1] === 0) return OP.FDATASYNC;
    return 0;
  }

  /** fio's get_rw_ddir: the rwmix cycles of a mixed job. */
  #ddir(): number {
    const p = this.#p;
    if (p.dirs === "read") return 0;
    if (p.dirs === "write") return 1;
    if (this.#issues[this.#rwmixDdir]! >= this.#rwmixIssues) {
      const v = this.#mix.between(1, 100);
      const ddir = v <= p.rwmix[0] ? 0 : 1;
      if (ddir !== this.#rwmixDdir) {
        const diff = p.rwmix[this.#rwmixDdir ^ 1]!;
        this.#rwmixIssues = Math.trunc((this.#issues[this.#rwmixDdir]! * diff) / 100);
      }
      this.#rwmixDdir = ddir;
    }
    return this.#rwmixDdir;
  }

  /**
   * fio's get_next_block: the offset (-1: none), `#drawn` saying whether it
   * was drawn at random (then it marks the random map).
   */
  #offsetOf(f: FileState, ddir: number, seqHit: boolean): number {
    const p = this.#p;
    this.#drawn = false;
    if (seqHit) {
      if (p.random) {
        const perc = p.percentageRandom[ddir]!;
        if (perc === 100 || this.#seqRand[ddir]!.between(1, 100) <= perc) {
          this.#drawn = true;
          return this.#randomAt(f, ddir);
        }
        // sequential here (fio sets IO_U_F_BUSY_OK): a fallback draw marks no block either
        const s = this.#seqOffset(f, ddir);
        return s !== undefined ? s : this.#randomAt(f, ddir);
      }
      const s = this.#seqOffset(f, ddir);
      return s === undefined ? -1 : s;
    }
    if (p.sequencer === "identical") {
      const last = f.lastStart[ddir]!;
      return last >= 0 ? last : f.f.start;
    }
    const s = this.#seqOffset(f, ddir);
    return s !== undefined ? s : this.#randomAt(f, ddir);
  }

  /** The offset of a random block of `f` (-1: none left). */
  #randomAt(f: FileState, ddir: number): number {
    const b = this.#randBlock(f, ddir);
    return b === undefined ? -1 : f.f.start + b * this.#p.align[ddir]!;
  }

  /** fio's get_next_seq_offset (absolute offset), undefined at the file's end. */
  #seqOffset(f: FileState, ddir: number): number | undefined {
    const p = this.#p;
    const start = f.f.start;
    if (f.lastPos[ddir]! >= f.f.ioSize + start && p.timeBased && p.files.length === 1) {
      f.lastPos[ddir] = start;
    }
    if (f.lastPos[ddir]! >= f.f.size) return undefined;
    if (f.lastPos[ddir] === start && start !== 0 && p.seqAdd < 0) {
      f.lastPos[ddir] = f.f.size > f.f.ioSize ? f.f.ioSize : f.f.size;
    }
    let pos = f.lastPos[ddir]! - start;
    if (pos !== 0 && p.seqAdd !== 0) {
      pos += p.seqAdd;
      // beyond the end (below 0 is beyond it too, as an unsigned number): wrap
      if (pos < 0 || pos >= f.f.size) {
        if (p.seqAdd > 0) pos = start;
        else pos = (f.f.size > f.f.ioSize ? f.f.ioSize : f.f.size) + p.seqAdd;
      }
    }
    return pos + start;
  }

  /** fio's last_block: how many blockalign units a random offset may take. */
  #lastBlock(f: FileState, ddir: number): number {
    const p = this.#p;
    let max = Math.min(f.f.ioSize, f.f.size);
    const minBs = p.sizes[ddir]!.min;
    const ba = p.align[ddir]!;
    if (minBs > ba) max -= minBs - ba;
    return Math.max(0, Math.floor(max / ba));
  }

  /** A random block of `f` (in units of blockalign) by the job's distribution. */
  #randBlock(f: FileState, ddir: number): number | undefined {
    const p = this.#p;
    const d = p.distribution;
    if (f.rank) return f.rank.next();
    const lastb = this.#lastBlock(f, ddir);
    if (lastb <= 0) return undefined;
    if (d.kind === "zoned" || d.kind === "zoned_abs") {
      const zones = d.zones[ddir] ?? [];
      if (zones.length === 0) return this.#uniformBlock(f, lastb);
      const v = this.#zone.between(1, 100);
      let acc = 0, prev = 0;
      for (const z of zones) {
        const end = prev + z.size;
        acc += z.access;
        if (v <= acc) {
          if (d.kind === "zoned") {
            const first = prev ? Math.floor((prev * lastb) / 100) : 0;
            const span = Math.floor((lastb * (end - prev)) / 100);
            const b = this.#uniformBlock(f, span);
            return b === undefined ? undefined : b + first;
          }
          const ba = p.align[ddir]!;
          const s0 = Math.floor(prev / ba), s1 = Math.floor(end / ba);
          if (s1 > lastb) return undefined;
          const b = this.#uniformBlock(f, s1 - s0);
          return b === undefined ? undefined : b + s0;
        }
        prev = end;
      }
      return this.#uniformBlock(f, lastb);
    }
    return this.#uniformBlock(f, lastb);
  }

  /** fio's __get_next_rand_offset: uniform in [0, lastb), then the next free block of the map. */
  #uniformBlock(f: FileState, lastb: number): number | undefined {
    const r = this.#block.next();
    const b = Math.trunc(lastb * (r / 4294967296));
    const map = f.map;
    if (!map || !isSet(map, b)) return b;
    const free = nextFree(map, b, f.mapBits);
    if (free >= 0) return free;
    if (!this.#p.timeBased) return undefined;
    // time-based: the file starts over (fio_file_reset) and draws again
    map.fill(0);
    f.lastPos = [f.f.start, f.f.start];
    f.lastStart = [-1, -1];
    return this.#uniformBlock(f, lastb);
  }

  /** Marks the blocks an I/O takes in the random map; the length it may keep. */
  #mark(f: FileState, ddir: number, off: number, len: number): number {
    const minBs = this.#p.sizes[ddir]!.min;
    const map = f.map!;
    const block = Math.floor((off - f.f.start) / minBs);
    const want = Math.ceil(len / minBs);
    let n = 0;
    while (n < want && block + n < f.mapBits && !isSet(map, block + n)) {
      setBit(map, block + n);
      n++;
    }
    if (n === 0) n = 1;
    return n * minBs < len ? n * minBs : len;
  }

  /** fio's get_next_buflen. */
  #length(f: FileState, ddir: number, off: number, random: boolean): number {
    const p = this.#p;
    const d = p.seqRand ? (random ? 1 : 0) : ddir;
    const s = p.sizes[d]!;
    const fits = (len: number) => off + len <= f.f.ioSize + f.f.start;
    if (s.min === s.max) return s.min;
    if (!fits(s.min)) return 0;
    const rng = this.#bs[d]!;
    for (;;) {
      const r = rng.next();
      let len: number;
      if (!s.split) len = s.min + Math.trunc(s.max * (r / 4294967296));
      else {
        len = 0;
        let perc = 0;
        for (const e of s.split) {
          if (!e.perc) continue;
          len = e.bs;
          perc += e.perc;
          if (Math.floor(r / perc) <= Math.floor(4294967295 / 100) && fits(len)) break;
        }
      }
      if (!p.unaligned) len -= len % s.min;
      if (len > s.max) len = s.max;
      if (fits(len)) return len;
    }
  }
}

function isSet(map: Uint32Array, b: number): boolean {
  return (map[b >>> 5]! & (1 << (b & 31))) !== 0;
}

function setBit(map: Uint32Array, b: number): void {
  map[b >>> 5]! |= 1 << (b & 31);
}

/** fio's axmap_next_free: the next clear bit after `b`, wrapping to 0; -1 when none. */
function nextFree(map: Uint32Array, b: number, bits: number): number {
  const next = b + 1 >= bits ? 0 : b + 1;
  const found = firstClear(map, next, bits);
  if (found >= 0) return found;
  return next !== 0 ? firstClear(map, 0, bits) : -1;
}

/** The first clear bit in [from, to), a word at a time; -1 when none. */
function firstClear(map: Uint32Array, from: number, to: number): number {
  let w = from >>> 5;
  // the first word: the bits below `from` count as set
  let free = ~map[w]! & (0xffffffff << (from & 31));
  const last = (to - 1) >>> 5;
  for (;;) {
    if (free !== 0) {
      const bit = (w << 5) + (31 - Math.clz32(free & -free));
      return bit < to ? bit : -1;
    }
    if (++w > last) return -1;
    free = ~map[w]!;
  }
}

const encoder = new TextEncoder();

/** fio's jhash of a file's name (the seed of its distribution). */
function jhashName(name: string): number {
  return jhash(encoder.encode(name));
}
