import assert from "node:assert/strict";
import { allocIoBuffer, cString, freeAligned, libc } from "../../core/libc.ts";
import { UringQueue } from "../../engines/mod.ts";
import { withShmDir } from "../../tests/_helpers.ts";
import { offsets, psyncLoop, uringLoop, warmUp } from "./_bare_loops.ts";

const SIZE = 1 << 20;

/** Runs `f` on a descriptor of a 1 MiB file of random bytes on /dev/shm. */
async function onFile(f: (fd: number) => void): Promise<void> {
  await withShmDir(async (dir) => {
    const path = `${dir}/f`;
    const data = new Uint8Array(SIZE);
    for (let at = 0; at < SIZE; at += 65536) crypto.getRandomValues(data.subarray(at, at + 65536));
    await Deno.writeFile(path, data);
    const fd = libc().open(cString(path), 0, 0);
    try {
      f(fd);
    } finally {
      libc().close(fd);
    }
  });
}

function uring(depth: number, bs: number, fd: number): UringQueue {
  return UringQueue.open(
    { entries: depth, slotBytes: bs, alignment: 4096, files: [fd] },
    (s, e) => {
      throw new Error(`${s}: ${e}`);
    },
  );
}

Deno.test("the bare loops' offsets go block by block and wrap (read), or stay on whole blocks inside the file (randread)", () => {
  const seq = offsets("read", 4096, 3 * 4096);
  assert.deepEqual([seq(), seq(), seq(), seq()], [0, 4096, 8192, 0]);
  const rand = offsets("randread", 4096, 64 * 4096);
  const seen = new Set(Array.from({ length: 1000 }, () => rand()));
  for (const o of seen) assert.ok(o % 4096 === 0 && o >= 0 && o < 64 * 4096, String(o));
  assert.ok(seen.size > 32, `${seen.size} distinct blocks of 64`);
});

Deno.test("the io_uring bare loop reads exactly the count asked at any depth, with or without the clock, and leaves nothing in flight", async () => {
  await onFile((fd) => {
    for (const depth of [1, 4]) {
      const q = uring(depth, 65536, fd);
      try {
        const loop = uringLoop(q, fd, 65536, depth, offsets("read", 65536, SIZE));
        assert.equal(loop({ count: 101, clock: true }).ios, 101);
        const r = loop({ count: 37, clock: false });
        assert.equal(r.ios, 37);
        // a thread's getrusage advances at the scheduler's tick, so 37 reads may show none
        assert.ok(r.cpu.usr >= 0 && r.cpu.sys >= 0, `${r.cpu.usr}+${r.cpu.sys} ns`);
        assert.equal(q.ring.inFlight, 0);
      } finally {
        q.close();
      }
    }
  });
});

Deno.test("the bare loops run by time with the clock and count its CPU, and a short read fails naming the call", async () => {
  await onFile((fd) => {
    const q = uring(2, 4096, fd);
    try {
      const loop = uringLoop(q, fd, 4096, 2, offsets("randread", 4096, SIZE));
      warmUp(loop);
      const timed = loop({ seconds: 0.05, clock: true });
      assert.ok(timed.ios > 10);
      assert.ok(timed.cpu.usr + timed.cpu.sys > 0, "50 ms of reads span several ticks");
      // reads from the file's last block on run past its end: 4096 asked of 1 MiB + 2048
      const past = uringLoop(q, fd, 4096, 2, () => SIZE - 2048);
      assert.throws(
        () => past({ count: 1, clock: false }),
        /read \(io_uring\): 2048 of 4096 bytes/,
      );
    } finally {
      q.close();
    }
    const buf = allocIoBuffer(4096, 4096);
    try {
      assert.ok(psyncLoop(fd, buf.pointer, 4096, () => 0)({ seconds: 0.05, clock: true }).ios > 10);
      const past = psyncLoop(fd, buf.pointer, 4096, () => SIZE - 2048);
      assert.throws(() => past({ count: 1, clock: false }), /pread: 2048 of 4096 bytes/);
    } finally {
      freeAligned(buf);
    }
  });
});
