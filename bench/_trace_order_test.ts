import assert from "node:assert/strict";
import { CrossThreadOrder } from "./_trace_order.ts";

Deno.test("a read waits for the other thread's synchronous write it reads, once, and never for its own", () => {
  const o = new CrossThreadOrder();
  o.write(0, 7, 0, 65536, 4, 100);
  assert.deepEqual([...o.read(1, 7, 4096, 8192, 150)], [[0, 5]]);
  // already waited for: nothing more
  assert.deepEqual([...o.read(1, 7, 0, 4096, 160)], []);
  // its own bytes, another file, bytes nobody wrote: nothing
  o.write(1, 7, 65536, 4096, 9, 170);
  assert.deepEqual([...o.read(1, 7, 65536, 4096, 180)], []);
  assert.deepEqual([...o.read(1, 8, 0, 4096, 180)], []);
  assert.deepEqual([...o.read(1, 7, 1 << 20, 4096, 180)], []);
  assert.deepEqual([...o.waitedOn], [0]);
  assert.equal(o.raced, 0);
});

Deno.test("an aio write is done at the io_getevents that leaves its context with nothing in flight", () => {
  const o = new CrossThreadOrder();
  o.submitted(0, 3, 1, 0, 1 << 20, 10);
  o.drained(0, 3, 12, 500);
  assert.deepEqual([...o.read(2, 1, 0, 1 << 20, 600)], [[0, 13]]);
  assert.equal(o.raced, 0);
  assert.equal(o.ordered, 1);
});

Deno.test("a read begun before the write it reads was seen done raced: ordered after the write's issue", () => {
  const o = new CrossThreadOrder();
  o.submitted(0, 3, 1, 0, 4096, 10);
  assert.deepEqual([...o.read(2, 1, 0, 4096, 50)], [[0, 11]]);
  // done at 500, read at 400: raced too
  o.write(0, 2, 0, 4096, 20, 500);
  assert.deepEqual([...o.read(2, 2, 0, 4096, 400)], [[0, 20]]);
  assert.equal(o.raced, 2);
});

Deno.test("after another thread's truncate, unlink or rename, ops on the file wait for it; its gone bytes are no one's", () => {
  const o = new CrossThreadOrder();
  o.write(0, 1, 0, 65536, 0, 10);
  o.cut(0, 1, 1, 20, 8192);
  // the kept pages are still thread 0's; the cut pages have no writer, but the cut orders
  assert.deepEqual([...o.read(1, 1, 0, 4096, 30)], [[0, 2]]);
  const p = new CrossThreadOrder();
  p.write(0, 1, 0, 65536, 0, 10);
  p.cut(0, 1, 5, 20);
  assert.deepEqual([...p.read(1, 1, 0, 65536, 30)], [[0, 6]]);
  assert.deepEqual([...p.writeWaits(2, 1, 30)], [[0, 6]]);
  assert.equal(p.ordered, 0);
});

Deno.test("writes on a context that stays busy are all done at its drain, however many (their pages merged per file)", () => {
  const o = new CrossThreadOrder();
  // 3000 writes of 4 KiB over two files, every other page, then one on another context
  for (let k = 0; k < 3000; k++) o.submitted(0, 1, k % 2, (k * 2) << 12, 4096, k);
  o.submitted(0, 2, 0, 0, 4096, 3000);
  o.drained(0, 1, 3001, 900);
  // a read of each file's pages waits for the drain; the page the other context rewrote is still in flight
  assert.deepEqual([...o.read(1, 1, 2 << 12, 3000 << 13, 1000)], [[0, 3002]]);
  assert.equal(o.raced, 0);
  assert.deepEqual([...o.read(2, 0, 0, 4096, 1000)], [[0, 3001]]);
  assert.equal(o.raced, 1);
});
