/**
 * Verify mode (`--verify`): every block a run writes starts with a header
 * naming where it belongs and who wrote it, and carries a checksum of the
 * whole block; every block a run reads is checked against them.
 *
 * A block of `bs` bytes is laid out as (little-endian):
 *
 * | bytes   | field                                                          |
 * | ------- | -------------------------------------------------------------- |
 * | 0–3     | checksum: CRC-32 (zlib's) of bytes 4 … bs-1                    |
 * | 4–7     | magic `0x54425631` ("TBV1")                                    |
 * | 8–11    | seed of the run (`--seed`)                                     |
 * | 12–15   | generation: how many times the run rewrote this block (0: layout) |
 * | 16–23   | offset: the block's byte offset in its file (job space for s3) |
 * | 24–31   | run id (64-bit FNV-1a of the run id)                           |
 * | 32–35   | bs                                                             |
 * | 36–39   | zero                                                           |
 * | 40 …    | payload: a pseudo-random pattern fixed by the seed             |
 *
 * The checksum covers the whole block, header included, so a flipped byte
 * anywhere is caught. Because the payload is a known pattern, a mismatch is
 * located to the byte: the block that should have been read is rebuilt and
 * compared, and the error names the first byte that differs.
 *
 * CRC-32 was chosen by measurement on 1 MiB blocks (`deno task bench:verify`
 * prints the figures): `node:zlib`'s crc32 ran at ~50 GiB/s on this machine,
 * against ~10 GiB/s for hash-wasm's xxhash64, ~2 GiB/s for its crc32c and
 * ~1.6 GiB/s for WebCrypto's SHA-256 (which is also asynchronous only, and
 * the file engines' loops are synchronous).
 *
 * @module
 */

import { XorShift32 } from "./offsets.ts";

/** zlib's CRC-32, once {@linkcode loadChecksum} has loaded it on this thread. */
let crc32: ((data: Uint8Array) => number) | undefined;

/**
 * Loads the checksum of verify mode (`node:zlib`'s crc32) on this thread,
 * once; a thread must await it before it stamps, checks or makes a
 * {@linkcode BlockVerifier}. It is not imported with this module: importing
 * any `node:` module starts Deno's Node compatibility layer in the isolate,
 * which cost each job Worker about 37 ms of CPU and 4.6 MiB, and a job that
 * does not verify has no use for it.
 *
 * @example
 * ```ts
 * import { loadChecksum, runIdHash, stampBlock } from "./verify.ts";
 * await loadChecksum();
 * stampBlock(new Uint8Array(4096), { seed: 1, generation: 0, offset: 0, runId: runIdHash("r") });
 * ```
 */
export async function loadChecksum(): Promise<void> {
  crc32 ??= (await import("node:zlib")).crc32;
}

/** The checksum of a block: of everything after its own four bytes. */
function checksum(block: Uint8Array): number {
  return checksumLoaded()(block.subarray(4));
}

function checksumLoaded(): (data: Uint8Array) => number {
  if (crc32 !== undefined) return crc32;
  throw new Error("verify: the checksum is not loaded on this thread (await loadChecksum() first)");
}

/** Bytes of the header at the start of each verified block. */
export const HEADER_SIZE = 40;
/** The smallest `bs` verify mode accepts. */
export const MIN_VERIFY_BS = 64;
/** "TBV1". */
const MAGIC = 0x54425631;

/** Header fields, by byte range, for messages. */
const FIELDS: readonly [number, string][] = [
  [4, "checksum"],
  [8, "magic"],
  [12, "seed"],
  [16, "generation"],
  [24, "offset"],
  [32, "run id"],
  [36, "bs"],
  [40, "reserved"],
];

function fieldAt(i: number): string {
  for (const [end, name] of FIELDS) if (i < end) return `header ${name}`;
  return "payload";
}

/**
 * The data read back is not what the run wrote there: the storage (or
 * something else) corrupted it, lost a write, or returned another block.
 * Names the tier, the file path or object key, the byte offset of the first
 * byte that differs (within the file, or within the object for s3), and the
 * bytes expected and found there.
 *
 * @example
 * ```ts
 * import { VerifyError } from "./verify.ts";
 * const e = new VerifyError({
 *   tier: "file",
 *   key: "/data/f.dat",
 *   offset: 4100,
 *   expected: "0x1c",
 *   found: "0x00",
 * });
 * console.assert(e.message.includes("at offset 4100: expected 0x1c, found 0x00"));
 * ```
 */
