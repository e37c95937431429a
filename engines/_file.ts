/**
 * A job's files: opened (with O_DIRECT when asked), laid out before the clock
 * starts, and addressed block by block. With several files (fio's nrfiles)
 * block b of the job's space goes to file b mod n, at block ⌊b / n⌋ there:
 * round-robin striping with a stripe unit of bs. In a shared-file layout the
 * job's space starts at its region's offset.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import { XorShift32 } from "../core/offsets.ts";
import {
  allocIoBuffer,
  cString,
  FADV,
  freeAligned,
  lastErrno,
  libc,
  monoNow,
  O,
} from "../core/libc.ts";
import { type JobRuntime, SyscallFailure } from "./types.ts";
import { writeFiller } from "./_data_fill.ts";
import { verifierOf } from "../core/verify.ts";

/** Block size used to lay files out. */
const LAYOUT_BS = 1024 * 1024;
const EINVAL = 22;
const EOPNOTSUPP = 95;

/**
 * Fills `buf` with pseudo-random bytes (so no layer can compress or dedupe
 * them), deterministic for a seed.
 */
export function fillRandom(buf: Uint8Array, seed: number): void {
  new XorShift32(seed).fillBytes(buf);
}

/** Whether a job writes at all (fio's td_write): reads and random reads alone do not. */
function jobWrites(plan: JobPlan): boolean {
  if (plan.pattern) return plan.pattern.dirs !== "read";
  return plan.rw !== "read" && plan.rw !== "randread";
}

/**
 * Fills a job's I/O buffers (`bytes`: one or more slots of `bs` bytes): with
 * the verify pattern under --verify, with what a job file's buffer options
 * say (each slot whole, as fio fills each io_u), else with random bytes of
 * the job's own seed. A job that only reads has them left as they are, as
 * fio leaves them (init_io_u_buffers fills them only for a job that
 * writes): its reads overwrite them, and 64 jobs of 32 buffers of 1 MiB
 * spent about 0.9 s of CPU filling 2 GiB for nothing.
 */
export function fillBlocks(plan: JobPlan, bytes: Uint8Array): void {
  if (!jobWrites(plan)) return;
  const v = verifierOf(plan);
  if (v) return v.fillPattern(bytes);
  const fill = plan.data && writeFiller(plan);
  if (!fill) return fillRandom(bytes, plan.seed ^ 0xa5a5 ^ plan.job);
  for (let at = 0; at + plan.bs <= bytes.length; at += plan.bs) {
    fill.fillWhole(bytes.subarray(at, at + plan.bs), plan.bs);
  }
}

/**
 * After a job's last I/O: the end-of-job fsync when the plan asks for it
 * (fio's end_fsync), shown to the watchdog while it runs and timed.
 */
export function endJob(rt: JobRuntime, plan: JobPlan, files: JobFiles): void {
  if (!plan.endFsync) return;
  rt.busy(monoNow(), false, -1, -1);
  rt.recordFsync(files.fsyncAll());
  rt.idle();
}

/** The open files of one job. */
export class JobFiles {
  readonly fds: readonly number[];
  readonly paths: readonly string[];
  readonly #plan: JobPlan;

  private constructor(plan: JobPlan, fds: number[]) {
    this.#plan = plan;
    this.fds = fds;
    this.paths = plan.target.paths;
  }

  /**
   * Opens every file of the job read-write, creating it if needed (read-only
   * if existing); a job file's files as fio opens them: read-only for a job
   * that only reads, O_SYNC or O_DSYNC as `sync` says, advised as
   * `fadvise_hint` says.
   */
  static open(plan: JobPlan): JobFiles {
    const fio = plan.target.fio;
    const access = plan.target.existing
      ? O.RDONLY
      : fio
      ? (plan.rw === "read" || plan.rw === "randread" ? O.RDONLY : O.RDWR) |
        (fio.layout.allowCreate ? O.CREAT : 0)
      : O.RDWR | O.CREAT;
    const sync = plan.openSync === "sync" ? O.SYNC : plan.openSync === "dsync" ? O.DSYNC : 0;
    const flags = access | O.CLOEXEC | (plan.direct ? O.DIRECT : 0) | sync;
    const fds: number[] = [];
    for (const path of plan.target.paths) {
      const fd = libc().open(cString(path), flags, 0o600);
      if (fd < 0) {
        const errno = lastErrno();
        for (const open of fds) libc().close(open);
        throw new SyscallFailure("open", errno, path);
      }
      fds.push(fd);
      const advice = fio?.layout.fadvise;
      if (advice === "sequential" || advice === "random") {
        libc().posix_fadvise(fd, 0n, 0n, advice === "random" ? FADV.RANDOM : FADV.SEQUENTIAL);
      }
    }
    return new JobFiles(plan, fds);
  }

