/**
 * The rank streams over a kernel queue, written once: {@linkcode QueueChannel}
 * moves an object the way DeepSpeed's aio handle moves a tensor to or from a
 * swap file — cut into requests, up to `iodepth` of them in flight in one
 * {@linkcode KernelQueue}, waiting for completions without blocking the
 * rank's other streams — and libaio_stream.ts's AioChannel and
 * io_uring_stream.ts's UringChannel supply only their queue. Also here: the
 * request size of an S3 object, and the error of a libc call that has just
 * failed.
 *
 * Submission and wait run on threads of Deno's blocking pool, so the
 * Worker's event loop stays free for the rank's other streams, timers and
 * barriers, as each of DeepSpeed's aio threads blocks only itself. The
 * submission matters as much as the wait: the kernel may issue a request
 * inside it and return only when it is done (io_submit of O_DIRECT on
 * ceph-fuse blocked 20–55 ms per 8 requests under strace), and made on the
 * rank's own thread it stalled the rank's local path with it. Each
 * completion carries its own result (bytes or -errno), so every failed
 * request keeps its errno whichever thread reaped it.
 *
 * @module
 */

import { IoError, RequestTimeoutError } from "../core/errors.ts";
import type { StreamSchedule } from "../core/rate.ts";
import { TIMED_OUT, withinTimeout } from "../core/settle.ts";
import type { StreamVerifier } from "./stream_verify.ts";
import { cString, errnoName, lastErrno, libc, monoNow, O, strerror } from "../core/libc.ts";
import { fillRandom } from "./_file.ts";
import type { KernelQueue } from "./_kernel_queue.ts";

const EINTR = 4;
const EIO = 5;
const EAGAIN = 11;
const EBUSY = 16;

const usleep = Deno.dlopen("libc.so.6", {
  usleep: { parameters: ["u32"], result: "i32", nonblocking: true },
}).symbols.usleep;

/** Sleeps until `at` (monoNow ms) on the blocking pool, so the stream's thread stays free. */
export async function sleepUntil(at: number): Promise<void> {
  const ms = at - monoNow();
  if (ms > 0) await usleep(Math.min(0xffffffff, Math.round(ms * 1000)));
}

/** An {@linkcode IoError} for a libc call that has just failed on this thread, with its errno. */
export function callFailed(syscall: string, path: string, offset?: number): IoError {
  const errno = lastErrno();
  return new IoError({
    syscall,
    errno,
    code: errnoName(errno),
    path,
    offset,
    detail: `(${strerror(errno)})`,
  });
}

/**
 * Part size for an S3 object: `bs`, or smaller so that a small object still
 * fills the queue. (File streams cut `bs` requests, the last one shorter, as
 * DeepSpeed's aio handle does.)
 *
 * @example
 * ```ts
 * import { requestSize } from "./_stream.ts";
 * console.assert(requestSize(64 << 20, 1 << 20, 8) === 1 << 20);
 * console.assert(requestSize(1 << 20, 1 << 20, 8) === 128 << 10);
 * ```
 */
export function requestSize(bytes: number, bs: number, iodepth: number, alignment = 4096): number {
  const share = Math.ceil(Math.ceil(bytes / iodepth) / alignment) * alignment;
  return Math.max(alignment, Math.min(bs, share));
}

/** What a rank's stream is given besides its depth and request size. */
export interface StreamOptions {
  /**
   * How long one request may take (--timeout): past it the transfer fails
   * with a {@linkcode RequestTimeoutError} and the channel is left as it is
   * (a thread may still be blocked in the kernel on it).
   */
  readonly timeoutMs?: number;
  /** --verify: what the stream writes is the pattern, what it reads is checked. */
  readonly verifier?: StreamVerifier;
}

/**
 * `task`'s value, or a {@linkcode RequestTimeoutError} naming `request`,
 * `path` and `offset` once `ms` went by (never, without `ms`).
 */
