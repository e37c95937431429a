/**
 * `libaio`: Linux native asynchronous I/O through libaio.so.1 (io_setup,
 * io_submit, io_getevents), keeping `iodepth` I/Os in flight per job, as
 * fio's libaio engine. The loop, its timing and its pacing are the
 * asynchronous engines' own (engines/_async_engine.ts); this file supplies
 * the kernel AIO context. Without O_DIRECT the kernel completes buffered I/O
 * inside io_submit, as it does for fio.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import { libaio } from "./_aio_ring.ts";
/** The names libaio is loaded by, newest Debian first (libaio.so.1t64, then libaio.so.1). */
export { LIBAIO_NAMES } from "./_aio_ring.ts";
import { AioQueue } from "./_aio_queue.ts";
import { AsyncEngine } from "./_async_engine.ts";
import { SyscallFailure } from "./types.ts";

/**
 * Where the libaio engine's calls come from, for the results: the name of
 * libaio.so.1 as it was loaded, or raw system calls through libc when it is
 * not installed.
 *
 * @example
 * ```ts
 * import { libaioSource } from "./libaio.ts";
 * console.log(libaioSource()); // "libaio.so.1t64", or "syscall (libaio.so.1 not installed)"
 * ```
 */
export function libaioSource(): string {
  return libaio().source;
}

/**
 * The libaio engine of one job.
 *
 * @example
 * ```ts ignore
 * const engine = LibaioEngine.open(plan);
 * try { engine.run(runtime); } finally { engine.close(); }
 * ```
 */
export class LibaioEngine extends AsyncEngine {
  /** Opens the job's file, lays it out, and sets up the kernel AIO context. */
  static open(plan: JobPlan): LibaioEngine {
    const { files, queue } = AsyncEngine.openParts(
      plan,
      (files) =>
        AioQueue.open(plan.iodepth, plan.bs, plan.alignment, (syscall, errno) => {
          throw new SyscallFailure(
            syscall,
            errno,
            files.paths[0]!,
            undefined,
            `(depth ${plan.iodepth})`,
          );
        }),
    );
    return new LibaioEngine(plan, files, queue);
  }
}
