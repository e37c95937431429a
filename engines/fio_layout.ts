/**
 * A job file's files made ready before a clone opens them, as fio 3.33's
 * setup_files and extend_file do: a file the job reads (or overwrites) that
 * is missing or too small is written anew with data (unlinked, created,
 * allocated as `fallocate` says, truncated to size, written, fsynced with
 * create_fsync); one a write job creates is only allocated; then, for every
 * clone, the page cache dropped (`invalidate`), the access pattern advised
 * (`fadvise_hint`) and the file read once (`pre_read`). A file several
 * clones share is made ready by one of them; the others wait for it.
 *
 * One difference, on purpose: where the file system has less room than a
 * file needs, fio writes (or reserves) until it runs out, leaving the file
 * system full for everything else on it, and the job fails with ENOSPC (a
 * reservation that fails is no error to fio: the writes find out). Here the
 * room is looked at first: a layout that cannot fit fails at once with
 * ENOSPC, saying how much it needed, and a reservation that cannot fit is
 * not made.
 *
 * Runs in the clone's Worker, before its engine opens the files.
 *
 * @module
 */

import { statfsSync } from "node:fs";
import { CTL, type JobPlan } from "../core/job_protocol.ts";
import {
  allocIoBuffer,
  cString,
  FADV,
  FALLOC_FL_KEEP_SIZE,
  freeAligned,
  lastErrno,
  libc,
  O,
} from "../core/libc.ts";
import { SyscallFailure } from "./types.ts";
import { writeFiller } from "./_data_fill.ts";
import { fillRandom } from "./_file.ts";

const ENOENT = 2;
const ENOSPC = 28;
/**
 * What a layout writes at a time (a block, where larger): small enough for the
 * CPU's cache, which here about halves the kernel's time against 1 MiB writes.
 */
const LAYOUT_CHUNK = 256 * 1024;

/**
 * Makes the files this clone owns ready, then waits until every owner has,
 * then drops, advises and pre-reads. False when told to stop meanwhile.
 *
 * @throws {SyscallFailure} for a call that failed, naming the file.
 */
export function layOutFioFiles(plan: JobPlan, ctl: Int32Array<SharedArrayBuffer>): boolean {
  const t = plan.target.fio!;
  try {
    for (const [i, path] of plan.target.paths.entries()) {
      const action = t.actions[i]!;
      if (!t.owner[i] || action === "none") continue;
      if (Atomics.load(ctl, CTL.STOP) !== 0) return false;
      const stopped = () => Atomics.load(ctl, CTL.STOP) !== 0;
      if (!makeReady(plan, path, t.sizes[i]!, action === "data", stopped)) return false;
    }
  } finally {
    Atomics.add(ctl, CTL.LAID_OUT, 1);
    Atomics.notify(ctl, CTL.LAID_OUT);
  }
  for (;;) {
    const done = Atomics.load(ctl, CTL.LAID_OUT);
    if (done >= t.owners) break;
    if (Atomics.load(ctl, CTL.STOP) !== 0) return false;
    Atomics.wait(ctl, CTL.LAID_OUT, done, 100);
  }
  for (const [i, path] of plan.target.paths.entries()) prepare(plan, path, t.sizes[i]!);
  return true;
}

function fail(call: string, path: string, errno = lastErrno(), detail?: string): never {
  throw new SyscallFailure(call, errno, path, undefined, detail);
}

/**
 * fio's extend_file: unlink, create, allocate; with data: truncate, write,
 * fsync. False when told to stop while writing: the half-written file is
 * removed, as fio removes it.
 */
