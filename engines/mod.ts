/**
 * The engines: what moves the bytes of a benchmark to and from a tier.
 *
 * - The job engines, fio's ioengines behind the contract of
 *   {@linkcode JobEngine} and {@linkcode JobRuntime} that a job Worker drives:
 *   {@linkcode LibaioEngine} (Linux native AIO), {@linkcode IoUringEngine}
 *   (io_uring on raw system calls), {@linkcode PsyncEngine}
 *   (pread/pwrite), {@linkcode S3Engine} (@aws-sdk/client-s3) and
 *   {@linkcode NoopEngine} (no I/O, the harness's ceiling); `--verify`'s
 *   read-back of the files a job wrote.
 * - The streams a workload rank moves whole objects with, on the same I/O
 *   code as the job engines: {@linkcode AioChannel} (one libaio context per
 *   stream, waiting on Deno's blocking pool) and {@linkcode S3Channel} (an
 *   object as numbered blocks).
 *
 * @example
 * ```ts ignore
 * import { AioChannel } from "./mod.ts";
 * const ch = new AioChannel(8, 1 << 20, true);
 * try { await ch.transfer("/mnt/nvme/r0/params", true, 64 << 20); } finally { ch.close(); }
 * ```
 *
 * @module
 */

export { type JobEngine, JobRuntime, SyscallFailure } from "./types.ts";
export { LibaioEngine, libaioSource } from "./libaio.ts";
export { IoUringEngine, ioUringFeatures, ioUringRefusal } from "./io_uring.ts";
export { UringQueue } from "./_uring_queue.ts";
export { PsyncEngine } from "./psync.ts";
export { S3Engine, WARMUP_MS } from "./s3.ts";
export { NoopEngine } from "./noop.ts";
export { holdReadBack, newReadBackGate, readBackWritten } from "./verify_readback.ts";
export { AioChannel } from "./libaio_stream.ts";
export { requestSize } from "./_stream.ts";
export { S3Channel, type S3PathTarget } from "./s3_stream.ts";
export { drainBody, type Drained, getObject, putObject } from "./_s3_requests.ts";
export { StreamVerifier } from "./stream_verify.ts";