export class VerifyError extends Error {
  override name = "VerifyError";
  /** The tier kind: `file`, `memory`, `pfs`, `s3`. */
  readonly tier: string;
  /** The file path, or `s3://bucket/key`. */
  readonly key: string;
  /** Byte offset of the first byte that differs, in the file (in the object for s3). */
  readonly offset: number;
  /** What should have been there (hex bytes). */
  readonly expected: string;
  /** What was read (hex bytes). */
  readonly found: string;

  constructor(
    info: {
      tier: string;
      key: string;
      offset: number;
      expected: string;
      found: string;
      detail?: string | undefined;
    },
    options?: ErrorOptions,
  ) {
    super(
      `verify failed on ${info.tier} ${info.key} at offset ${info.offset}: ` +
        `expected ${info.expected}, found ${info.found}` +
        `${info.detail ? ` ${info.detail}` : ""}; the data read back is not what was written ` +
        "there (the storage corrupted or lost it, or something else wrote there)",
      options,
    );
    this.tier = info.tier;
    this.key = info.key;
    this.offset = info.offset;
    this.expected = info.expected;
    this.found = info.found;
  }
}

/** What a job Worker needs to stamp and check its blocks (structured-clone friendly). */
export interface VerifyPlan {
  /** The run id, as in the results. */
  readonly runId: string;
  /**
   * Per block of the job's space, how many times this run rewrote it
   * (Uint32), shared with later runs on the same files; undefined when not
   * tracked (s3: nothing reads what a run writes; every read block is at 0).
   */
  readonly generations?: SharedArrayBuffer;
  /**
   * The files were written by another run (`--filename`): the run id and
   * generation are taken from the first block whose checksum holds.
   */
  readonly adopt?: boolean;
  /**
   * Where the job says its writes are done and waits before reading them
   * back (bench/_verify_readback.ts); only when a caller acts in between.
   */
  readonly readBackGate?: SharedArrayBuffer;
}

/** 64-bit FNV-1a of a string, as two 32-bit halves [lo, hi]. */
export function runIdHash(runId: string): [number, number] {
  let lo = 0x84222325, hi = 0xcbf29ce4;
  for (let i = 0; i < runId.length; i++) {
    lo ^= runId.charCodeAt(i);
    // × 0x100000001b3 in 64 bits, on 16-bit limbs.
    const a0 = lo & 0xffff, a1 = lo >>> 16, a2 = hi & 0xffff, a3 = hi >>> 16;
    const p0 = a0 * 0x1b3;
    const p1 = a1 * 0x1b3 + (p0 >>> 16);
    const p2 = a2 * 0x1b3 + a0 * 0x100 + (p1 >>> 16);
    const p3 = a3 * 0x1b3 + a1 * 0x100 + (p2 >>> 16);
    lo = ((p1 & 0xffff) << 16 | (p0 & 0xffff)) >>> 0;
    hi = ((p3 & 0xffff) << 16 | (p2 & 0xffff)) >>> 0;
  }
  return [lo, hi];
}

/** Fills bytes HEADER_SIZE … end of `block` with the payload pattern of `seed`. */
export function fillPattern(block: Uint8Array, seed: number): void {
  new XorShift32(seed ^ 0x7e57ab1e).fillBytes(block.subarray(HEADER_SIZE));
}

/** The header fields of one block. */
export interface BlockHeader {
  readonly seed: number;
  readonly generation: number;
  readonly offset: number;
  readonly runId: readonly [number, number];
}

/**
 * Writes the header of `block` (whose payload is already the pattern) and
 * its checksum.
 *
 * @example
 * ```ts
 * import { checkBlock, fillPattern, loadChecksum, runIdHash, stampBlock } from "./verify.ts";
 * await loadChecksum();
 * const block = new Uint8Array(4096);
 * fillPattern(block, 1);
 * const h = { seed: 1, generation: 0, offset: 8192, runId: runIdHash("r1") } as const;
 * stampBlock(block, h);
 * console.assert(checkBlock(block, h) === undefined);
 * ```
 */