export async function orTimeout<T>(
  task: Promise<T>,
  ms: number | undefined,
  request: string,
  path: string,
  offset?: number,
): Promise<T> {
  if (ms === undefined) return await task;
  const r = await withinTimeout(task, ms);
  if (r === TIMED_OUT) throw new RequestTimeoutError({ request, path, offset, timeoutMs: ms });
  return r;
}

/**
 * Opens the object's file at `path` (created for a write; O_DIRECT when
 * `direct`), runs `body` with its descriptor and closes it whatever happens
 * — except after a request timed out: closing a file on a storage that
 * stopped answering would block too, so it is left open.
 * Throws {@linkcode IoError} naming `open` when it cannot be opened.
 */
async function withObjectFile(
  path: string,
  write: boolean,
  direct: boolean,
  body: (fd: number) => Promise<void>,
): Promise<void> {
  const c = libc();
  const flags = (write ? O.WRONLY | O.CREAT : O.RDONLY) | O.CLOEXEC | (direct ? O.DIRECT : 0);
  const fd = c.open(cString(path), flags, 0o600);
  if (fd < 0) throw callFailed("open", path);
  let hung = false;
  try {
    await body(fd);
  } catch (e) {
    hung = e instanceof RequestTimeoutError;
    throw e;
  } finally {
    if (!hung) c.close(fd);
  }
}

/**
 * A short write through a kernel queue carries no errno (a full file system
 * shows up as fewer bytes). Writes the rest of the request synchronously —
 * `len` bytes from `buffer` at `offset`, `done` of them written — which
 * either finishes it or fails with the errno that says why (ENOSPC, EDQUOT,
 * EIO). Returns false when the file takes no more (0 bytes written).
 */
function finishShortWrite(
  fd: number,
  path: string,
  buffer: bigint,
  done: number,
  len: number,
  offset: number,
): boolean {
  const c = libc();
  let at = done;
  while (at < len) {
    const p = Deno.UnsafePointer.create(buffer + BigInt(at))!;
    const n = c.pwrite(fd, p, BigInt(len - at), BigInt(offset + at));
    if (n < 0) throw callFailed("pwrite", path, offset + at);
    if (n === 0) return false;
    at += n;
  }
  return true;
}

/**
 * Checks a transfer's starting offset: an integer ≥ 0, and with O_DIRECT a
 * multiple of 4 KiB.
 *
 * @throws {RangeError} naming the offset and what it must be.
 *
 * @example
 * ```ts
 * import { checkOffset } from "./_stream.ts";
 * checkOffset(8192, true);
 * checkOffset(100, false);
 * ```
 */
export function checkOffset(at: number, direct: boolean): void {
  if (!Number.isSafeInteger(at) || at < 0 || (direct && at % 4096 !== 0)) {
    throw new RangeError(
      `offset ${at} is not ${direct ? "a multiple of 4096 bytes (O_DIRECT)" : "an integer ≥ 0"}`,
    );
  }
}

/**
 * A kernel queue with its buffers, for one stream of one rank: each
 * {@linkcode QueueChannel.transfer} moves one object, keeping up to `iodepth`
 * requests of at most `bs` bytes in flight. One transfer at a time per channel.
 */
export class QueueChannel {
  /** Requests in flight at most. */
  readonly iodepth: number;
  /** The largest request, in bytes. */
  readonly bs: number;
  /** Whether files are opened with O_DIRECT. */
  readonly direct: boolean;
  readonly #queue: KernelQueue;
  /** Called between requests; what it throws ends the transfer (see the constructor). */
  readonly #stop: (() => void) | undefined;
  readonly #options: StreamOptions;
  #closed = false;
  /** A request timed out: the queue still holds it, so it and its buffers are left. */
  #hung = false;

