/**
 * The executor of one rank's program (runs inside that rank's Worker).
 *
 * Every stream of the program runs as its own async loop; an op starts when
 * the op before it on its stream and every op in its `after` list are done.
 * Storage ops go through one channel per stream and path (libaio or
 * io_uring for file paths, the S3 SDK for s3), think times sleep on the blocking pool
 * (sub-millisecond precise, unlike timers), barriers and per-path limits go
 * through {@linkcode NodeSync}. The clock is CLOCK_MONOTONIC, the same in
 * every Worker, so the main thread can line ranks up.
 *
 * What is kept per op is two timestamps (the program is bounded by the
 * model's shape, not by the bytes moved); the rank sends back per-phase
 * aggregates and the spans of one iteration for the timeline.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { monoNow } from "../core/libc.ts";
import { scheduleMet, StreamSchedule } from "../core/rate.ts";
import { settleAll } from "../core/settle.ts";
import { AioChannel } from "../engines/libaio_stream.ts";
import { syncFile } from "../engines/file_sync.ts";
import { UringChannel } from "../engines/io_uring_stream.ts";
import type { S3Channel, S3PathTarget } from "../engines/s3_stream.ts";
import type { StreamVerifier } from "../engines/stream_verify.ts";
import { NodeLocks } from "./_node_lock.ts";
import type { NodeSync } from "./_sync.ts";
import type {
  BackgroundSchedule,
  RankPhase,
  RankReport,
  TimelineSpan,
} from "../schema/workload.ts";
import type { Op, PathPolicy, RankProgram } from "../workloads/ops.ts";

/** The engines of a rank's streams on file-backed paths. */
export const STREAM_ENGINES = ["libaio", "io_uring"] as const;
/** One of {@linkcode STREAM_ENGINES}. */
export type StreamEngine = typeof STREAM_ENGINES[number];

/** How a rank reaches one path. */
export interface PathRuntime {
  readonly policy: PathPolicy;
  /** Index for the node-wide limits. */
  readonly index: number;
  /** file-backed tiers: the scratch directory. */
  readonly dir?: string;
  /** Open files with O_DIRECT. */
  readonly direct: boolean;
  /** file-backed tiers: the streams' engine (default libaio). */
  readonly engine?: StreamEngine;
  readonly s3?: S3PathTarget;
  /** How long one request may take (--timeout). */
  readonly timeoutMs?: number;
}

const usleep = Deno.dlopen("libc.so.6", {
  usleep: { parameters: ["u32"], result: "i32", nonblocking: true },
}).symbols.usleep;

/** Sleeps `ms` on the blocking pool: precise to a few tens of µs, not the timers' 1 ms. */
export async function thinkMs(ms: number): Promise<void> {
  if (ms <= 0) return;
  await usleep(Math.min(0xffffffff, Math.round(ms * 1000)));
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
  settled: boolean;
}

function deferred(): Deferred {
  let resolve!: () => void, reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject, settled: false };
}