function makeReady(
  plan: JobPlan,
  path: string,
  size: number,
  withData: boolean,
  stopped: () => boolean,
): boolean {
  const c = libc();
  const layout = plan.target.fio!.layout;
  const name = cString(path);
  if (c.unlink(name) !== 0 && lastErrno() !== ENOENT) fail("unlink", path);
  let flags = O.WRONLY | O.CLOEXEC;
  if (layout.allowCreate) flags |= O.CREAT;
  if (withData) flags |= O.TRUNC;
  const fd = c.open(name, flags, 0o644);
  if (fd < 0) {
    const errno = lastErrno();
    if (errno === ENOENT && !layout.allowCreate) {
      fail("open", path, errno, "(allow_file_create=0 and the file does not exist)");
    }
    fail("open", path, errno);
  }
  try {
    const room = roomFor(path);
    if (withData && size > room) {
      c.unlink(name);
      fail("pwrite", path, ENOSPC, `(laying the file out needs ${size} bytes; ${room} are free)`);
    }
    if (size <= room) allocate(fd, size, layout.fallocate);
    if (!withData) return true;
    if (c.ftruncate(fd, BigInt(size)) !== 0) fail("ftruncate", path);
    if (!write(plan, fd, path, size, stopped)) {
      c.unlink(name);
      return false;
    }
    if (layout.createFsync && c.fsync(fd) !== 0) fail("fsync", path);
    return true;
  } finally {
    c.close(fd);
  }
}

/** The bytes an unprivileged writer may still put on the file system `path` is on (df's Avail). */
function roomFor(path: string): number {
  const s = statfsSync(path);
  return s.bavail * s.bsize;
}

/**
 * fio's fallocate_file. A failure (no space for all of it, a file system
 * that cannot reserve blocks) is not an error, as in fio: the writes find
 * out.
 */
function allocate(fd: number, size: number, mode: string): void {
  if (size <= 0 || mode === "none") return;
  const c = libc();
  if (mode === "truncate") c.ftruncate(fd, BigInt(size));
  else if (mode === "posix") c.posix_fallocate(fd, 0n, BigInt(size));
  else c.fallocate(fd, mode === "keep" ? FALLOC_FL_KEEP_SIZE : 0, 0n, BigInt(size));
}

/** Writes `size` bytes of the job's contents (fio's fill_io_buffer per chunk); false if stopped. */
function write(
  plan: JobPlan,
  fd: number,
  path: string,
  size: number,
  stopped: () => boolean,
): boolean {
  const c = libc();
  const chunk = Math.min(size, Math.max(plan.bs, LAYOUT_CHUNK));
  const buf = allocIoBuffer(chunk, plan.alignment);
  try {
    const filler = writeFiller(plan);
    let at = 0;
    while (at < size) {
      if (stopped()) return false;
      const n = Math.min(chunk, size - at);
      if (filler) filler.fillWhole(buf.bytes, n);
      else fillRandom(buf.bytes.subarray(0, n), plan.seed ^ (at / LAYOUT_CHUNK) ^ plan.job);
      const w = c.pwrite(fd, buf.pointer, BigInt(n), BigInt(at));
      if (w < 0) fail("pwrite", path, lastErrno(), "(laying the file out)");
      if (w === 0) fail("pwrite", path, 0, "(laying the file out: wrote nothing)");
      at += w;
    }
    return true;
  } finally {
    freeAligned(buf);
  }
}

/** What every clone does to its files before the clock: invalidate, advise, pre-read. */
function prepare(plan: JobPlan, path: string, size: number): void {
  const layout = plan.target.fio!.layout;
  if (!layout.invalidate && !layout.preRead) return;
  const c = libc();
  const fd = c.open(cString(path), O.RDONLY | O.CLOEXEC, 0);
  if (fd < 0) return; // a write job's file may not exist yet (fallocate=none): nothing cached
  try {
    if (layout.invalidate && !plan.direct) c.posix_fadvise(fd, 0n, 0n, FADV.DONTNEED);
    if (layout.preRead && !plan.direct) {
      const buf = new Uint8Array(Math.min(size, LAYOUT_CHUNK) || 1);
      while (c.read(fd, buf, BigInt(buf.length)) > 0) { /* into the page cache */ }
    }
  } finally {
    c.close(fd);
  }
}