  /**
   * A channel over `queue` (its slots filled here with random bytes).
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
  protected constructor(
    queue: KernelQueue,
    direct: boolean,
    stop?: () => void,
    options: StreamOptions = {},
  ) {
    this.#queue = queue;
    this.#options = options;
    this.iodepth = queue.depth;
    this.bs = queue.slotBytes;
    this.direct = direct;
    this.#stop = stop;
    fillRandom(queue.bytes, 0x5eed);
  }

  /** What a channel throws when its queue cannot be set up. */
  protected static openFailed(syscall: string, errno: number): never {
    throw new IoError({ syscall, errno, code: errnoName(errno), path: "" });
  }

  /**
   * Reads or writes `bytes` of the file at `path` from offset `at` (default
   * 0; a multiple of 4 KiB with O_DIRECT), creating it for a write; with
   * `schedule` (a workload's background stream under --background-rate),
   * each request at its intended start, and the transfer ending no earlier
   * than its bytes at the rate (a queue whose waits cannot time out lets a
   * request due while others are in flight wait for the next completion).
   * Throws {@linkcode IoError} naming the call, errno and offset, and
   * {@linkcode RequestTimeoutError} when a request outlives --timeout.
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
    const run = (fd: number) =>
      new Transfer(this.#queue, fd, path, write, bytes, at, this.#options).run(
        this.#stop,
        schedule,
      );
    try {
      await withObjectFile(path, write, this.direct, run);
    } catch (e) {
      if (e instanceof RequestTimeoutError) this.#hung = true;
      throw e;
    }
  }

  /**
   * Releases the queue (waiting for what is in flight) and its buffers;
   * after a request timed out, leaves both (the kernel may still write into
   * the buffers, and the wait could last for ever).
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#hung) this.#queue.close();
  }
}

/** One object moving through a queue. */
class Transfer {
  readonly #queue: KernelQueue;
  readonly #fd: number;
  readonly #path: string;
  readonly #write: boolean;
  readonly #bytes: number;
  readonly #at: number;
  readonly #options: StreamOptions;
  /** Requests in all: of bs, the last one shorter. */
  readonly #total: number;
  /** Per slot: its request's length and offset in the file. */
  readonly #lengths: number[];
  readonly #offsets: number[];
  /** Per slot: monoNow() when its request was prepared; 0 while the slot is free. */
  readonly #since: number[];
  readonly #free: number[] = [];
  /** Under --verify, the generation of the pattern a write lays down (0: none). */
  readonly #generation: number;
  /** Requests prepared, of them not yet taken by the kernel, in flight, and done. */
  #next = 0;
  #queued = 0;
  #inFlight = 0;
  #done = 0;

  constructor(
    queue: KernelQueue,
    fd: number,
    path: string,
    write: boolean,
    bytes: number,
    at: number,
    options: StreamOptions,
  ) {
    this.#queue = queue;
    this.#fd = fd;
    this.#path = path;
    this.#write = write;
    this.#bytes = bytes;
    this.#at = at;
    this.#options = options;
    // Requests of bs, the last one shorter, as DeepSpeed's aio handle cuts a transfer
    // (ceil(bytes / block_size) blocks in csrc/aio/common/deepspeed_aio_common.cpp): a
    // scaled object keeps the request size the profile measured and has fewer in flight.
    this.#total = Math.ceil(bytes / queue.slotBytes);
    this.#lengths = new Array<number>(queue.depth).fill(0);
    this.#offsets = new Array<number>(queue.depth).fill(0);
    this.#since = new Array<number>(queue.depth).fill(0);
    for (let s = queue.depth - 1; s >= 0; s--) this.#free.push(s);
    const { verifier } = options;
    this.#generation = write && verifier ? verifier.written(path, at, bytes) : 0;
  }

