/**
 * `io_uring`: Linux's io_uring through raw system calls (engines/_uring.ts),
 * keeping `iodepth` I/Os in flight per job, as fio's io_uring engine, with
 * fio's options: `fixedbufs` (registered buffers, READ_FIXED/WRITE_FIXED),
 * `registerfiles` (registered files, IOSQE_FIXED_FILE) and `sqthread_poll`
 * (a kernel thread polls the submission queue).
 *
 * Each I/O is handed to the kernel in its own io_uring_enter as soon as a
 * slot is free (fio's default iodepth_batch_submit=1); completions are read
 * from the shared CQ ring, all that are ready at once, and io_uring_enter
 * waits (at least one) only when none is. As fio, the ring is set up with
 * IORING_SETUP_SINGLE_ISSUER, DEFER_TASKRUN and COOP_TASKRUN where the kernel
 * has them (6.1; 5.19 for COOP_TASKRUN), so a completion is posted when the
 * job next enters the kernel instead of interrupting it (not with
 * `sqthread_poll`, whose kernel thread submits).
 *
 * Timing follows fio: slat from preparing an I/O to the submit returning,
 * clat from then to the moment its completion is reaped. Each completion
 * carries its own result, so every failed request reports its own errno.
 *
 * Under a rate (--rate, --rate-iops) at any depth, as fio: each request is
 * submitted at its intended start while up to `iodepth` are in flight;
 * between starts the job reaps completions, its wait timing out at the next
 * start (IORING_FEAT_EXT_ARG, Linux 5.11; without it the wait is the
 * runtime's and completions are reaped after it). When every slot is busy at
 * an intended start, the request waits for a slot, and the wait counts in its
 * latency (from the intended start) and the job's lag.
 *
 * @module
 */

import type { IoUringOptions } from "../core/config.ts";
import type { JobPlan } from "../core/job_protocol.ts";
import {
  type AlignedBuffer,
  allocAligned,
  errnoName,
  freeAligned,
  monoNow,
  readSmallFile,
} from "../core/libc.ts";
import { verifierOf } from "../core/verify.ts";
import { writeFiller } from "./_data_fill.ts";
import { OP as IO_OP } from "../core/io_pattern.ts";

/** The first of the pattern's sync kinds (fsync; fdatasync is the next). */
const SYNC_OP = IO_OP.FSYNC;
import {
  ETIME,
  featureNames,
  IORING_FEAT_EXT_ARG,
  IORING_FEAT_SQPOLL_NONFIXED,
  IOSQE_FIXED_FILE,
  OP,
  probeUring,
  Uring,
} from "./_uring.ts";
import { fillRandom, JobFiles } from "./_file.ts";
import { type JobEngine, type JobRuntime, SyscallFailure } from "./types.ts";

/** How long one wait for completions lasts before the stop flag is looked at again. */
const REAP_TIMEOUT_NS = 100_000_000;
/**
 * Under a rate, with requests in flight, the job reaps completions until this
 * long before the next intended start, then lets the runtime's wait take the
 * rest (it spins the last stretch).
 */
const PACE_EARLY_MS = 0.1;
const EAGAIN = 11;
const EINTR = 4;
const EBUSY = 16;
const EPERM = 1;
const ENOSYS = 38;
/** How long the SQ thread spins idle before it sleeps (fio's sqthread_poll default is the kernel's). */
const SQ_THREAD_IDLE_MS = 1000;

/** Where the kernel's switch lives. */
const DISABLED_SYSCTL = "/proc/sys/kernel/io_uring_disabled";

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
 * The line for an io_uring_setup that failed with `errno` while the sysctl
 * kernel.io_uring_disabled reads `disabled` (undefined when absent).
 */
