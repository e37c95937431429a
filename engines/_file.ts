/**
 * Opening a job's file and laying it out before the clock starts: written
 * whole for jobs that read (fio's layout), or its blocks reserved for jobs
 * that write into a fresh file.
 *
 * @module
 */

import type { JobPlan } from "../bench/_protocol.ts";
import { XorShift32 } from "../bench/offsets.ts";
import {
  type AlignedBuffer,
  allocAligned,
  cString,
  freeAligned,
  lastErrno,
  libc,
  O,
} from "../tiers/_libc.ts";
import { SyscallFailure } from "./_job.ts";

/** Block size used to lay files out. */
const LAYOUT_BS = 1024 * 1024;

/** Opens the job's file read-write, with O_DIRECT when asked; creates it if needed. */
export function openJobFile(plan: JobPlan): number {
  const flags = O.RDWR | O.CREAT | O.CLOEXEC | (plan.direct ? O.DIRECT : 0);
  const fd = libc().open(cString(plan.path), flags, 0o600);
  if (fd < 0) throw new SyscallFailure("open", lastErrno(), plan.path);
  return fd;
}

/**
 * Fills `buf` with pseudo-random bytes (so no layer can compress or dedupe
 * them), deterministic for a seed.
 */
export function fillRandom(buf: Uint8Array, seed: number): void {
  const rng = new XorShift32(seed);
  const words = new Uint32Array(buf.buffer, buf.byteOffset, buf.byteLength >>> 2);
  for (let i = 0; i < words.length; i++) words[i] = rng.next();
  for (let i = words.length * 4; i < buf.byteLength; i++) buf[i] = rng.next() & 0xff;
}

/** Makes the file ready as the plan says; see {@linkcode JobPlan.layout}. */
export function layOut(fd: number, plan: JobPlan): void {
  if (plan.layout === "none") return;
  const c = libc();
  const rc = c.posix_fallocate(fd, 0, plan.size);
  // posix_fallocate returns the error number itself; EOPNOTSUPP/EINVAL mean the
  // file system cannot reserve blocks, which only costs a little speed.
  if (rc !== 0 && rc !== 95 && rc !== 22) {
    throw new SyscallFailure("posix_fallocate", rc, plan.path, 0, `(${plan.size} bytes)`);
  }
  if (plan.layout === "fallocate") return;
  const bs = Math.min(plan.size, Math.max(LAYOUT_BS, plan.bs));
  const buf: AlignedBuffer = allocAligned(bs, plan.alignment);
  try {
    fillRandom(buf.bytes, plan.seed + plan.job);
    let off = 0;
    while (off < plan.size) {
      const len = Math.min(bs, plan.size - off);
      const n = c.pwrite(fd, buf.pointer, len, off);
      if (n < 0) throw new SyscallFailure("pwrite", lastErrno(), plan.path, off, "(layout)");
      if (n === 0) throw new SyscallFailure("pwrite", 0, plan.path, off, "(layout: wrote nothing)");
      // A short write is followed by another try, which reports the real error.
      off += n;
      if (n < len && plan.direct) off -= n % plan.alignment;
    }
  } finally {
    freeAligned(buf);
  }
}