export function stampBlock(block: Uint8Array, h: BlockHeader): void {
  const v = new DataView(block.buffer, block.byteOffset, HEADER_SIZE);
  v.setUint32(4, MAGIC, true);
  v.setUint32(8, h.seed >>> 0, true);
  v.setUint32(12, h.generation >>> 0, true);
  v.setUint32(16, h.offset % 4294967296, true);
  v.setUint32(20, Math.floor(h.offset / 4294967296), true);
  v.setUint32(24, h.runId[0], true);
  v.setUint32(28, h.runId[1], true);
  v.setUint32(32, block.byteLength >>> 0, true);
  v.setUint32(36, 0, true);
  v.setUint32(0, checksum(block), true);
}

/** Where a read block first differs from the block that should be there. */
export interface BlockMismatch {
  /** Index of the first byte that differs, in the block. */
  readonly at: number;
  /** Up to 8 bytes from there, as hex. */
  readonly expected: string;
  readonly found: string;
  /** `payload` or `header <field>`. */
  readonly field: string;
  /** How many bytes of the block differ. */
  readonly differing: number;
}

function hex(b: Uint8Array, at: number): string {
  const end = Math.min(b.byteLength, at + 8);
  let s = "0x";
  for (let i = at; i < end; i++) s += b[i]!.toString(16).padStart(2, "0");
  return s;
}

/**
 * Checks one block read back: its checksum and its header against `h`.
 * Returns undefined when it holds, else where it first differs from the
 * block that should be there (rebuilt from `h` and the pattern).
 */
export function checkBlock(block: Uint8Array, h: BlockHeader): BlockMismatch | undefined {
  const v = new DataView(block.buffer, block.byteOffset, HEADER_SIZE);
  const intact = v.getUint32(0, true) === checksum(block);
  if (
    intact &&
    v.getUint32(4, true) === MAGIC &&
    v.getUint32(8, true) === h.seed >>> 0 &&
    v.getUint32(12, true) === h.generation >>> 0 &&
    v.getUint32(16, true) === h.offset % 4294967296 &&
    v.getUint32(20, true) === Math.floor(h.offset / 4294967296) &&
    v.getUint32(24, true) === h.runId[0] &&
    v.getUint32(28, true) === h.runId[1] &&
    v.getUint32(32, true) === block.byteLength >>> 0 &&
    v.getUint32(36, true) === 0
  ) return undefined;
  const want = new Uint8Array(block.byteLength);
  fillPattern(want, h.seed);
  stampBlock(want, h);
  // A block whose own checksum holds is whole but not the one expected (an
  // older generation, another offset or run): name the field, not the checksum.
  let at = -1, differing = 0;
  for (let i = intact ? 4 : 0; i < block.byteLength; i++) {
    if (block[i] !== want[i]) {
      if (at < 0) at = i;
      differing++;
    }
  }
  // The checksum failed yet every byte matches the rebuilt block: cannot be
  // (the rebuilt block's checksum is right), but report it plainly if so.
  if (at < 0) at = 0;
  return {
    at,
    expected: hex(want, at),
    found: hex(block, at),
    field: fieldAt(at),
    differing,
  };
}

function headerOf(block: Uint8Array): BlockHeader & { ok: boolean } {
  const v = new DataView(block.buffer, block.byteOffset, HEADER_SIZE);
  return {
    ok: v.getUint32(0, true) === checksum(block) && v.getUint32(4, true) === MAGIC,
    seed: v.getUint32(8, true),
    generation: v.getUint32(12, true),
    offset: v.getUint32(16, true) + v.getUint32(20, true) * 4294967296,
    runId: [v.getUint32(24, true), v.getUint32(28, true)],
  };
}

/**
 * One job's verify state, inside its Worker: the pattern, the run's header
 * fields and the blocks' generations. Engines call {@linkcode prepareWrite}
 * on a block before writing it and {@linkcode checkRead} after reading one.
 *
 * @example
 * ```ts
 * import { BlockVerifier, loadChecksum } from "./verify.ts";
 * await loadChecksum();
 * const v = new BlockVerifier("memory", 4096, 1, { runId: "r" });
 * const block = new Uint8Array(4096);
 * v.fillPattern(block);
 * v.prepareWrite(block, 8192, 8192);
 * v.checkRead(block, "/dev/shm/x", 8192, 8192); // throws VerifyError on a mismatch
 * ```
 */
export class BlockVerifier {
  readonly #tier: string;
  readonly #bs: number;
  readonly #seed: number;
  #runId: [number, number] | undefined;
  readonly #gens: Uint32Array | undefined;
  readonly #adopt: boolean;
  #pattern: Uint8Array | undefined;