export function refusalMessage(errno: number, disabled: string | undefined): string {
  const why = errno === ENOSYS
    ? "this kernel has no io_uring (io_uring_setup: ENOSYS)"
    : `io_uring_setup failed with ${errnoName(errno)}`;
  const sysctl = disabled === undefined
    ? "sysctl kernel.io_uring_disabled is absent"
    : `sysctl kernel.io_uring_disabled = ${disabled}` +
      (disabled === "2"
        ? " (2: off for everyone)"
        : disabled === "1"
        ? " (1: only for members of kernel.io_uring_group)"
        : "");
  const hint = errno === EPERM || errno === ENOSYS
    ? "set kernel.io_uring_disabled = 0 or use --engine libaio"
    : "use --engine libaio";
  return `io_uring is not available: ${why}; ${sysctl}; ${hint}`;
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
export class IoUringEngine implements JobEngine {
  readonly #plan: JobPlan;
  readonly #files: JobFiles;
  readonly #ring: Uring;
  /** `iodepth` slots of `bs` bytes each, aligned to the plan's alignment. */
  readonly #buffers: AlignedBuffer;
  readonly #options: IoUringOptions;
  /** Whether SQEs name registered files (asked for, or needed by SQPOLL on an old kernel). */
  readonly #fixedFiles: boolean;

  private constructor(
    plan: JobPlan,
    files: JobFiles,
    ring: Uring,
    buffers: AlignedBuffer,
    options: IoUringOptions,
    fixedFiles: boolean,
  ) {
    this.#plan = plan;
    this.#files = files;
    this.#ring = ring;
    this.#buffers = buffers;
    this.#options = options;
    this.#fixedFiles = fixedFiles;
  }

  /** Opens the job's files, lays them out, sets the ring up and registers what is asked. */
  static open(plan: JobPlan): IoUringEngine {
    const options = plan.ioUring ?? { fixedbufs: false, registerfiles: false, sqthreadPoll: false };
    const files = JobFiles.open(plan);
    let ring: Uring | undefined;
    let buffers: AlignedBuffer | undefined;
    try {
      files.layOut();
      const fail = (syscall: string, errno: number): never => {
        if (syscall === "io_uring_setup" && (errno === EPERM || errno === ENOSYS)) {
          throw new Error(refusalMessage(errno, readSmallFile(DISABLED_SYSCTL)?.trim()));
        }
        throw new SyscallFailure(
          syscall,
          errno,
          files.paths[0]!,
          undefined,
          `(depth ${plan.iodepth})`,
        );
      };
      ring = Uring.open(
        {
          entries: plan.iodepth,
          sqpoll: options.sqthreadPoll,
          singleIssuer: true,
          ...(options.sqthreadPoll ? { sqThreadIdleMs: SQ_THREAD_IDLE_MS } : {}),
        },
        fail,
      );
      buffers = allocAligned(plan.iodepth * plan.bs, plan.alignment);
      if (plan.verify) verifierOf(plan)!.fillPattern(buffers.bytes);
      else if (plan.data) {
        const fill = writeFiller(plan)!;
        for (let s = 0; s < plan.iodepth; s++) {
          fill.fillWhole(buffers.bytes.subarray(s * plan.bs, (s + 1) * plan.bs), plan.bs);
        }
      } else fillRandom(buffers.bytes, plan.seed ^ 0xa5a5 ^ plan.job);
      if (options.fixedbufs) {
        const iovecs = allocAligned(plan.iodepth * 16, 16);
        try {
          const v = new DataView(iovecs.bytes.buffer);
          for (let s = 0; s < plan.iodepth; s++) {
            v.setBigUint64(s * 16, buffers.address + BigInt(s * plan.bs), true);
            v.setBigUint64(s * 16 + 8, BigInt(plan.bs), true);
          }
          const rc = ring.registerBuffers(iovecs, plan.iodepth);
          if (rc < 0) fail("io_uring_register (buffers)", -rc);
        } finally {
          freeAligned(iovecs);
        }
      }
      // Before IORING_FEAT_SQPOLL_NONFIXED (5.11) the SQ thread took registered files only.
      const fixedFiles = options.registerfiles ||
        (options.sqthreadPoll && (ring.features & IORING_FEAT_SQPOLL_NONFIXED) === 0);
      if (fixedFiles) {
        const rc = ring.registerFiles(files.fds);
        if (rc < 0) fail("io_uring_register (files)", -rc);
      }
      return new IoUringEngine(plan, files, ring, buffers, options, fixedFiles);
    } catch (e) {
      const drained = ring?.close() ?? true;
      if (buffers && drained) freeAligned(buffers);
      files.close();
      throw e;
    }
  }

  run(rt: JobRuntime): void {
    const plan = this.#plan;
    const depth = plan.iodepth;
    const bs = plan.bs;
    const ring = this.#ring;
    const files = this.#files;
    const fixedbufs = this.#options.fixedbufs;
    const sqeFlags = this.#fixedFiles ? IOSQE_FIXED_FILE : 0;
    const readOp = fixedbufs ? OP.READ_FIXED : OP.READ;
    const writeOp = fixedbufs ? OP.WRITE_FIXED : OP.WRITE;
    const base = Number(this.#buffers.address);
    const prepAt = new Float64Array(depth);
    const submitAt = new Float64Array(depth);
    const isRead = new Uint8Array(depth);
    const offsets = new Float64Array(depth); // offset within the slot's file
    const fileOfSlot = new Int32Array(depth);
    const v = verifierOf(plan);
    const bytes = this.#buffers.bytes;
    const blocks = v &&
      Array.from({ length: depth }, (_, s) => bytes.subarray(s * bs, (s + 1) * bs));
    const jobOffsets = new Float64Array(depth);
    const lengths = new Float64Array(depth);
    const filler = writeFiller(plan);
    const fill = filler?.perWrite ? filler : undefined;
    const inKernel = new Uint8Array(depth);
    // a sync of the pattern waits for what is in flight (file index; -1: none)
    let syncFile = -1;
    let syncData = false;
    const free = new Int32Array(depth);
    for (let i = 0; i < depth; i++) free[i] = depth - 1 - i;
    let nFree = depth;
    // Slots filled into SQEs and not yet taken by the kernel, in ring order.
    const queued = new Int32Array(depth);
    let qHead = 0;
    let qLen = 0;
    let issuing = true;
    // Under a rate, waits for completions may time out at the next intended start.
    const paced = rt.paced && (ring.features & IORING_FEAT_EXT_ARG) !== 0;
    const fail = (syscall: string, errno: number, slot: number, detail?: string): never => {
      throw new SyscallFailure(
        syscall,
        errno,
        files.paths[fileOfSlot[slot]!]!,
        offsets[slot]!,
        detail,
      );
    };

    while (issuing || ring.inFlight > 0 || qLen > 0 || syncFile >= 0) {
      // Under a rate: ms to reap for before the next intended start (0: no such wait).
      let reapForMs = 0;
      if (syncFile >= 0 && ring.inFlight === 0 && qLen === 0) {
        rt.busy(monoNow(), false, syncFile, -1);
        files.sync(syncFile, syncData);
        rt.idle();
        rt.completeSync(monoNow());
        syncFile = -1;
      }
      // Submit each I/O as soon as a slot is free, one io_uring_enter per I/O, as fio
      // does by default (iodepth_batch_submit=1): a batch filled behind a reap reaches
      // the device only when its last SQE is in, so the device sees a lower depth.
      // Under a rate, only those whose intended start has come.
      while (qLen > 0 || (issuing && nFree > 0 && syncFile < 0)) {
        if (qLen === 0) {
          if (paced && ring.inFlight > 0) {
            const wait = rt.untilDue(monoNow());
            if (wait > PACE_EARLY_MS) {
              reapForMs = wait - PACE_EARLY_MS;
              break;
            }
          }
          const now = monoNow();
          if (!rt.mayIssue(now)) {
            issuing = false;
            break;
          }
          rt.next();
          if (rt.op >= SYNC_OP) {
            syncFile = rt.file;
            syncData = rt.op === SYNC_OP + 1;
            break;
          }
          const slot = free[--nFree]!;
          const read = rt.isRead;
          const f = rt.file;
          const where = rt.offset;
          const len = rt.length;
          isRead[slot] = read ? 1 : 0;
          offsets[slot] = where;
          fileOfSlot[slot] = f;
          lengths[slot] = len;
          jobOffsets[slot] = rt.jobOffset;
          if (blocks !== undefined && !read) v!.prepareWrite(blocks[slot]!, where, rt.jobOffset);
          else if (fill !== undefined && !read) {
            fill.fill(bytes.subarray(slot * bs, slot * bs + len), len, where);
          }
          ring.prepare(
            read ? readOp : writeOp,
            sqeFlags ? f : files.fds[f]!,
            sqeFlags,
            base + slot * bs,
            len,
            where,
            slot,
            slot,
          );
          prepAt[slot] = now;
          const at = qHead + qLen++;
          queued[at < depth ? at : at - depth] = slot;
        }
        const first = queued[qHead]!;
        // The submit can block (buffered I/O done inline): the watchdog sees it.
        rt.busy(prepAt[first]!, isRead[first] === 1, fileOfSlot[first]!, offsets[first]!);
        const rc = ring.submit();
        rt.idle();
        if (rc > 0) {
          const t = monoNow();
          for (let i = 0; i < rc; i++) {
            const slot = queued[qHead]!;
            qHead = qHead + 1 === depth ? 0 : qHead + 1;
            submitAt[slot] = t;
            inKernel[slot] = 1;
          }
          qLen -= rc;
          continue;
        }
        const errno = -rc;
        if (
          (errno === EAGAIN || errno === EBUSY || errno === EINTR || rc === 0) && ring.inFlight > 0
        ) {
          break; // retry once completions have freed kernel resources
        }
        if (rc < 0) fail("io_uring_enter", errno, first, `(submitting ${qLen})`);
      }
      if (ring.inFlight === 0) continue;
      let n = ring.ready();
      if (n === 0) {
        const timed = reapForMs > 0 && reapForMs * 1e6 < REAP_TIMEOUT_NS;
        const rc = ring.wait(1, timed ? Math.max(1, Math.floor(reapForMs * 1e6)) : REAP_TIMEOUT_NS);
        if (rc === -ETIME && timed) continue; // the next intended start has come
        if (rc === -ETIME) {
          // Nothing completed in time: show the watchdog the oldest I/O in flight.
          let oldest = -1;
          for (let s = 0; s < depth; s++) {
            if (inKernel[s] === 1 && (oldest < 0 || submitAt[s]! < submitAt[oldest]!)) oldest = s;
          }
          if (oldest >= 0) {
            rt.busy(submitAt[oldest]!, isRead[oldest] === 1, fileOfSlot[oldest]!, offsets[oldest]!);
          }
          continue;
        }
        if (rc < 0 && rc !== -EINTR) {
          throw new SyscallFailure("io_uring_enter", -rc, files.paths[0]!, undefined, "(wait)");
        }
        n = ring.ready();
        if (n === 0) continue;
      }
      const t = monoNow();
      rt.idle();
      for (let e = 0; e < n; e++) {
        const slot = ring.cqeData(e);
        const res = ring.cqeResult(e);
        const read = isRead[slot] === 1;
        const len = lengths[slot]!;
        if (res !== len) {
          const call = read ? "read (io_uring)" : "write (io_uring)";
          if (res < 0 && rt.tolerates(read, -res, `${call} ${files.paths[fileOfSlot[slot]!]}`)) {
            inKernel[slot] = 0;
            free[nFree++] = slot;
            continue;
          }
          ring.advance(e + 1);
          fail(
            call,
            res < 0 ? -res : 0,
            slot,
            res < 0 ? undefined : `(short ${read ? "read" : "write"}: ${res} of ${len})`,
          );
        }
        rt.complete(
          read,
          t,
          (t - prepAt[slot]!) * 1e6,
          (submitAt[slot]! - prepAt[slot]!) * 1e6,
          -1,
          len,
          offsets[slot]!,
        );
        if (blocks !== undefined && read) {
          v!.checkRead(
            blocks[slot]!,
            files.paths[fileOfSlot[slot]!]!,
            offsets[slot]!,
            jobOffsets[slot]!,
          );
        }
        inKernel[slot] = 0;
        free[nFree++] = slot;
      }
      ring.advance(n);
    }
    if (plan.endFsync) {
      rt.busy(monoNow(), false, -1, -1);
      rt.recordFsync(files.fsyncAll());
      rt.idle();
    }
  }

  close(): void {
    // The kernel may still write into the buffers until what is in flight completes.
    if (this.#ring.close(this.#plan.timeoutMs ?? 30_000)) freeAligned(this.#buffers);
    this.#files.close();
  }
}
