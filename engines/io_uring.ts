/**
 * `io_uring`: Linux's io_uring through raw system calls (engines/_uring.ts),
 * keeping `iodepth` I/Os in flight per job, as fio's io_uring engine, with
 * fio's options: `fixedbufs` (registered buffers, READ_FIXED/WRITE_FIXED),
 * `registerfiles` (registered files, IOSQE_FIXED_FILE) and `sqthread_poll`
 * (a kernel thread polls the submission queue). The loop, its timing and its
 * pacing are the asynchronous engines' own (engines/_async_engine.ts); this
 * file supplies the ring.
 *
 * Completions are read from the shared CQ ring, all that are ready at once,
 * and io_uring_enter waits (at least one) only when none is. As fio, the ring
 * is set up with IORING_SETUP_SINGLE_ISSUER, DEFER_TASKRUN and COOP_TASKRUN
 * where the kernel has them (6.1; 5.19 for COOP_TASKRUN), so a completion is
 * posted when the job next enters the kernel instead of interrupting it (not
 * with `sqthread_poll`, whose kernel thread submits). Under a rate, a wait
 * times out at the next intended start where the kernel has
 * IORING_FEAT_EXT_ARG (Linux 5.11); without it the wait is the runtime's and
 * completions are reaped after it.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import { readSmallFile } from "../core/libc.ts";
import { featureNames, probeUring } from "./_uring.ts";
import { DISABLED_SYSCTL, refusalMessage, UringQueue } from "./_uring_queue.ts";
import { AsyncEngine } from "./_async_engine.ts";
import { SyscallFailure } from "./types.ts";

export { refusalMessage } from "./_uring_queue.ts";

/** How long the SQ thread spins idle before it sleeps (fio's sqthread_poll default is the kernel's). */
const SQ_THREAD_IDLE_MS = 1000;

/**
 * Whether this kernel lets this process use io_uring: `undefined` when it
 * does, else the one line that says why not, naming the sysctl
 * (kernel.io_uring_disabled) when that is the cause.
 *
 * @example
 * ```ts
 * import { ioUringRefusal } from "./io_uring.ts";
 * const why = ioUringRefusal();
 * if (why !== undefined) console.log(why);
 * ```
 */
export function ioUringRefusal(): string | undefined {
  const p = probeUring();
  if (p.ok) return undefined;
  return refusalMessage(p.errno, readSmallFile(DISABLED_SYSCTL)?.trim());
}

/**
 * The kernel's io_uring features (`io_uring_params.features`) by their
 * IORING_FEAT_ names, from a ring set up on this thread; empty when io_uring
 * is refused.
 */
export function ioUringFeatures(): string[] {
  const p = probeUring();
  return p.ok ? featureNames(p.features) : [];
}

/** Where the io_uring engine's calls come from, for the results' engine_impl. */
export function ioUringImpl(): string {
  const features = ioUringFeatures();
  return "raw io_uring syscalls (libc.so.6 syscall()); kernel features: " +
    (features.length > 0 ? features.join(" ") : "none (io_uring unavailable)");
}

/**
 * The io_uring engine of one job.
 *
 * @example
 * ```ts ignore
 * const engine = IoUringEngine.open(plan);
 * try { engine.run(runtime); } finally { engine.close(); }
 * ```
 */
export class IoUringEngine extends AsyncEngine {
  /** Opens the job's files, lays them out, sets the ring up and registers what is asked. */
  static open(plan: JobPlan): IoUringEngine {
    const options = plan.ioUring ?? { fixedbufs: false, registerfiles: false, sqthreadPoll: false };
    const { files, queue } = AsyncEngine.openParts(plan, (files) =>
      UringQueue.open({
        entries: plan.iodepth,
        sqpoll: options.sqthreadPoll,
        singleIssuer: true,
        ...(options.sqthreadPoll ? { sqThreadIdleMs: SQ_THREAD_IDLE_MS } : {}),
        slotBytes: plan.bs,
        alignment: plan.alignment,
        fixedbufs: options.fixedbufs,
        registerfiles: options.registerfiles,
        files: files.fds,
      }, (syscall, errno) => {
        throw new SyscallFailure(
          syscall,
          errno,
          files.paths[0]!,
          undefined,
          `(depth ${plan.iodepth})`,
        );
      }));
    return new IoUringEngine(plan, files, queue);
  }
}
