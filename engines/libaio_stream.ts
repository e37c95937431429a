/**
 * One asynchronous I/O stream of a rank, the way DeepSpeed's aio handle
 * moves a tensor to or from a swap file: the object is cut into requests,
 * up to `iodepth` of them are in flight in one libaio context, and the
 * stream waits for completions without blocking the rank's other streams.
 *
 * Both the submission and the wait run on threads of Deno's blocking pool
 * (FFI calls declared `nonblocking`), so the Worker's event loop stays free
 * for the rank's other streams, timers and barriers, as each of DeepSpeed's
 * aio threads blocks only itself. The submission matters as much as the
 * wait: io_submit of O_DIRECT on ceph-fuse blocks until the I/O is done
 * (20–55 ms per 8 requests measured under strace), and made on the rank's
 * own thread it stalled the rank's local path with it. Each completion
 * carries its own result (bytes or -errno), so errors keep their errno
 * whichever thread reaped them.
 *
 * @module
 */

import { IoError, RequestTimeoutError } from "../core/errors.ts";
import type { StreamSchedule } from "../core/rate.ts";
import { AioRing } from "./_aio_ring.ts";
import { fillRandom } from "./_file.ts";
import { errnoName, monoNow, strerror } from "../core/libc.ts";
import {
  checkOffset,
  finishShortWrite,
  orTimeout,
  sleepUntil,
  type StreamOptions,
  withObjectFile,
} from "./_stream.ts";

const EIO = 5;

/**
 * A libaio context with its buffers, for one stream of one rank: each
 * {@linkcode AioChannel.transfer} moves one object, keeping up to `iodepth`
 * requests of at most `bs` bytes in flight, and waits for completions on
 * Deno's blocking pool. One transfer at a time per channel.
 *
 * @example
 * ```ts ignore
 * const ch = new AioChannel(8, 1 << 20, true);
 * try { await ch.transfer("/mnt/nvme/r0/params", true, 64 << 20); } finally { ch.close(); }
 * ```
 */
export class AioChannel {
  /** Requests in flight at most. */
  readonly iodepth: number;
  /** The largest request, in bytes. */
  readonly bs: number;
  /** Whether files are opened with O_DIRECT. */
  readonly direct: boolean;
  readonly #ring: AioRing;
  /** Called between requests; what it throws ends the transfer (see the constructor). */
  readonly #stop: (() => void) | undefined;
  readonly #options: StreamOptions;
  #closed = false;
  /** A request timed out: the context still holds it, and destroying it would wait for it. */
  #hung = false;