  async run(stop: (() => void) | undefined, schedule: StreamSchedule | undefined): Promise<void> {
    while (this.#done < this.#total) {
      // Asked to stop (a run aborted): no more requests. What is in flight ends in close().
      stop?.();
      const dueAt = this.#prepare(schedule);
      if (this.#queued > 0) await this.#submit();
      if (this.#inFlight === 0) {
        if (dueAt > 0 && this.#queued === 0) await sleepUntil(dueAt);
        continue;
      }
      this.#complete(this.#queue.reapReady() || await this.#wait(dueAt));
    }
    if (schedule !== undefined) {
      schedule.end();
      // The object's share of the stream: it ends no earlier than its bytes at the rate.
      await sleepUntil(schedule.due);
    }
  }

  /**
   * Waits for completions: paced, with a slot free, only until the next
   * intended start (`dueAt`, 0 for none); and never past the moment the
   * oldest request in flight outlives --timeout (a queue whose waits cannot
   * time out has the wait abandoned then instead). How many are ready.
   */
  async #wait(dueAt: number): Promise<number> {
    const q = this.#queue;
    const due = dueAt > 0 && q.timedWaits ? Math.max(0, dueAt - monoNow()) * 1e6 : undefined;
    const left = this.#timeLeftNs();
    const limit = q.timedWaits ? earliest(due, left) : undefined;
    const bound = q.timedWaits || left === undefined ? undefined : left / 1e6;
    const n = await this.#guard(q.geteventsAsync(limit), this.#oldestOffset(), bound);
    if (n < 0) throw this.#error(q.calls.wait, -n, undefined, q.calls.waitDetail);
    if (n === 0) this.#failStale();
    return n;
  }

  /**
   * Queues requests while slots are free; under a schedule, only those whose
   * intended start has come. Returns the next one's intended start when it is
   * still ahead, else 0.
   */
  #prepare(schedule: StreamSchedule | undefined): number {
    const q = this.#queue;
    const req = q.slotBytes;
    while (this.#inFlight + this.#queued < q.depth && this.#next < this.#total) {
      const offset = this.#next * req;
      const len = Math.min(req, this.#bytes - offset);
      if (schedule !== undefined) {
        const now = monoNow();
        if (schedule.due > now) return schedule.due;
        schedule.take(len, now);
      }
      const slot = this.#free.pop()!;
      this.#lengths[slot] = len;
      this.#offsets[slot] = this.#at + offset;
      this.#since[slot] = monoNow();
      if (this.#generation > 0) {
        const buf = this.#slot(slot, len);
        this.#options.verifier!.fill(buf, this.#path, this.#generation, this.#at + offset);
      }
      q.prepare(slot, this.#write, this.#fd, 0, this.#at + offset, len);
      this.#next++;
      this.#queued++;
    }
    return 0;
  }

  /** Hands the queued requests to the kernel; a transient refusal waits for completions. */
  async #submit(): Promise<void> {
    const q = this.#queue;
    const offset = this.#at + (this.#next - this.#queued) * q.slotBytes;
    // a submission may do the I/O itself (a FUSE file system): it counts as the request
    const rc = await this.#guard(q.submitAsync(), offset, this.#options.timeoutMs);
    if (rc >= 0) {
      this.#queued -= rc;
      this.#inFlight += rc;
      return;
    }
    const errno = -rc;
    if ((errno !== EAGAIN && errno !== EBUSY && errno !== EINTR) || this.#inFlight === 0) {
      throw this.#error(q.calls.submit, errno, offset);
    }
  }

  /** Takes `n` ready completions; throws the first failure once all are given back. */
  #complete(n: number): void {
    const q = this.#queue;
    let failure: Error | undefined;
    for (let e = 0; e < n; e++) {
      const slot = q.eventSlot(e);
      const res = q.eventResult(e);
      failure ??= this.#check(slot, res);
      this.#since[slot] = 0;
      this.#free.push(slot);
      this.#done++;
    }
    q.release(n);
    this.#inFlight -= n;
    if (failure) throw failure;
  }

