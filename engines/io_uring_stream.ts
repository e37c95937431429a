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

import { IoError } from "../core/errors.ts";
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
import { checkOffset, finishShortWrite, sleepUntil, withObjectFile } from "./_stream.ts";

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
  #closed = false;

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
   */
  constructor(iodepth: number, bs: number, direct: boolean, stop?: () => void) {
    this.iodepth = iodepth;
    this.#stop = stop;
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
        ring.prepare(op, fd, 0, base + slot * this.bs, len, at + offset, slot, 0);
        next++;
        queued++;
      }
      if (queued > 0) {
        const rc = await ring.submitAsync();
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
        // Paced, with a slot free: wait for completions only until the next intended start.
        const timed = dueAt > 0 && ring.timedWaits;
        const waited = await ring.waitAsync(
          timed ? Math.max(0, dueAt - monoNow()) * 1e6 : undefined,
        );
        n = ring.ready();
        if (n === 0 && timed) continue; // the next intended start has come
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
      let failure: IoError | undefined;
      for (let e = 0; e < n; e++) {
        const slot = ring.cqeData(e);
        const res = ring.cqeResult(e);
        if (failure === undefined) {
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

  /** Closes the ring (waiting for what is in flight) and frees the buffers. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ring.close()) freeAligned(this.#buffers);
  }
}
