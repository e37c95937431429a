/**
 * What the rank streams over a kernel queue (libaio_stream.ts's AioChannel,
 * io_uring_stream.ts's UringChannel) share: the request size of an object,
 * opening and closing the object's file around a transfer, the error of a
 * libc call that has just failed, and finishing a short write.
 *
 * @module
 */

import { IoError, RequestTimeoutError } from "../core/errors.ts";
import { TIMED_OUT, withinTimeout } from "../core/settle.ts";
import type { StreamVerifier } from "./stream_verify.ts";
import { cString, errnoName, lastErrno, libc, monoNow, O, strerror } from "../core/libc.ts";

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
export async function withObjectFile(
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
export function finishShortWrite(
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
