/**
 * One asynchronous I/O stream of a rank, the way DeepSpeed's aio handle
 * moves a tensor to or from a swap file: the object is cut into requests,
 * up to `iodepth` of them are in flight in one libaio context, and the
 * stream waits for completions without blocking the rank's other streams.
 *
 * Submission is a synchronous FFI call (fast for O_DIRECT); the wait is
 * `io_getevents` declared `nonblocking`, so it runs on a thread of Deno's
 * blocking pool and the Worker's event loop stays free for the rank's other
 * streams, timers and barriers. Each completion carries its own result
 * (bytes or -errno), so errors keep their errno whichever thread reaped them.
 *
 * @module
 */

import { IoError } from "../core/errors.ts";
import {
  IO_CMD_PREAD,
  IO_CMD_PWRITE,
  IO_EVENT,
  IO_EVENT_SIZE,
  IOCB,
  IOCB_SIZE,
  libaio,
} from "./libaio_abi.ts";
import { fillRandom } from "./_file.ts";
import {
  type AlignedBuffer,
  allocAligned,
  cString,
  errnoName,
  freeAligned,
  lastErrno,
  libc,
  O,
  strerror,
} from "../core/libc.ts";

type GetEvents = (
  ctx: Deno.PointerObject,
  minNr: bigint,
  nr: bigint,
  events: Deno.PointerObject,
) => Promise<number>;

const EIO = 5;
const NR_IO_GETEVENTS = Deno.build.arch === "aarch64" ? 4n : 208n;

let getEvents: GetEvents | undefined;

/** `io_getevents` on the blocking pool, from libaio.so.1 or as a raw system call. */
function nonblockingGetEvents(): GetEvents {
  if (getEvents) return getEvents;
  for (const name of ["libaio.so.1t64", "libaio.so.1"]) {
    try {
      const s = Deno.dlopen(name, {
        io_getevents: {
          parameters: ["pointer", "i64", "i64", "pointer", "pointer"],
          result: "i32",
          nonblocking: true,
        },
      }).symbols;
      getEvents = (ctx, min, nr, ev) => s.io_getevents(ctx, min, nr, ev, null);
      return getEvents;
    } catch {
      // try the next name
    }
  }
  const s = Deno.dlopen("libc.so.6", {
    syscall: {
      parameters: ["i64", "pointer", "i64", "i64", "pointer", "pointer"],
      result: "i32",
      nonblocking: true,
    },
  }).symbols;
  // errno is set on the pool's thread and lost: a failed wait reports EIO
  getEvents = async (ctx, min, nr, ev) => {
    const rc = await s.syscall(NR_IO_GETEVENTS, ctx, min, nr, ev, null);
    return rc < 0 ? -EIO : rc;
  };
  return getEvents;
}

/** Request size for an object: `bs`, or smaller so that a small object still fills the queue. */
export function requestSize(bytes: number, bs: number, iodepth: number, alignment = 4096): number {
  const share = Math.ceil(Math.ceil(bytes / iodepth) / alignment) * alignment;
  return Math.max(alignment, Math.min(bs, share));
}

/** A libaio context with its buffers, for one stream of one rank. */
export class AioChannel {
  readonly iodepth: number;
  readonly bs: number;
  readonly direct: boolean;
  readonly #ctx: Deno.PointerObject;
  readonly #buffers: AlignedBuffer;
  readonly #iocbs: AlignedBuffer;
  readonly #events: AlignedBuffer;
  readonly #iocbView: DataView;
  readonly #eventView: DataView;
  readonly #ptrs: BigUint64Array<ArrayBuffer>;
  readonly #ptrBytes: Uint8Array<ArrayBuffer>;
  #closed = false;

