import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";
import { allocAligned, cString, freeAligned, libc, O } from "../tiers/_libc.ts";
import {
  fromLibaio,
  fromSyscalls,
  IO_CMD_PREAD,
  IO_EVENT,
  IO_EVENT_SIZE,
  IOCB,
  IOCB_SIZE,
  type Libaio,
} from "./_libaio.ts";

/** Reads 4 KiB at `offset` with one iocb; returns the completion's res. */
function readOnce(aio: Libaio, fd: number, offset: number): number {
  const ctxOut = new Uint8Array(8);
  assert.equal(aio.io_setup(4, ctxOut), 0);
  const ctx = Deno.UnsafePointer.create(new DataView(ctxOut.buffer).getBigUint64(0, true))!;
  const buf = allocAligned(4096, 4096);
  const iocb = allocAligned(IOCB_SIZE, IOCB_SIZE);
  try {
    iocb.bytes.fill(0);
    const v = new DataView(iocb.bytes.buffer);
    v.setBigUint64(IOCB.data, 7n, true);
    v.setInt16(IOCB.opcode, IO_CMD_PREAD, true);
    v.setInt32(IOCB.fildes, fd, true);
    v.setBigUint64(IOCB.buf, buf.address, true);
    v.setBigUint64(IOCB.nbytes, 4096n, true);
    v.setBigInt64(IOCB.offset, BigInt(offset), true);
    const ptrs = new Uint8Array(8);
    new DataView(ptrs.buffer).setBigUint64(0, iocb.address, true);
    assert.equal(aio.io_submit(ctx, 1n, ptrs), 1);
    const events = new Uint8Array(IO_EVENT_SIZE);
    const timeout = new Uint8Array(16);
    new DataView(timeout.buffer).setBigInt64(0, 5n, true);
    assert.equal(aio.io_getevents(ctx, 1n, 1n, events, timeout), 1);
    const ev = new DataView(events.buffer);
    assert.equal(ev.getBigUint64(IO_EVENT.data, true), 7n);
    return Number(ev.getBigInt64(IO_EVENT.res, true));
  } finally {
    aio.io_destroy(ctx);
    freeAligned(buf);
    freeAligned(iocb);
  }
}

for (const [name, make] of [["libaio.so.1", fromLibaio], ["syscall()", fromSyscalls]] as const) {
  Deno.test(needing(make === fromLibaio ? ["libaio"] : [], {
    name: `io_submit() through ${name} reads with O_DIRECT and reports -errno per I/O`,
    fn: async () => {
      const aio = make()!;
      const dir = await tempDirOnDisk();
      const path = join(dir, "f");
      await Deno.writeFile(path, new Uint8Array(65536).fill(1));
      const fd = libc().open(cString(path), O.RDONLY | O.DIRECT, 0);
      try {
        assert.equal(readOnce(aio, fd, 4096), 4096);
        assert.equal(readOnce(aio, fd, 1), -22, "a misaligned offset completes with -EINVAL");
      } finally {
        libc().close(fd);
        await Deno.remove(dir, { recursive: true });
      }
    },
  }));
}

Deno.test("io_setup() through syscall() returns -errno for a bad argument", () => {
  assert.equal(fromSyscalls().io_setup(-1, new Uint8Array(8)), -22);
});