  constructor(tier: string, bs: number, seed: number, plan: VerifyPlan) {
    if (bs < MIN_VERIFY_BS) {
      throw new RangeError(`bs ${bs} is below ${MIN_VERIFY_BS}, the smallest verify accepts`);
    }
    checksumLoaded(); // at the job's start, not at its first I/O
    this.#tier = tier;
    this.#bs = bs;
    this.#seed = seed >>> 0;
    this.#adopt = plan.adopt === true;
    this.#runId = this.#adopt ? undefined : runIdHash(plan.runId);
    this.#gens = plan.generations ? new Uint32Array(plan.generations) : undefined;
  }

  /** Fills every `bs` block of `buf` with the payload pattern. */
  fillPattern(buf: Uint8Array): void {
    const bs = this.#bs;
    for (let at = 0; at + bs <= buf.byteLength; at += bs) {
      fillPattern(buf.subarray(at, at + bs), this.#seed);
    }
  }

  /**
   * Stamps `block` (payload already the pattern) to be written at `offset` of
   * its file; `jobOffset` (its offset in the job's space) names its
   * generation, which this write raises when tracked.
   */
  prepareWrite(block: Uint8Array, offset: number, jobOffset: number): void {
    const gens = this.#gens;
    let generation = 0;
    if (gens !== undefined) {
      const b = Math.floor(jobOffset / this.#bs);
      generation = gens[b] = (gens[b]! + 1) >>> 0;
    }
    stampBlock(block, { seed: this.#seed, generation, offset, runId: this.#runId ?? [0, 0] });
  }

  /**
   * Stamps every `bs` block of `buf` (each already the pattern) as laid out
   * at `offset` onwards, generation 0.
   */
  prepareLayout(buf: Uint8Array, offset: number): void {
    const bs = this.#bs;
    const runId = this.#runId ?? [0, 0];
    for (let at = 0; at + bs <= buf.byteLength; at += bs) {
      stampBlock(buf.subarray(at, at + bs), {
        seed: this.#seed,
        generation: 0,
        offset: offset + at,
        runId,
      });
    }
  }

  /**
   * The bytes of an S3 object whose blocks are stamped as laid out at
   * `offset` onwards (generation 0): a function of the byte range wanted, so
   * a multipart upload builds one part at a time, whatever the part size.
   */
  stamped(offset: number): (from: number, to: number) => Uint8Array {
    const bs = this.#bs;
    const runId = this.#runId ?? [0, 0];
    if (this.#pattern === undefined) fillPattern(this.#pattern = new Uint8Array(bs), this.#seed);
    const pattern = this.#pattern;
    return (from, to) => {
      const out = new Uint8Array(to - from);
      if (from % bs === 0 && out.byteLength % bs === 0) {
        for (let at = 0; at < out.byteLength; at += bs) out.set(pattern, at);
        this.prepareLayout(out, offset + from);
        return out;
      }
      const block = new Uint8Array(bs);
      for (let b = Math.floor(from / bs) * bs; b < to; b += bs) {
        block.set(pattern);
        stampBlock(block, { seed: this.#seed, generation: 0, offset: offset + b, runId });
        const s = Math.max(from, b), e = Math.min(to, b + bs);
        out.set(block.subarray(s - b, e - b), s - from);
      }
      return out;
    };
  }

  /**
   * Checks `block`, read from `key` at `offset` of its file (the offset its
   * header names; for s3 the offset in the job's space); `jobOffset` (its
   * offset in the job's space) names its generation; `reportOffset` is where
   * the block starts for the message (for s3, the offset within the object).
   *
   * @throws {VerifyError} naming the first byte that differs.
   */
  checkRead(
    block: Uint8Array,
    key: string,
    offset: number,
    jobOffset: number,
    reportOffset: number = offset,
  ): void {
    let generation = 0;
    let runId = this.#runId;
    if (this.#adopt) {
      // Another run wrote the file: its generations are not known here, and its
      // run id is taken on trust from the first block whose checksum holds.
      const found = headerOf(block);
      generation = found.generation;
      if (runId === undefined) {
        runId = [found.runId[0], found.runId[1]];
        if (found.ok) this.#runId = runId;
      }
    } else if (this.#gens !== undefined) {
      generation = this.#gens[Math.floor(jobOffset / this.#bs)]!;
    }
    const m = checkBlock(block, {
      seed: this.#seed,
      generation,
      offset,
      runId: runId ?? [0, 0],
    });
    if (m === undefined) return;
    throw new VerifyError({
      tier: this.#tier,
      key,
      offset: reportOffset + m.at,
      expected: m.expected,
      found: m.found,
      detail: `(${m.field} of the ${this.#bs}-byte block at ${reportOffset}; ` +
        `${m.differing} byte${m.differing === 1 ? "" : "s"} differ)`,
    });
  }
}

/** A job target as the tiers name it (bench/_protocol.ts JobTarget). */
interface Target {
  readonly paths: readonly string[];
  readonly regionOffset: number;
  readonly layout: "prefill" | "fallocate" | "none";
  readonly existing?: boolean;
  readonly s3?: unknown;
}

/** What a laid-out file holds: its blocks' generations, and the bs and seed it was stamped with. */
interface Kept {
  readonly generations: SharedArrayBuffer;
  readonly bs: number;
  readonly seed: number;
}

/** Per tier, per job target: what verify knows of its files, kept across the runs of a session. */
const kept = new WeakMap<object, Map<string, Kept>>();

function keyOf(t: Target): string {
  return `${t.paths.join("|")}@${t.regionOffset}`;
}

/**
 * The verify plan of each job of a run on `tier` (whose `runId` goes into
 * every header), and the targets to run on. A read run reuses files an
 * earlier run laid out; when those were not laid out with verify headers of
 * this bs and seed (or a run without verify has rewritten blocks since), the
 * target is laid out again so there is something to check. Generations are
 * kept across the runs of a session. Without --verify, returns no plans and
 * forgets what verify knew of files the run rewrites.
 *
 * @example
 * ```ts
 * import { verifyPlans } from "./verify.ts";
 * const tier = { runId: "r1" };
 * import type { JobTarget } from "./job_protocol.ts";
 * const t: JobTarget = { paths: ["/x/read.dat"], regionOffset: 0, layout: "none" };
 * const { targets, plans } = verifyPlans(tier, [t], { size: 8192, bs: 4096, seed: 1, verify: true, rw: "read" });
 * console.assert(targets[0]!.layout === "prefill" && plans![0]!.runId === "r1");
 * ```
 */
export function verifyPlans<T extends Target>(
  tier: object,
  targets: readonly T[],
  job: {
    readonly size: number;
    readonly bs: number;
    readonly seed: number;
    readonly rw: string;
    readonly verify?: boolean;
  },
): { targets: readonly T[]; plans: VerifyPlan[] | undefined } {
  let maps = kept.get(tier);
  if (maps === undefined) kept.set(tier, maps = new Map());
  if (!job.verify) {
    // Blocks rewritten without headers: a later verify read must lay the file out again.
    if (job.rw !== "read" && job.rw !== "randread") {
      for (const t of targets) maps.delete(keyOf(t));
    }
    return { targets, plans: undefined };
  }
  const runId = String((tier as { runId?: unknown }).runId ?? "");
  const blocks = Math.ceil(job.size / job.bs);
  const plans: VerifyPlan[] = [];
  const out = targets.map((t) => {
    if (t.s3 !== undefined || t.existing === true) {
      plans.push({ runId, ...(t.existing === true ? { adopt: true } : {}) });
      return t;
    }
    const key = keyOf(t);
    const k = maps.get(key);
    if (
      t.layout === "none" && k !== undefined && k.bs === job.bs && k.seed === job.seed &&
      k.generations.byteLength === blocks * 4
    ) {
      plans.push({ runId, generations: k.generations });
      return t;
    }
    const generations = new SharedArrayBuffer(blocks * 4);
    maps.set(key, { generations, bs: job.bs, seed: job.seed });
    plans.push({ runId, generations });
    return t.layout === "none" ? { ...t, layout: "prefill" as const } : t;
  });
  return { targets: out, plans };
}

/**
 * A job's verify state under --verify (its plan carries a {@linkcode VerifyPlan}), else undefined.
 *
 * @example
 * ```ts
 * import { verifierOf } from "./verify.ts";
 * console.assert(verifierOf({ tier: "file", bs: 4096, seed: 1 }) === undefined);
 * ```
 */
export function verifierOf(
  plan: {
    readonly tier: string;
    readonly bs: number;
    readonly seed: number;
    readonly verify?: VerifyPlan;
  },
): BlockVerifier | undefined {
  return plan.verify && new BlockVerifier(plan.tier, plan.bs, plan.seed, plan.verify);
}
