/**
 * One asynchronous I/O stream of a rank through io_uring, as
 * `AioChannel` (libaio_stream.ts) does it through libaio (and as DataStates-LLM's
 * io_uring handler moves a checkpoint): the object is cut into requests, up
 * to `iodepth` of them are in flight in one ring (engines/_uring.ts), and the
 * stream waits for completions without blocking the rank's other streams.
 *
 * Submission and wait are io_uring_enter calls declared `nonblocking`, so
 * they run on threads of Deno's blocking pool and the Worker's event loop
 * stays free: the kernel may issue a request inside the submission and
 * return only when it is done (O_DIRECT on ceph-fuse), and made on the
 * rank's thread that held up the rank's other path for as long.
 * Completions are read from the shared CQ ring on the rank's thread, all
 * that are ready at once; each carries its own result (bytes or -errno), so
 * every failed request keeps its errno.
 *
 * @module
 */

import { IoError, RequestTimeoutError } from "../core/errors.ts";
import type { StreamSchedule } from "../core/rate.ts";
import {
  type AlignedBuffer,
  allocAligned,
  errnoName,
  freeAligned,
  monoNow,
  readSmallFile,
  strerror,
} from "../core/libc.ts";
import { ETIME, OP, Uring } from "./_uring.ts";
import { fillRandom } from "./_file.ts";
import { refusalMessage } from "./io_uring.ts";
import {
  checkOffset,
  finishShortWrite,
  orTimeout,
  sleepUntil,
  type StreamOptions,
  withObjectFile,
} from "./_stream.ts";

const EIO = 5;
const EPERM = 1;
const EINTR = 4;
const EAGAIN = 11;
const EBUSY = 16;
const ENOSYS = 38;
const ALIGNMENT = 4096;
/** How long the wait that learns a lost errno lasts: 1 ms. */
const ERRNO_WAIT_NS = 1_000_000;

/**
 * An io_uring ring with its buffers, for one stream of one rank: each
 * {@linkcode UringChannel.transfer} moves one object, keeping up to
 * `iodepth` requests of at most `bs` bytes in flight. The same interface as
 * `AioChannel`. One transfer at a time per channel.
 *
 * @example
 * ```ts ignore
 * const ch = new UringChannel(8, 1 << 20, true);
 * try { await ch.transfer("/mnt/nvme/r0/params", true, 64 << 20); } finally { ch.close(); }
 * ```
 */
export class UringChannel {
  /** Requests in flight at most. */
  readonly iodepth: number;
  /** The largest request, in bytes. */
  readonly bs: number;
  /** Whether files are opened with O_DIRECT. */
  readonly direct: boolean;
  readonly #ring: Uring;
  /** `iodepth` slots of `bs` bytes, 4 KiB aligned, random bytes. */
  readonly #buffers: AlignedBuffer;
  /** Called between requests; what it throws ends the transfer (see the constructor). */
  readonly #stop: (() => void) | undefined;
  readonly #options: StreamOptions;
  #closed = false;
  /** A request timed out: the ring still holds it, so it and its buffers are left. */
  #hung = false;