  constructor(iodepth: number, bs: number, direct: boolean) {
    this.iodepth = iodepth;
    this.bs = bs;
    this.direct = direct;
    const out = new Uint8Array(8);
    const rc = libaio().io_setup(iodepth, out);
    if (rc < 0) {
      throw new IoError({ syscall: "io_setup", errno: -rc, code: errnoName(-rc), path: "" });
    }
    this.#ctx = Deno.UnsafePointer.create(new BigUint64Array(out.buffer)[0]!)!;
    this.#buffers = allocAligned(iodepth * bs, 4096);
    fillRandom(this.#buffers.bytes, 0x5eed);
    this.#iocbs = allocAligned(iodepth * IOCB_SIZE, 64);
    this.#events = allocAligned(iodepth * IO_EVENT_SIZE, 64);
    this.#iocbs.bytes.fill(0);
    this.#iocbView = new DataView(this.#iocbs.bytes.buffer);
    this.#eventView = new DataView(this.#events.bytes.buffer);
    this.#ptrs = new BigUint64Array(iodepth);
    this.#ptrBytes = new Uint8Array(this.#ptrs.buffer);
  }

  /**
   * Reads or writes `bytes` of the file at `path` from offset 0, creating it
   * for a write. Throws {@linkcode IoError} naming the call, errno and offset.
   */
  async transfer(path: string, write: boolean, bytes: number): Promise<void> {
    if (this.#closed) throw new TypeError("channel closed");
    const c = libc();
    const flags = (write ? O.WRONLY | O.CREAT : O.RDONLY) | O.CLOEXEC |
      (this.direct ? O.DIRECT : 0);
    const fd = c.open(cString(path), flags, 0o600);
    if (fd < 0) {
      const errno = lastErrno();
      throw new IoError({
        syscall: "open",
        errno,
        code: errnoName(errno),
        path,
        detail: `(${strerror(errno)})`,
      });
    }
    try {
      await this.#run(fd, path, write, bytes);
    } finally {
      c.close(fd);
    }
  }

  async #run(fd: number, path: string, write: boolean, bytes: number): Promise<void> {
    const req = requestSize(bytes, this.bs, this.iodepth);
    const total = Math.ceil(bytes / req);
    const free: number[] = [];
    for (let s = this.iodepth - 1; s >= 0; s--) free.push(s);
    const lengths = new Array<number>(this.iodepth).fill(0);
    const offsets = new Array<number>(this.iodepth).fill(0);
    let next = 0, done = 0, inflight = 0;
    const aio = libaio();
    const wait = nonblockingGetEvents();
    const iocbBase = this.#iocbs.address;
    const bufBase = this.#buffers.address;
    while (done < total) {
      let k = 0;
      while (inflight + k < this.iodepth && next + k < total) {
        const slot = free.pop()!;
        const offset = (next + k) * req;
        const len = Math.min(req, bytes - offset);
        lengths[slot] = len;
        offsets[slot] = offset;
        const at = slot * IOCB_SIZE;
        const v = this.#iocbView;
        v.setBigUint64(at + IOCB.data, BigInt(slot), true);
        v.setInt16(at + IOCB.opcode, write ? IO_CMD_PWRITE : IO_CMD_PREAD, true);
        v.setInt32(at + IOCB.fildes, fd, true);
        v.setBigUint64(at + IOCB.buf, bufBase + BigInt(slot * this.bs), true);
        v.setBigUint64(at + IOCB.nbytes, BigInt(len), true);
        v.setBigInt64(at + IOCB.offset, BigInt(offset), true);
        this.#ptrs[k] = iocbBase + BigInt(at);
        k++;
      }
      if (k > 0) {
        const rc = aio.io_submit(this.#ctx, BigInt(k), this.#ptrBytes);
        if (rc < 0) {
          throw new IoError({
            syscall: "io_submit",
            errno: -rc,
            code: errnoName(-rc),
            path,
            offset: next * req,
          });
        }
        // a partial submit leaves the rest prepared: give their slots back
        for (let j = rc; j < k; j++) {
          free.push(
            Number(
              this.#iocbView.getBigUint64(Number(this.#ptrs[j]! - iocbBase) + IOCB.data, true),
            ),
          );
        }
        next += rc;
        inflight += rc;
      }
      const n = await wait(this.#ctx, 1n, BigInt(this.iodepth), this.#events.pointer);
      if (n < 0) {
        throw new IoError({ syscall: "io_getevents", errno: -n, code: errnoName(-n), path });
      }
      for (let e = 0; e < n; e++) {
        const at = e * IO_EVENT_SIZE;
        const slot = Number(this.#eventView.getBigUint64(at + IO_EVENT.data, true));
        const res = Number(this.#eventView.getBigInt64(at + IO_EVENT.res, true));
        if (res < 0) {
          throw new IoError({
            syscall: write ? "pwrite (aio)" : "pread (aio)",
            errno: -res,
            code: errnoName(-res),
            path,
            offset: offsets[slot]!,
            detail: `(${strerror(-res)})`,
          });
        }
        if (
          res !== lengths[slot] && !this.#finishShort(fd, path, write, slot, res, lengths, offsets)
        ) {
          throw new IoError({
            syscall: write ? "pwrite (aio)" : "pread (aio)",
            errno: EIO,
            code: "EIO",
            path,
            offset: offsets[slot]!,
            detail: `(short transfer: ${res} of ${lengths[slot]} bytes)`,
          });
        }
        free.push(slot);
        inflight--;
        done++;
      }
    }
  }

  /**
   * A short write through aio carries no errno (a full file system shows up
   * as fewer bytes). Writing the rest synchronously either finishes the
   * request or fails with the errno that says why (ENOSPC, EDQUOT, EIO).
   * Returns false for a short read (end of file), which the caller reports.
   */
  #finishShort(
    fd: number,
    path: string,
    write: boolean,
    slot: number,
    res: number,
    lengths: number[],
    offsets: number[],
  ): boolean {
    if (!write) return false;
    const c = libc();
    let at = res;
    const len = lengths[slot]!;
    const base = this.#buffers.address + BigInt(slot * this.bs);
    while (at < len) {
      const p = Deno.UnsafePointer.create(base + BigInt(at))!;
      const n = c.pwrite(fd, p, BigInt(len - at), BigInt(offsets[slot]! + at));
      if (n < 0) {
        const errno = lastErrno();
        throw new IoError({
          syscall: "pwrite",
          errno,
          code: errnoName(errno),
          path,
          offset: offsets[slot]! + at,
          detail: `(${strerror(errno)})`,
        });
      }
      if (n === 0) return false;
      at += n;
    }
    return true;
  }

  /** Destroys the context (waiting for what is in flight) and frees the buffers. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    libaio().io_destroy(this.#ctx);
    freeAligned(this.#buffers);
    freeAligned(this.#iocbs);
    freeAligned(this.#events);
  }
}
