import assert from "node:assert/strict";
import { join } from "node:path";
import { cString, libc, O } from "../core/libc.ts";
import { AioQueue } from "./_aio_queue.ts";

Deno.test("AioQueue submits its queued slots oldest first, one alone or several at once, and is empty after each submit", async () => {
  // Buffered writes to tmpfs complete inside io_submit: their completions are posted at once.
  const dir = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tierbench-aio-queue-" });
  const q = AioQueue.open(4, 4096, 4096, (syscall, errno) => {
    throw new Error(`${syscall}: ${errno}`);
  });
  const fd = libc().open(cString(join(dir, "f")), O.RDWR | O.CREAT, 0o600);
  try {
    for (let round = 0; round < 300; round++) {
      // A batch of three in an order of their own, then one alone (io_submit's one-entry path).
      for (const [slot, len] of [[3, 100], [0, 200], [2, 300]]) {
        q.prepare(slot!, true, fd, 0, slot! * 4096, len!);
      }
      assert.equal(q.queued, 3);
      assert.equal(q.submit(), 3);
      assert.equal(q.queued, 0, `round ${round}: the kernel took them all`);
      q.prepare(1, true, fd, 0, 4096, 400);
      assert.equal(q.submit(), 1);
      assert.equal(q.queued, 0);
      const n = q.reapReady() || q.getevents();
      assert.equal(n, 4);
      const done = Array.from({ length: n }, (_, e) => [q.eventSlot(e), q.eventResult(e)]);
      assert.deepEqual(done, [[3, 100], [0, 200], [2, 300], [1, 400]], `round ${round}`);
      q.release(n);
    }
  } finally {
    libc().close(fd);
    q.close();
    await Deno.remove(dir, { recursive: true });
  }
});