  /**
   * Sets the ring and its buffers up. Throws an Error naming
   * kernel.io_uring_disabled when the kernel refuses io_uring, else
   * {@linkcode IoError} for a failed setup.
   *
   * `stop`, when given, is called before each batch of requests; what it
   * throws ends the transfer there, with the requests in flight left to
   * {@linkcode close}, which waits for them. A rank passes one that throws
   * once its run is aborted, so Ctrl-C or a lost rank does not wait for a
   * large object to finish.
   *
   * `options` bound each request by --timeout and, under --verify, make what
   * is written a pattern that each read is checked against.
   */
  constructor(
    iodepth: number,
    bs: number,
    direct: boolean,
    stop?: () => void,
    options: StreamOptions = {},
  ) {
    this.iodepth = iodepth;
    this.#stop = stop;
    this.#options = options;
    this.bs = bs;
    this.direct = direct;
    this.#ring = Uring.open({ entries: iodepth }, (syscall, errno) => {
      if (syscall === "io_uring_setup" && (errno === EPERM || errno === ENOSYS)) {
        throw new Error(
          refusalMessage(errno, readSmallFile("/proc/sys/kernel/io_uring_disabled")?.trim()),
        );
      }
      throw new IoError({ syscall, errno, code: errnoName(errno), path: "" });
    });
    this.#buffers = allocAligned(iodepth * bs, ALIGNMENT);
    fillRandom(this.#buffers.bytes, 0x5eed);
  }

  /**
   * Reads or writes `bytes` of the file at `path` from offset `at` (default
   * 0; a multiple of 4 KiB with O_DIRECT), creating it for a write; with
   * `schedule` (a workload's background stream under --background-rate),
   * each request at its intended start, and the transfer ending no earlier
   * than its bytes at the rate (a kernel
   * without IORING_FEAT_EXT_ARG cannot time a wait out: there a request due
   * while others are in flight waits for the next completion). Throws
   * {@linkcode IoError} naming the call, errno and offset.
   */
  async transfer(
    path: string,
    write: boolean,
    bytes: number,
    at = 0,
    schedule?: StreamSchedule,
  ): Promise<void> {
    if (this.#closed) throw new TypeError("channel closed");
    checkOffset(at, this.direct);
    await withObjectFile(
      path,
      write,
      this.direct,
      (fd) => this.#run(fd, path, write, bytes, at, schedule),
    );
  }

  async #run(
    fd: number,
    path: string,
    write: boolean,
    bytes: number,
    at: number,
    schedule: StreamSchedule | undefined,
  ): Promise<void> {
    // Requests of bs, the last one shorter, as DeepSpeed's aio handle cuts a transfer
    // (ceil(bytes / block_size) blocks in csrc/aio/common/deepspeed_aio_common.cpp): a
    // scaled object keeps the request size the profile measured and has fewer in flight.
    const req = this.bs;
    const total = Math.ceil(bytes / req);
    const free: number[] = [];
    for (let s = this.iodepth - 1; s >= 0; s--) free.push(s);
    const lengths = new Array<number>(this.iodepth).fill(0);
    const offsets = new Array<number>(this.iodepth).fill(0);
    /** monoNow() when each slot's request was prepared; 0 while the slot is free. */
    const since = new Array<number>(this.iodepth).fill(0);
    const { verifier } = this.#options;
    const generation = write && verifier ? verifier.written(path, at, bytes) : 0;
    const ring = this.#ring;
    const base = Number(this.#buffers.address);
    const op = write ? OP.WRITE : OP.READ;
    const call = write ? "write (io_uring)" : "read (io_uring)";
    // next: requests prepared; queued: prepared, not yet taken by the kernel.
    let next = 0, done = 0, queued = 0;
    while (done < total) {
      // Asked to stop (a run aborted): no more requests. What is in flight ends in close().
      this.#stop?.();
      // Paced: when the next request's intended start is still ahead (0: not waiting for one).
      let dueAt = 0;
      while (ring.inFlight + queued < this.iodepth && next < total) {
        const offset = next * req;
        const len = Math.min(req, bytes - offset);
        if (schedule !== undefined) {
          const now = monoNow();
          if (schedule.due > now) {
            dueAt = schedule.due;
            break;
          }
          schedule.take(len, now);
        }
        const slot = free.pop()!;
        lengths[slot] = len;
        offsets[slot] = at + offset;
        since[slot] = monoNow();
        if (generation > 0) {
          verifier!.fill(this.#slot(slot).subarray(0, len), path, generation, at + offset);
        }
        ring.prepare(op, fd, 0, base + slot * this.bs, len, at + offset, slot, 0);
        next++;
        queued++;
      }
      if (queued > 0) {
        // a submission may do the I/O itself (a FUSE file system): it counts as the request
        const rc = await this.#guard(ring.submitAsync(), call, path, at + (next - queued) * req);
        if (rc < 0) {
          const errno = -rc;
          if ((errno !== EAGAIN && errno !== EBUSY && errno !== EINTR) || ring.inFlight === 0) {
            throw new IoError({
              syscall: "io_uring_enter",
              errno,
              code: errnoName(errno),
              path,
              offset: at + (next - queued) * req,
            });
          }
        } else queued -= rc;
      }
      if (ring.inFlight === 0) {
        if (dueAt > 0 && queued === 0) await sleepUntil(dueAt);
        continue;
      }
      let n = ring.ready();
      if (n === 0) {
        // Paced, with a slot free: wait for completions only until the next intended start; and
        // never past the moment the oldest request in flight outlives --timeout (a kernel that
        // cannot time a wait out has it abandoned then instead).
        const due = dueAt > 0 && ring.timedWaits ? Math.max(0, dueAt - monoNow()) * 1e6 : undefined;
        const left = this.#timeLeftNs(since);
        const limit = ring.timedWaits ? earliest(due, left) : undefined;
        const oldest = since.reduce((o, t, s) => (t > 0 && (o < 0 || t < since[o]!) ? s : o), -1);
        const waited = await this.#guard(
          ring.waitAsync(limit),
          call,
          path,
          offsets[Math.max(0, oldest)],
          ring.timedWaits ? undefined : left === undefined ? undefined : left / 1e6,
        );
        n = ring.ready();
        if (n === 0) this.#failStale(since, offsets, call, path);
        // the wait timed out: the next intended start has come, or it is time to look again
        if (n === 0 && limit !== undefined && (waited >= 0 || waited === -ETIME)) continue;
        if (n === 0 && waited < 0) {
          // The pool's thread lost errno: a short wait here says what it was.
          const rc = ring.wait(1, ERRNO_WAIT_NS);
          if (rc < 0 && rc !== -ETIME && rc !== -EINTR) {
            throw new IoError({
              syscall: "io_uring_enter",
              errno: -rc,
              code: errnoName(-rc),
              path,
              detail: "(wait)",
            });
          }
          n = ring.ready();
        }
      }
      let failure: Error | undefined;
      for (let e = 0; e < n; e++) {
        const slot = ring.cqeData(e);
        const res = ring.cqeResult(e);
        if (failure === undefined) {
          if (res === lengths[slot] && !write && verifier) {
            try {
              verifier.check(this.#slot(slot).subarray(0, res), path, offsets[slot]!);
            } catch (e) {
              failure = e as Error;
            }
          }
          if (res < 0) {
            failure = new IoError({
              syscall: call,
              errno: -res,
              code: errnoName(-res),
              path,
              offset: offsets[slot]!,
              detail: `(${strerror(-res)})`,
            });
          } else if (
            res !== lengths[slot] &&
            !this.#finishShort(fd, path, write, slot, res, lengths, offsets)
          ) {
            failure = new IoError({
              syscall: call,
              errno: EIO,
              code: "EIO",
              path,
              offset: offsets[slot]!,
              detail: `(short transfer: ${res} of ${lengths[slot]} bytes)`,
            });
          }
        }
        since[slot] = 0;
        free.push(slot);
        done++;
      }
      ring.advance(n);
      if (failure) throw failure;
    }
    if (schedule !== undefined) {
      schedule.end();
      // The object's share of the stream: it ends no earlier than its bytes at the rate.
      await sleepUntil(schedule.due);
    }
  }

  /** Slot `slot`'s buffer. */
  #slot(slot: number): Uint8Array {
    return this.#buffers.bytes.subarray(slot * this.bs, (slot + 1) * this.bs);
  }

  /**
   * `task`, bounded by --timeout (or `ms`); a request that outlives it
   * leaves the channel hung.
   */
  async #guard<T>(
    task: Promise<T>,
    request: string,
    path: string,
    offset: number | undefined,
    ms: number | undefined = this.#options.timeoutMs,
  ): Promise<T> {
    try {
      return await orTimeout(task, ms, request, path, offset);
    } catch (e) {
      if (!(e instanceof RequestTimeoutError)) throw e;
      this.#hung = true;
      const timeoutMs = this.#options.timeoutMs ?? e.timeoutMs;
      throw new RequestTimeoutError({ request, path, offset, timeoutMs });
    }
  }

  /** ns until the oldest request in flight outlives --timeout (undefined without one). */
  #timeLeftNs(since: readonly number[]): number | undefined {
    const ms = this.#options.timeoutMs;
    if (ms === undefined) return undefined;
    const oldest = Math.min(...since.filter((t) => t > 0));
    return Number.isFinite(oldest) ? Math.max(0, oldest + ms - monoNow()) * 1e6 : undefined;
  }

  /** Fails the transfer when a request in flight has outlived --timeout. */
  #failStale(since: readonly number[], offsets: readonly number[], call: string, path: string) {
    const ms = this.#options.timeoutMs;
    if (ms === undefined) return;
    const now = monoNow();
    const slot = since.findIndex((t) => t > 0 && now - t >= ms);
    if (slot < 0) return;
    this.#hung = true;
    throw new RequestTimeoutError({ request: call, path, offset: offsets[slot], timeoutMs: ms });
  }

  /**
   * A short write carries no errno (a full file system shows up as fewer
   * bytes). Writing the rest synchronously either finishes the request or
   * fails with the errno that says why (ENOSPC, EDQUOT, EIO). Returns false
   * for a short read (end of file), which the caller reports.
   */
  #finishShort(
    fd: number,
    path: string,
    write: boolean,
    slot: number,
    res: number,
    lengths: number[],
    offsets: number[],
  ): boolean {
    if (!write) return false;
    return finishShortWrite(
      fd,
      path,
      this.#buffers.address + BigInt(slot * this.bs),
      res,
      lengths[slot]!,
      offsets[slot]!,
    );
  }

  /**
   * Closes the ring (waiting for what is in flight) and frees the buffers;
   * after a request timed out, leaves both (the kernel may still write into
   * the buffers).
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#hung) return;
    if (this.#ring.close()) freeAligned(this.#buffers);
  }
}

/** The smaller of two optional waits in ns (undefined: no limit). */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
