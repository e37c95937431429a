/**
 * `libaio`: Linux native asynchronous I/O through libaio.so.1 (io_setup,
 * io_submit, io_getevents), keeping `iodepth` I/Os in flight per job, as
 * fio's libaio engine.
 *
 * Timing follows fio: slat is from preparing an I/O to io_submit returning,
 * clat from then to the moment its completion is reaped, lat the sum. Without
 * O_DIRECT the kernel completes buffered I/O inside io_submit, as it does for
 * fio.
 *
 * @module
 */

import type { JobPlan } from "../bench/_protocol.ts";
import { type AlignedBuffer, allocAligned, freeAligned, libc } from "../tiers/_libc.ts";
import {
  IO_CMD_PREAD,
  IO_CMD_PWRITE,
  IO_EVENT,
  IO_EVENT_SIZE,
  IOCB,
  IOCB_SIZE,
  libaio,
} from "./_libaio.ts";
import { fillRandom, JobFiles } from "./_file.ts";
import { type JobEngine, type JobRuntime, SyscallFailure } from "./_job.ts";

/** How long io_getevents waits before looking at the stop flag again. */
const REAP_TIMEOUT_NS = 100_000_000;
const EAGAIN = 11;
const EINTR = 4;

/**
 * The libaio engine of one job.
 *
 * @example
 * ```ts ignore
 * const engine = LibaioEngine.open(plan);
 * try { engine.run(runtime); } finally { engine.close(); }
 * ```
 */
export class LibaioEngine implements JobEngine {
  readonly #plan: JobPlan;
  readonly #files: JobFiles;
  readonly #ctx: Deno.PointerObject;
  readonly #bufs: AlignedBuffer;
  /** `iodepth` iocbs, one per slot, in C memory so their addresses never move. */
  readonly #iocbs: AlignedBuffer;
  readonly #iocbView: DataView;
  /** The array of iocb pointers handed to io_submit. */
  readonly #ptrs: Uint8Array<ArrayBuffer>;
  readonly #ptrView: DataView;
  readonly #events: Uint8Array<ArrayBuffer>;
  readonly #eventView: DataView;
  readonly #timeout: Uint8Array<ArrayBuffer>;
  /** Address of each slot's iocb, split in 32-bit halves for DataView writes. */
  readonly #iocbLo: Uint32Array;
  readonly #iocbHi: Uint32Array;