  /**
   * Sets up the context and its `iodepth` buffers of `bs` bytes (4 KiB
   * aligned, random bytes). Throws {@linkcode IoError} when io_setup fails.
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
    this.#ring = AioRing.open(iodepth, bs, 4096, (syscall, errno) => {
      throw new IoError({ syscall, errno, code: errnoName(errno), path: "" });
    });
    fillRandom(this.#ring.buffers.bytes, 0x5eed);
  }

  /**
   * Reads or writes `bytes` of the file at `path` from offset `at` (default
   * 0; a multiple of 4 KiB with O_DIRECT), creating it for a write; with
   * `schedule` (a workload's background stream under --background-rate),
   * each request at its intended start, and the transfer ending no earlier
   * than its bytes at the rate. Throws
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
    /** monoNow() when each slot's request was submitted; 0 while the slot is free. */
    const since = new Array<number>(this.iodepth).fill(0);
    const { verifier } = this.#options;
    const generation = write && verifier ? verifier.written(path, at, bytes) : 0;
    const call = write ? "pwrite (aio)" : "pread (aio)";
    let next = 0, done = 0, inflight = 0;
    const ring = this.#ring;
    const batch: number[] = [];
    while (done < total) {
      // Asked to stop (a run aborted): no more requests. What is in flight ends in close().
      this.#stop?.();
      batch.length = 0;
      // Paced: when the next request's intended start is still ahead (0: not waiting for one).
      let dueAt = 0;
      while (inflight + batch.length < this.iodepth && next + batch.length < total) {
        const offset = (next + batch.length) * req;
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
        if (generation > 0) {
          verifier!.fill(ring.buffer(slot).subarray(0, len), path, generation, at + offset);
        }
        ring.prepare(slot, fd, write, at + offset, len);
        batch.push(slot);
      }
      const k = batch.length;
      if (k > 0) {
        const submitted = monoNow();
        // a submission may do the I/O itself (a FUSE file system): it counts as the request
        const rc = await this.#guard(ring.submitAsync(batch), call, path, at + next * req);
        if (rc < 0) {
          throw new IoError({
            syscall: "io_submit",
            errno: -rc,
            code: errnoName(-rc),
            path,
            offset: at + next * req,
          });
        }
        for (let j = 0; j < rc; j++) since[batch[j]!] = submitted;
        // a partial submit leaves the rest prepared: give their slots back
        for (let j = rc; j < k; j++) free.push(batch[j]!);
        next += rc;
        inflight += rc;
      }
      if (dueAt > 0 && inflight === 0) {
        await sleepUntil(dueAt);
        continue;
      }
      // Paced, with a slot free: reap only until the next intended start; and never past the
      // moment the oldest request in flight outlives --timeout.
      const due = dueAt > 0 ? Math.max(0, dueAt - monoNow()) * 1e6 : undefined;
      const n = await ring.wait(earliest(due, this.#timeLeftNs(since)));
      if (n < 0) {
        throw new IoError({ syscall: "io_getevents", errno: -n, code: errnoName(-n), path });
      }
      if (n === 0) this.#failStale(since, offsets, call, path);
      for (let e = 0; e < n; e++) {
        const slot = ring.eventSlot(e);
        const res = ring.eventResult(e);
        if (res < 0) {
          throw new IoError({
            syscall: write ? "pwrite (aio)" : "pread (aio)",
            errno: -res,
            code: errnoName(-res),
            path,
            offset: offsets[slot]!,
            detail: `(${strerror(-res)})`,
          });
        }
        if (
          res !== lengths[slot] && !this.#finishShort(fd, path, write, slot, res, lengths, offsets)
        ) {
          throw new IoError({
            syscall: write ? "pwrite (aio)" : "pread (aio)",
            errno: EIO,
            code: "EIO",
            path,
            offset: offsets[slot]!,
            detail: `(short transfer: ${res} of ${lengths[slot]} bytes)`,
          });
        }
        if (!write && verifier) {
          verifier.check(ring.buffer(slot).subarray(0, res), path, offsets[slot]!);
        }
        since[slot] = 0;
        free.push(slot);
        inflight--;
        done++;
      }
    }
    if (schedule !== undefined) {
      schedule.end();
      // The object's share of the stream: it ends no earlier than its bytes at the rate.
      await sleepUntil(schedule.due);
    }
  }

  /** `task`, bounded by --timeout; a request that outlives it leaves the channel hung. */
  async #guard<T>(task: Promise<T>, request: string, path: string, offset: number): Promise<T> {
    try {
      return await orTimeout(task, this.#options.timeoutMs, request, path, offset);
    } catch (e) {
      if (e instanceof RequestTimeoutError) this.#hung = true;
      throw e;
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
   * A short write through aio carries no errno (a full file system shows up
   * as fewer bytes). Writing the rest synchronously either finishes the
   * request or fails with the errno that says why (ENOSPC, EDQUOT, EIO).
   * Returns false for a short read (end of file), which the caller reports.
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
      this.#ring.address(slot),
      res,
      lengths[slot]!,
      offsets[slot]!,
    );
  }

  /**
   * Destroys the context (waiting for what is in flight) and frees the
   * buffers; after a request timed out, leaves both (the wait could last
   * for ever).
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#hung) this.#ring.close();
  }
}

/** The smaller of two optional waits in ns (undefined: no limit). */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
