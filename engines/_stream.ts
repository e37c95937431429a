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

import { IoError } from "../core/errors.ts";
import type { StreamSchedule } from "../core/rate.ts";
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

/**
 * Opens the object's file at `path` (created for a write; O_DIRECT when
 * `direct`), runs `body` with its descriptor and closes it whatever happens.
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
  try {
    await body(fd);
  } finally {
    c.close(fd);
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
  #closed = false;

  /**
   * A channel over `queue` (its slots filled here with random bytes).
   *
   * `stop`, when given, is called before each batch of requests; what it
   * throws ends the transfer there, with the requests in flight left to
   * {@linkcode close}, which waits for them. A rank passes one that throws
   * once its run is aborted, so Ctrl-C or a lost rank does not wait for a
   * large object to finish.
   */
  protected constructor(queue: KernelQueue, direct: boolean, stop?: () => void) {
    this.#queue = queue;
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
   * Throws {@linkcode IoError} naming the call, errno and offset.
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
      (fd) => new Transfer(this.#queue, fd, path, write, bytes, at).run(this.#stop, schedule),
    );
  }

  /** Releases the queue (waiting for what is in flight) and its buffers. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue.close();
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
  /** Requests in all: of bs, the last one shorter. */
  readonly #total: number;
  /** Per slot: its request's length and offset in the file. */
  readonly #lengths: number[];
  readonly #offsets: number[];
  readonly #free: number[] = [];
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
  ) {
    this.#queue = queue;
    this.#fd = fd;
    this.#path = path;
    this.#write = write;
    this.#bytes = bytes;
    this.#at = at;
    // Requests of bs, the last one shorter, as DeepSpeed's aio handle cuts a transfer
    // (ceil(bytes / block_size) blocks in csrc/aio/common/deepspeed_aio_common.cpp): a
    // scaled object keeps the request size the profile measured and has fewer in flight.
    this.#total = Math.ceil(bytes / queue.slotBytes);
    this.#lengths = new Array<number>(queue.depth).fill(0);
    this.#offsets = new Array<number>(queue.depth).fill(0);
    for (let s = queue.depth - 1; s >= 0; s--) this.#free.push(s);
  }

  async run(stop: (() => void) | undefined, schedule: StreamSchedule | undefined): Promise<void> {
    const q = this.#queue;
    while (this.#done < this.#total) {
      // Asked to stop (a run aborted): no more requests. What is in flight ends in close().
      stop?.();
      const dueAt = this.#prepare(schedule);
      if (this.#queued > 0) await this.#submit();
      if (this.#inFlight === 0) {
        if (dueAt > 0 && this.#queued === 0) await sleepUntil(dueAt);
        continue;
      }
      // Paced, with a slot free: wait for completions only until the next intended start.
      const timed = dueAt > 0 && q.timedWaits;
      const n = q.reapReady() ||
        await q.geteventsAsync(timed ? Math.max(0, dueAt - monoNow()) * 1e6 : undefined);
      if (n < 0) throw this.#error(q.calls.wait, -n, undefined, q.calls.waitDetail);
      this.#complete(n);
    }
    if (schedule !== undefined) {
      schedule.end();
      // The object's share of the stream: it ends no earlier than its bytes at the rate.
      await sleepUntil(schedule.due);
    }
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
      q.prepare(slot, this.#write, this.#fd, 0, this.#at + offset, len);
      this.#next++;
      this.#queued++;
    }
    return 0;
  }

  /** Hands the queued requests to the kernel; a transient refusal waits for completions. */
  async #submit(): Promise<void> {
    const q = this.#queue;
    const rc = await q.submitAsync();
    if (rc >= 0) {
      this.#queued -= rc;
      this.#inFlight += rc;
      return;
    }
    const errno = -rc;
    if ((errno !== EAGAIN && errno !== EBUSY && errno !== EINTR) || this.#inFlight === 0) {
      const offset = this.#at + (this.#next - this.#queued) * q.slotBytes;
      throw this.#error(q.calls.submit, errno, offset);
    }
  }

  /** Takes `n` ready completions; throws the first failure once all are given back. */
  #complete(n: number): void {
    const q = this.#queue;
    let failure: IoError | undefined;
    for (let e = 0; e < n; e++) {
      const slot = q.eventSlot(e);
      const res = q.eventResult(e);
      failure ??= this.#check(slot, res);
      this.#free.push(slot);
      this.#done++;
    }
    q.release(n);
    this.#inFlight -= n;
    if (failure) throw failure;
  }

  /** The failure of slot `slot`'s request that moved `res` bytes (or -errno); none when it is whole. */
  #check(slot: number, res: number): IoError | undefined {
    const call = this.#write ? this.#queue.calls.write : this.#queue.calls.read;
    const offset = this.#offsets[slot]!;
    const len = this.#lengths[slot]!;
    if (res < 0) return this.#error(call, -res, offset, `(${strerror(-res)})`);
    // A short write carries no errno (a full file system shows up as fewer bytes): writing
    // the rest either finishes it or fails with the errno that says why. A short read is
    // the end of the file.
    if (
      res === len ||
      (this.#write &&
        finishShortWrite(this.#fd, this.#path, this.#queue.address(slot), res, len, offset))
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