  private constructor(
    plan: JobPlan,
    files: JobFiles,
    ctx: Deno.PointerObject,
    bufs: AlignedBuffer,
  ) {
    this.#plan = plan;
    this.#files = files;
    this.#ctx = ctx;
    this.#bufs = bufs;
    const depth = plan.iodepth;
    this.#iocbs = allocAligned(depth * IOCB_SIZE, IOCB_SIZE);
    this.#iocbView = new DataView(this.#iocbs.bytes.buffer);
    this.#iocbs.bytes.fill(0);
    this.#ptrs = new Uint8Array(depth * 8);
    this.#ptrView = new DataView(this.#ptrs.buffer);
    this.#events = new Uint8Array(depth * IO_EVENT_SIZE);
    this.#eventView = new DataView(this.#events.buffer);
    this.#timeout = new Uint8Array(16);
    const tv = new DataView(this.#timeout.buffer);
    tv.setBigInt64(0, BigInt(Math.floor(REAP_TIMEOUT_NS / 1e9)), true);
    tv.setBigInt64(8, BigInt(REAP_TIMEOUT_NS % 1e9), true);
    this.#iocbLo = new Uint32Array(depth);
    this.#iocbHi = new Uint32Array(depth);
    const iocbBase = this.#iocbs.address;
    for (let slot = 0; slot < depth; slot++) {
      const at = slot * IOCB_SIZE;
      const addr = iocbBase + BigInt(at);
      this.#iocbLo[slot] = Number(addr & 0xffffffffn);
      this.#iocbHi[slot] = Number(addr >> 32n);
      // Fixed per slot: the slot index comes back in io_event.data.
      this.#iocbView.setBigUint64(at + IOCB.data, BigInt(slot), true);
      this.#iocbView.setBigUint64(at + IOCB.buf, bufs.address + BigInt(slot * plan.bs), true);
      this.#iocbView.setBigUint64(at + IOCB.nbytes, BigInt(plan.bs), true);
    }
  }

  /** Opens the job's file, lays it out, and sets up the kernel AIO context. */
  static open(plan: JobPlan): LibaioEngine {
    const aio = libaio();
    const files = JobFiles.open(plan);
    let bufs: AlignedBuffer | undefined;
    try {
      files.layOut();
      bufs = allocAligned(plan.iodepth * plan.bs, plan.alignment);
      fillRandom(bufs.bytes, plan.seed ^ 0xa5a5 ^ plan.job);
      const out = new BigUint64Array(1);
      const rc = aio.io_setup(plan.iodepth, new Uint8Array(out.buffer));
      if (rc < 0) {
        throw new SyscallFailure(
          "io_setup",
          -rc,
          files.paths[0]!,
          undefined,
          `(depth ${plan.iodepth})`,
        );
      }
      const ctx = Deno.UnsafePointer.create(out[0]!);
      if (ctx === null) throw new SyscallFailure("io_setup", 22, files.paths[0]!);
      return new LibaioEngine(plan, files, ctx, bufs);
    } catch (e) {
      files.close();
      if (bufs) freeAligned(bufs);
      throw e;
    }
  }

  run(rt: JobRuntime): void {
    const aio = libaio();
    const plan = this.#plan;
    const depth = plan.iodepth;
    const bs = plan.bs;
    const iocb = this.#iocbView;
    const ptrs = this.#ptrView;
    const ev = this.#eventView;
    const prepAt = new Float64Array(depth);
    const submitAt = new Float64Array(depth);
    const isRead = new Uint8Array(depth);
    const offsets = new Float64Array(depth); // offset within the slot's file
    const fileOfSlot = new Int32Array(depth);
    const files = this.#files;
    const free = new Int32Array(depth);
    const order = new Int32Array(depth); // slots in the order of the submit array
    for (let i = 0; i < depth; i++) free[i] = depth - 1 - i;
    let nFree = depth;
    let queued = 0; // prepared, not yet accepted by io_submit (front of #ptrs)
    let inFlight = 0;
    let issuing = true;

    while (issuing || inFlight > 0 || queued > 0) {
      // Prepare as many I/Os as there are free slots.
      while (issuing && nFree > 0) {
        const now = performance.now();
        if (!rt.mayIssue(now)) {
          issuing = false;
          break;
        }
        const slot = free[--nFree]!;
        const at = slot * IOCB_SIZE;
        const read = rt.nextIsRead();
        const off = rt.nextOffset();
        isRead[slot] = read ? 1 : 0;
        const f = files.fileOf(off);
        const at2 = files.offsetIn(off);
        offsets[slot] = at2;
        fileOfSlot[slot] = f;
        iocb.setInt32(at + IOCB.fildes, files.fds[f]!, true);
        iocb.setInt16(at + IOCB.opcode, read ? IO_CMD_PREAD : IO_CMD_PWRITE, true);
        iocb.setUint32(at + IOCB.offset, at2 % 4294967296, true);
        iocb.setUint32(at + IOCB.offset + 4, Math.floor(at2 / 4294967296), true);
        order[queued] = slot;
        ptrs.setUint32(queued * 8, this.#iocbLo[slot]!, true);
        ptrs.setUint32(queued * 8 + 4, this.#iocbHi[slot]!, true);
        prepAt[slot] = now;
        queued++;
      }
      if (queued > 0) {
        const rc = aio.io_submit(this.#ctx, queued, this.#ptrs);
        const t = performance.now();
        if (rc < 0 && rc !== -EAGAIN && rc !== -EINTR) {
          const first = order[0]!;
          throw new SyscallFailure(
            "io_submit",
            -rc,
            files.paths[fileOfSlot[first]!]!,
            offsets[first]!,
          );
        }
        const accepted = rc > 0 ? rc : 0;
        for (let q = 0; q < accepted; q++) submitAt[order[q]!] = t;
        // Keep any the kernel did not take at the front of the pointer array.
        if (accepted > 0 && accepted < queued) {
          this.#ptrs.copyWithin(0, accepted * 8, queued * 8);
          order.copyWithin(0, accepted, queued);
        }
        queued -= accepted;
        inFlight += accepted;
      }
      if (inFlight === 0) continue;
      // Reap at least one completion (all that are ready, up to depth).
      const n = aio.io_getevents(this.#ctx, 1, depth, this.#events, this.#timeout);
      const t = performance.now();
      if (n < 0) {
        if (n === -EINTR) continue;
        throw new SyscallFailure("io_getevents", -n, files.paths[0]!);
      }
      for (let e = 0; e < n; e++) {
        const at = e * IO_EVENT_SIZE;
        const slot = ev.getUint32(at + IO_EVENT.data, true);
        // res is a long; transfers < 2 GiB and -errno fit in its low 32 bits.
        const res = ev.getInt32(at + IO_EVENT.res, true);
        const read = isRead[slot] === 1;
        if (res !== bs) {
          const errno = res < 0 ? -res : 0;
          const detail = res < 0
            ? undefined
            : `(short ${read ? "read" : "write"}: ${res} of ${bs})`;
          throw new SyscallFailure(
            read ? "pread (libaio)" : "pwrite (libaio)",
            errno,
            files.paths[fileOfSlot[slot]!]!,
            offsets[slot]!,
            detail,
          );
        }
        rt.complete(read, t, (t - prepAt[slot]!) * 1e6, (submitAt[slot]! - prepAt[slot]!) * 1e6);
        free[nFree++] = slot;
      }
      inFlight -= n;
    }
    if (plan.endFsync) rt.recordFsync(files.fsyncAll());
  }

  close(): void {
    libaio().io_destroy(this.#ctx);
    this.#files.close();
    freeAligned(this.#bufs);
    freeAligned(this.#iocbs);
  }
}