  /**
   * The failure of slot `slot`'s request that moved `res` bytes (or -errno);
   * none when it is whole (and, under --verify, a read holds what was written).
   */
  #check(slot: number, res: number): Error | undefined {
    const call = this.#call();
    const offset = this.#offsets[slot]!;
    const len = this.#lengths[slot]!;
    if (res < 0) return this.#error(call, -res, offset, `(${strerror(-res)})`);
    if (res === len) return this.#write ? undefined : this.#verify(slot, res, offset);
    // A short write carries no errno (a full file system shows up as fewer bytes): writing
    // the rest either finishes it or fails with the errno that says why. A short read is
    // the end of the file.
    if (
      this.#write &&
      finishShortWrite(this.#fd, this.#path, this.#queue.address(slot), res, len, offset)
    ) return undefined;
    return new IoError({
      syscall: call,
      errno: EIO,
      code: "EIO",
      path: this.#path,
      offset,
      detail: `(short transfer: ${res} of ${len} bytes)`,
    });
  }

  /** Under --verify, the mismatch of a whole read's bytes with what was written; none else. */
  #verify(slot: number, res: number, offset: number): Error | undefined {
    const { verifier } = this.#options;
    if (!verifier) return undefined;
    try {
      verifier.check(this.#slot(slot, res), this.#path, offset);
    } catch (e) {
      return e as Error;
    }
    return undefined;
  }

  /** The first `len` bytes of slot `slot`'s buffer. */
  #slot(slot: number, len: number): Uint8Array {
    const start = slot * this.#queue.slotBytes;
    return this.#queue.bytes.subarray(start, start + len);
  }

  /** The call a request of this transfer is named by in errors. */
  #call(): string {
    return this.#write ? this.#queue.calls.write : this.#queue.calls.read;
  }

  /**
   * `task`, bounded by `ms`: past it a {@linkcode RequestTimeoutError} naming
   * the request at `offset` and --timeout.
   */
  async #guard<T>(task: Promise<T>, offset: number | undefined, ms: number | undefined) {
    try {
      return await orTimeout(task, ms, this.#call(), this.#path, offset);
    } catch (e) {
      if (!(e instanceof RequestTimeoutError)) throw e;
      const timeoutMs = this.#options.timeoutMs ?? e.timeoutMs;
      throw new RequestTimeoutError({ request: this.#call(), path: this.#path, offset, timeoutMs });
    }
  }

  /** ns until the oldest request in flight outlives --timeout (undefined without one). */
  #timeLeftNs(): number | undefined {
    const ms = this.#options.timeoutMs;
    if (ms === undefined) return undefined;
    const oldest = Math.min(...this.#since.filter((t) => t > 0));
    return Number.isFinite(oldest) ? Math.max(0, oldest + ms - monoNow()) * 1e6 : undefined;
  }

  /** The offset of the oldest request in flight (the transfer's start when none is). */
  #oldestOffset(): number {
    let oldest = -1;
    this.#since.forEach((t, s) => {
      if (t > 0 && (oldest < 0 || t < this.#since[oldest]!)) oldest = s;
    });
    return oldest < 0 ? this.#at : this.#offsets[oldest]!;
  }

  /** Fails the transfer when a request in flight has outlived --timeout. */
  #failStale(): void {
    const ms = this.#options.timeoutMs;
    if (ms === undefined) return;
    const now = monoNow();
    const slot = this.#since.findIndex((t) => t > 0 && now - t >= ms);
    if (slot < 0) return;
    const offset = this.#offsets[slot];
    throw new RequestTimeoutError({
      request: this.#call(),
      path: this.#path,
      offset,
      timeoutMs: ms,
    });
  }

  #error(syscall: string, errno: number, offset?: number, detail?: string): IoError {
    return new IoError({
      syscall,
      errno,
      code: errnoName(errno),
      path: this.#path,
      offset,
      detail,
    });
  }
}

/** The smaller of two optional waits in ns (undefined: no limit). */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
