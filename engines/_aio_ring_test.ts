import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { allocAligned, cString, freeAligned, libc, O } from "../core/libc.ts";
import { needing } from "../tests/_requirements.ts";
import {
  AioRing,
  fromLibaio,
  fromSyscalls,
  IO_CMD_PREAD,
  IO_EVENT,
  IO_EVENT_SIZE,
  IOCB,
  IOCB_SIZE,
  type Libaio,
  timespec,
} from "./_aio_ring.ts";

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

Deno.test("AioRing writes and reads back its slots with O_DIRECT, through reap() and wait()", async () => {
  const dir = await tempDirOnDisk();
  const path = join(dir, "f");
  const fail = (syscall: string, errno: number): never => {
    throw new Error(`${syscall}: ${errno}`);
  };
  const ring = AioRing.open(2, 8192, 4096, fail);
  const fd = libc().open(cString(path), O.RDWR | O.CREAT | O.DIRECT, 0o600);
  try {
    ring.buffer(0).fill(1);
    ring.buffer(1).fill(2);
    ring.prepare(0, fd, true, 0, 8192);
    ring.prepare(1, fd, true, 8192, 8192);
    assert.equal(ring.submit([0, 1]), 2);
    let done = 0;
    while (done < 2) {
      const n = ring.reap(timespec(1e9));
      for (let e = 0; e < n; e++) assert.equal(ring.eventResult(e), 8192);
      done += n;
    }
    ring.buffers.bytes.fill(0);
    ring.prepare(1, fd, false, 0, 4096);
    assert.equal(ring.submitOne(1), 1);
    assert.equal(await ring.wait(), 1);
    assert.equal(ring.eventSlot(0), 1);
    assert.equal(ring.eventResult(0), 4096);
    assert.deepEqual(ring.buffer(1).subarray(0, 4096), new Uint8Array(4096).fill(1));
    ring.prepare(0, fd, false, 1, 4096);
    assert.equal(ring.submitOne(0), 1);
    assert.equal(await ring.wait(), 1);
    assert.equal(ring.eventResult(0), -22, "a misaligned offset completes with -EINVAL");
  } finally {
    libc().close(fd);
    ring.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AioRing.takeReady() reads completions from the context's ring without io_getevents, which then sees only later ones", async () => {
  // Buffered writes to tmpfs complete inside io_submit: their completions are posted at once.
  const dir = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tierbench-aio-ring-" });
  const ring = AioRing.open(4, 4096, 4096, (syscall, errno) => {
    throw new Error(`${syscall}: ${errno}`);
  });
  const fd = libc().open(cString(join(dir, "f")), O.RDWR | O.CREAT, 0o600);
  try {
    assert.equal(ring.takeReady(), 0, "nothing posted yet");
    // Round the ring more than once: its head wraps at its own size.
    for (let round = 0; round < 600; round++) {
      ring.prepare(2, fd, true, 0, 4096);
      ring.prepare(3, fd, true, 4096, 1000);
      assert.equal(ring.submit([2, 3]), 2);
      assert.equal(ring.takeReady(), 2, `round ${round}`);
      assert.deepEqual([ring.eventSlot(0), ring.eventResult(0)], [2, 4096]);
      assert.deepEqual([ring.eventSlot(1), ring.eventResult(1)], [3, 1000]);
      ring.release(2);
      assert.equal(ring.takeReady(), 0, "given back");
    }
    ring.prepare(1, fd, false, 0, 4096);
    assert.equal(ring.submitOne(1), 1);
    assert.equal(ring.reap(timespec(1e9)), 1, "io_getevents finds only the later completion");
    assert.deepEqual([ring.eventSlot(0), ring.eventResult(0)], [1, 4096]);
    assert.equal(ring.takeReady(), 0);
  } finally {
    libc().close(fd);
    ring.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AioRing's slot buffers start on a page boundary at a 512-byte sector alignment, so a 1 MiB request pins 256 pages, not 257", () => {
  const ring = AioRing.open(8, 1 << 20, 512, (syscall, errno) => {
    throw new Error(`${syscall} ${errno}`);
  });
  try {
    assert.equal(ring.buffers.address % 4096n, 0n);
  } finally {
    ring.close();
  }
});

Deno.test("AioRing.open() hands a failed io_setup's errno to its caller", () => {
  assert.throws(
    () =>
      AioRing.open(-1, 4096, 4096, (syscall, errno) => {
        throw new RangeError(`${syscall} ${errno}`);
      }),
    { name: "RangeError", message: "io_setup 22" },
  );
});

Deno.test(needing(["libaio"], {
  name:
    "libaio stays mapped after the Worker that opened it has ended, so a wait of that Worker still on the blocking pool returns into its code",
  fn: async () => {
    const worker = new URL("./testdata/open_libaio_worker.ts", import.meta.url).href;
    // A process of its own, so no other test has loaded libaio on the main thread.
    const code = `
      const w = new Worker(${JSON.stringify(worker)}, { type: "module" });
      const source = await new Promise((r) => (w.onmessage = (e) => r(e.data)));
      w.terminate();
      await new Promise((r) => setTimeout(r, 200));
      const mapped = Deno.readTextFileSync("/proc/self/maps").includes(source);
      console.log(JSON.stringify({ source, mapped }));
    `;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--ext=ts", code],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const got = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
    assert.match(got.source, /^libaio\.so/);
    assert.equal(got.mapped, true, "the Worker's end unloaded libaio");
  },
}));

Deno.test({
  name:
    "AioRing.submitAsync leaves the thread's event loop free while io_submit blocks, and returns once the I/O is done",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "tierbench-aio-fifo-" });
    const fifo = join(dir, "fifo");
    try {
      assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
      // O_RDWR: the open waits for no writer, and a read of the empty pipe blocks io_submit
      // (aio on a pipe runs inside the submission), as O_DIRECT on ceph-fuse does.
      const fd = libc().open(cString(fifo), O.RDWR | O.CLOEXEC, 0);
      assert.ok(fd >= 0);
      const ring = AioRing.open(1, 4096, 4096, (syscall, errno) => {
        throw new Error(`${syscall}: errno ${errno}`);
      });
      const writer = new Deno.Command("sh", {
        args: ["-c", 'sleep 0.3; dd if=/dev/zero of="$0" bs=4096 count=1 status=none', fifo],
      }).spawn();
      try {
        ring.buffer(0).fill(0xff);
        ring.prepare(0, fd, false, 0, 4096);
        let submitted = false;
        const submit = ring.submitAsync([0]).then((n) => {
          submitted = true;
          return n;
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.equal(submitted, false, "the timer ran only after io_submit returned");
        assert.equal(await submit, 1);
        assert.equal(await ring.wait(), 1);
        assert.equal(ring.eventResult(0), 4096);
        assert.equal(ring.buffer(0)[0], 0);
      } finally {
        await writer.status;
        ring.close();
        libc().close(fd);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