/** Makes `dir` in its existing parent; one that is there already is kept. */
async function mkdirOnce(dir: string): Promise<void> {
  try {
    await Deno.mkdir(dir);
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
}

/** Runs one rank's program. */
export class RankExecutor {
  readonly program: RankProgram;
  readonly #paths: Map<string, PathRuntime>;
  readonly #sync: NodeSync;
  readonly #timelineIteration: number;
  readonly #channels = new Map<string, AioChannel | UringChannel | S3Channel>();
  /** --background-rate: bytes/s of this rank's background stream to each path. */
  readonly #backgroundRate: number | undefined;
  /** The open-loop schedule of the background ops on each path, by path name. */
  readonly #schedules = new Map<string, StreamSchedule>();
  /** The node-wide locks of `lock`/`unlock` ops, opened on first use. */
  #locks: NodeLocks | undefined;
  /** Where the run's lock files are on this node. */
  readonly #lockDir: string | undefined;
  /** --verify: what this rank writes and reads back, checked byte for byte. */
  readonly #verifier: StreamVerifier | undefined;
  /**
   * The S3 channel's class, loaded by {@linkcode RankExecutor.layout} and
   * {@linkcode RankExecutor.run} only when a path is on S3: its module
   * brings the AWS SDK, which a rank on files alone has no use for (loaded
   * in every rank Worker it cost each about 10 MiB and tens of ms of CPU).
   */
  #s3Channel: typeof S3Channel | undefined;

  /**
   * The executor of `program`; with `backgroundRate` (bytes/s), the ops
   * marked `background` move their bytes on an open-loop schedule at that
   * rate, one per path (core/rate.ts {@linkcode StreamSchedule}).
   */
  constructor(
    program: RankProgram,
    paths: readonly PathRuntime[],
    sync: NodeSync,
    timelineIteration: number,
    backgroundRate?: number,
    lockDir?: string,
    verifier?: StreamVerifier,
  ) {
    this.program = program;
    this.#paths = new Map(paths.map((p) => [p.policy.name, p]));
    this.#sync = sync;
    this.#timelineIteration = timelineIteration;
    this.#backgroundRate = backgroundRate;
    this.#lockDir = lockDir;
    this.#verifier = verifier;
  }

  #path(name: string | undefined): PathRuntime {
    const p = name === undefined ? undefined : this.#paths.get(name);
    if (!p) throw new TypeError(`op names path "${name}", which the run does not have`);
    return p;
  }

  /** Ends a channel's transfer between requests once the run is aborted. */
  readonly #stopIfAborted = (): void => this.#sync.throwIfAborted();

  #channel(key: string, path: PathRuntime, direct: boolean): AioChannel | UringChannel | S3Channel {
    let ch = this.#channels.get(key);
    if (!ch) {
      const { iodepth, bs } = path.policy;
      const options = {
        ...(path.timeoutMs === undefined ? {} : { timeoutMs: path.timeoutMs }),
        ...(this.#verifier ? { verifier: this.#verifier } : {}),
      };
      ch = path.s3
        ? new (this.#s3Channel!)(path.s3, iodepth, bs, undefined, options)
        : path.engine === "io_uring"
        ? new UringChannel(iodepth, bs, direct, this.#stopIfAborted, options)
        : new AioChannel(iodepth, bs, direct, this.#stopIfAborted, options);
      this.#channels.set(key, ch);
    }
    return ch;
  }

  /** Loads the S3 channel's module once, when a path of the run is on S3. */
  async #loadS3(): Promise<void> {
    if (this.#s3Channel || ![...this.#paths.values()].some((p) => p.s3)) return;
    this.#s3Channel = (await import("../engines/s3_stream.ts")).S3Channel;
  }

  /** Directories made under each rank directory, by full path. */
  readonly #dirs = new Set<string>();

  /**
   * Makes `sub` (`global_step3/…`) under the rank directory one level at a
   * time, never the rank directory itself: a rank stopped while its scratch
   * is being removed must fail here, not make the scratch again.
   */
  async #makeDirs(rankDir: string, sub: string): Promise<void> {
    let dir = rankDir;
    for (const part of sub.split("/")) {
      dir = join(dir, part);
      if (this.#dirs.has(dir)) continue;
      await mkdirOnce(dir);
      this.#dirs.add(dir);
    }
  }

  async #transfer(
    key: string,
    path: PathRuntime,
    object: string,
    write: boolean,
    bytes: number,
    at = 0,
    buffered = false,
    schedule?: StreamSchedule,
    fsync = false,
  ) {
    // an op marked `direct: false` gets its own buffered channel on an O_DIRECT path
    const direct = path.direct && !buffered;
    const ch = this.#channel(direct === path.direct ? key : `${key}|buffered`, path, direct);
    if (path.s3 !== undefined) {
      const s3 = ch as S3Channel;
      if (schedule) throw new TypeError("a background rate on an s3 path is not available");
      await s3.transfer(this.program.rank, object, write, bytes, at);
      return;
    }
    const local = ch as AioChannel | UringChannel;
    const rankDir = join(path.dir!, `r${this.program.rank}`);
    const file = join(rankDir, object);
    if (write && object.includes("/")) await this.#makeDirs(rankDir, dirname(object));
    // one transfer on one context; a paced (background) transfer is never sliced
    const slices = schedule ? [] : sliceOf(bytes, path.policy.threads ?? 1);
    if (slices.length <= 1) {
      await local.transfer(file, write, bytes, at, schedule);
      if (fsync) await syncFile(file);
      return;
    }
    // intra_op_parallelism: contiguous slices at once, each on its own context
    const chKey = direct === path.direct ? key : `${key}|buffered`;
    await settleAll(slices.map(([off, len], t) => {
      const c = t === 0
        ? local
        : this.#channel(`${chKey}#${t}`, path, direct) as AioChannel | UringChannel;
      return c.transfer(file, write, len, at + off);
    }));
    if (fsync) await syncFile(file);
  }

  /**
   * Under --background-rate, the schedule a background op's requests follow,
   * started at `readyAt` (when the ops it waits for finished) if its path's
   * background stream was idle; undefined for every other op.
   */
  #paced(op: Op, readyAt: number): StreamSchedule | undefined {
    const rate = this.#backgroundRate;
    if (rate === undefined || !op.background || op.path === undefined) return undefined;
    let schedule = this.#schedules.get(op.path);
    if (!schedule) this.#schedules.set(op.path, schedule = new StreamSchedule(rate));
    schedule.begin(readyAt);
    return schedule;
  }

  /** How each path's background stream kept to --background-rate. */
  #background(): BackgroundSchedule[] {
    return [...this.#schedules.entries()].map(([name, schedule]) => {
      const intervalMs = (this.#path(name).policy.bs / schedule.bytesPerS) * 1000;
      const summary = schedule.summary();
      return {
        rank: this.program.rank,
        path: name,
        ...summary,
        interval_ms: Math.round(intervalMs * 1000) / 1000,
        met: scheduleMet(summary.end_lag_ms, intervalMs),
      };
    });
  }

  /** Makes the rank's directories and writes the objects the program starts from (unmeasured). */
  async layout(): Promise<void> {
    await this.#loadS3();
    for (const p of this.#paths.values()) {
      // the run made p.dir; a rank stopped while it is removed must fail, not make it again
      if (p.dir !== undefined) await mkdirOnce(join(p.dir, `r${this.program.rank}`));
    }
    // Under --background-rate the background streams' channels are set up now (buffers filled,
    // kernel queue made), so their first op's schedule does not count the setup as lag.
    if (this.#backgroundRate !== undefined) {
      for (const op of this.program.ops) {
        if (!op.background || op.path === undefined) continue;
        if (op.kind !== "read" && op.kind !== "write") continue;
        const path = this.#path(op.path);
        const direct = path.direct && op.direct !== false;
        const key = `${op.stream}|${op.path}`;
        this.#channel(direct === path.direct ? key : `${key}|buffered`, path, direct);
      }
    }
    for (const o of this.program.initial) {
      // Ctrl-C, a failed rank or a lost node: stop between objects, not after the whole layout.
      this.#sync.throwIfAborted();
      await this.#transfer(`layout|${o.path}`, this.#path(o.path), o.object, true, o.bytes);
    }
  }

  /** Runs every op; resolves with the rank's report, rejects with the first failure. */
  async run(): Promise<RankReport> {
    await this.#loadS3();
    const ops = this.program.ops;
    const n = ops.length;
    const start = new Float64Array(n);
    const ioStart = new Float64Array(n);
    const end = new Float64Array(n);
    const done = Array.from({ length: n }, deferred);
    const streams = new Map<string, Op[]>();
    for (const op of ops) {
      let s = streams.get(op.stream);
      if (!s) streams.set(op.stream, s = []);
      s.push(op);
    }
    // At the first failure: every op still waited for fails too, the other ranks stop, and
    // the locks this rank holds go, so no stream of any rank waits on them for ever.
    const fail = (e: unknown) => {
      for (const d of done) if (!d.settled) d.reject(e);
      this.#locks?.releaseAll();
      this.#sync.abort();
    };
    const started = monoNow();
    const loop = async (list: Op[]) => {
      for (const op of list) {
        this.#sync.throwIfAborted();
        if (op.after.length === 1) await done[op.after[0]!]!.promise;
        else if (op.after.length > 1) await Promise.all(op.after.map((a) => done[a]!.promise));
        start[op.id] = monoNow();
        ioStart[op.id] = start[op.id]!;
        // When what the op waits for was done: a paced stream that was idle starts there.
        let readyAt = op.after.length === 0 ? start[op.id]! : 0;
        for (const a of op.after) readyAt = Math.max(readyAt, end[a]!);
        await this.#exec(op, ioStart, readyAt);
        end[op.id] = monoNow();
        done[op.id]!.settled = true;
        done[op.id]!.resolve();
      }
    };
    try {
      // Every stream ends before the channels close: a stream still in a transfer would be
      // waiting on the blocking pool for a kernel queue freed beneath it (core/settle.ts).
      await settleAll([...streams.values()].map(loop), fail);
    } finally {
      for (const ch of this.#channels.values()) ch.close();
      this.#channels.clear();
      this.#locks?.close();
      this.#locks = undefined;
    }
    return {
      rank: this.program.rank,
      phases: this.#aggregate(start, ioStart, end),
      timeline: this.#timeline(start, end),
      started,
      ...(this.#backgroundRate === undefined ? {} : { background: this.#background() }),
      ...(this.#verifier ? { verified_bytes: this.#verifier.checkedBytes } : {}),
    };
  }

  async #exec(op: Op, ioStart: Float64Array, readyAt: number): Promise<void> {
    switch (op.kind) {
      case "compute":
        await thinkMs(op.ms ?? 0);
        return;
      case "hit":
        return;
      case "lock":
        if (this.#lockDir === undefined) {
          throw new TypeError("a lock op in a run without a lock folder");
        }
        await (this.#locks ??= new NodeLocks(this.#lockDir)).acquire(op.lock!);
        this.#sync.throwIfAborted();
        return;
      case "unlock":
        this.#locks!.release(op.lock!);
        return;
      case "barrier":
        await this.#sync.barrier();
        if (this.program.rank === 0) this.#sync.iteration = op.iteration;
        return;
      case "read":
      case "write": {
        const path = this.#path(op.path);
        const write = op.kind === "write";
        const paced = this.#paced(op, readyAt);
        const limit = write ? path.policy.writers : path.policy.readers;
        if (limit !== undefined) await this.#sync.enter(path.index, write, limit);
        else this.#sync.enterUnlimited(path.index, write);
        try {
          ioStart[op.id] = monoNow();
          await this.#transfer(
            `${op.stream}|${op.path}`,
            path,
            op.object!,
            write,
            op.bytes,
            op.offset,
            op.direct === false,
            paced,
            write && op.fsync === true,
          );
        } finally {
          this.#sync.leave(path.index, write);
        }
        this.#sync.count(this.program.rank, write, op.bytes, path.index);
        return;
      }
    }
  }

  #aggregate(start: Float64Array, ioStart: Float64Array, end: Float64Array): RankPhase[] {
    const phases = new Map<string, RankPhase>();
    const prevEnd = new Map<string, number>();
    for (const op of this.program.ops) {
      const key = `${op.iteration}|${op.phase}`;
      let ph = phases.get(key);
      if (!ph) {
        ph = {
          iteration: op.iteration,
          phase: op.phase,
          start: Infinity,
          end: -Infinity,
          background: true,
          stall_ms: 0,
          barrier_ms: 0,
          io: {},
        };
        phases.set(key, ph);
      }
      const s = start[op.id]!, e = end[op.id]!;
      const before = prevEnd.get(op.stream);
      prevEnd.set(op.stream, e);
      ph.start = Math.min(ph.start, op.kind === "barrier" ? e : s);
      if (!op.background) {
        ph.background = false;
        ph.end = Math.max(ph.end, e);
      }
      if (op.kind === "barrier") {
        ph.barrier_ms += e - (before ?? s);
      } else if (op.kind === "compute" && op.stream === "compute" && before !== undefined) {
        ph.stall_ms += Math.max(0, s - before);
      } else if ((op.kind === "lock" || op.kind === "unlock") && op.stream === "compute") {
        // waiting for a lock, or for a transfer while holding it, is waiting for I/O
        ph.stall_ms += Math.max(0, e - (before ?? s));
      }
      if (op.path !== undefined) {
        const k = `${op.path}:${op.kind}`;
        const io = ph.io[k] ??= { bytes: 0, ops: 0, busy_ms: 0, slot_wait_ms: 0 };
        io.bytes += op.bytes;
        io.ops++;
        io.busy_ms += e - ioStart[op.id]!;
        io.slot_wait_ms += ioStart[op.id]! - s;
      }
    }
    for (const ph of phases.values()) {
      if (ph.background) {
        // a background phase spans its own ops
        for (const op of this.program.ops) {
          if (op.iteration === ph.iteration && op.phase === ph.phase) {
            ph.end = Math.max(ph.end, end[op.id]!);
          }
        }
      }
    }
    return [...phases.values()];
  }

  #timeline(start: Float64Array, end: Float64Array): TimelineSpan[] {
    const out: TimelineSpan[] = [];
    for (const op of this.program.ops) {
      if (op.iteration !== this.#timelineIteration || op.kind === "barrier") continue;
      out.push([op.stream, op.kind, op.label, op.bytes, start[op.id]!, end[op.id]!]);
    }
    return out;
  }
}

/**
 * `[offset, length]` of each of `threads` contiguous slices of `bytes`, each
 * a whole number of 4 KiB blocks (the last takes what is left); fewer when
 * the object is too small to give every slice a block.
 *
 * @example
 * ```ts
 * import { sliceOf } from "./_rank.ts";
 * console.assert(JSON.stringify(sliceOf(3 * 8192, 2)) === "[[0,12288],[12288,12288]]");
 * ```
 */
export function sliceOf(bytes: number, threads: number): [number, number][] {
  const per = Math.ceil(bytes / threads / 4096) * 4096;
  const out: [number, number][] = [];
  for (let at = 0; at < bytes; at += per) out.push([at, Math.min(per, bytes - at)]);
  return out.length > 0 ? out : [[0, bytes]];
}