  /** Bytes of the job's space that land in file `f`. */
  #lengthOf(f: number): number {
    const { bs, size } = this.#plan;
    const blocks = size / bs;
    const n = this.fds.length;
    return Math.ceil((blocks - f) / n) * bs;
  }

  /** Makes the files ready as the plan says: written whole, blocks reserved, or as is. */
  layOut(): void {
    const plan = this.#plan;
    if (plan.target.layout === "none" || plan.target.fio) return;
    const c = libc();
    const start = plan.target.regionOffset;
    for (const [f, fd] of this.fds.entries()) {
      const len = this.#lengthOf(f);
      const rc = c.posix_fallocate(fd, BigInt(start), BigInt(len));
      // posix_fallocate returns the error number itself; EOPNOTSUPP/EINVAL mean the
      // file system cannot reserve blocks, which only costs a little speed.
      if (rc !== 0 && rc !== EOPNOTSUPP && rc !== EINVAL) {
        throw new SyscallFailure("posix_fallocate", rc, this.paths[f]!, start, `(${len} bytes)`);
      }
      if (plan.target.layout === "prefill") this.#write(fd, this.paths[f]!, start, len);
    }
  }

  #write(fd: number, path: string, start: number, len: number): void {
    const plan = this.#plan;
    const c = libc();
    const v = verifierOf(plan);
    // Under --verify a chunk holds whole blocks, each stamped for where it lands.
    const chunk = v ? Math.max(1, Math.floor(LAYOUT_BS / plan.bs)) * plan.bs : LAYOUT_BS;
    const bs = Math.min(len, Math.max(chunk, plan.bs));
    const buf = allocIoBuffer(bs, plan.alignment);
    try {
      if (v) v.fillPattern(buf.bytes);
      else fillRandom(buf.bytes, plan.seed + plan.job);
      let off = 0;
      while (off < len) {
        const want = Math.min(bs, len - off);
        v?.prepareLayout(buf.bytes.subarray(0, want), start + off);
        const n = c.pwrite(fd, buf.pointer, BigInt(want), BigInt(start + off));
        if (n < 0) throw new SyscallFailure("pwrite", lastErrno(), path, start + off, "(layout)");
        if (n === 0) {
          throw new SyscallFailure("pwrite", 0, path, start + off, "(layout: wrote nothing)");
        }
        // A short write is followed by another try, which reports the real error.
        off += n;
        if (n < want && plan.direct) off -= n % plan.alignment;
      }
    } finally {
      freeAligned(buf);
    }
  }

  /** The file index of a byte offset in the job's space. */
  fileOf(offset: number): number {
    const n = this.fds.length;
    return n === 1 ? 0 : (offset / this.#plan.bs) % n;
  }

  /** The offset within its file of a byte offset in the job's space. */
  offsetIn(offset: number): number {
    const n = this.fds.length;
    const region = this.#plan.target.regionOffset;
    if (n === 1) return offset + region;
    const bs = this.#plan.bs;
    return Math.floor(offset / bs / n) * bs + region;
  }

  /** fsync (or fdatasync) file `f`, as a job file's fsync= and fdatasync= ask. */
  sync(f: number, data: boolean): void {
    const fd = this.fds[f]!;
    const rc = data ? libc().fdatasync(fd) : libc().fsync(fd);
    if (rc !== 0) {
      throw new SyscallFailure(data ? "fdatasync" : "fsync", lastErrno(), this.paths[f]!);
    }
  }

  /** fsync every file; returns the time it took in ms. */
  fsyncAll(): number {
    const t0 = monoNow();
    for (const [f, fd] of this.fds.entries()) {
      if (libc().fsync(fd) !== 0) throw new SyscallFailure("fsync", lastErrno(), this.paths[f]!);
    }
    return monoNow() - t0;
  }

  close(): void {
    if (this.#plan.fsyncOnClose) {
      for (const fd of this.fds) libc().fsync(fd);
    }
    for (const fd of this.fds) libc().close(fd);
  }
}
