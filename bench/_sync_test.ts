import assert from "node:assert/strict";
import { AbortedError, NodeSync } from "./_sync.ts";

/**
 * Deno's main thread does not count an `Atomics.waitAsync` as pending work
 * (a Worker stays alive on its message port), so these tests keep a timer
 * running while they wait.
 */
function test(name: string, fn: () => Promise<void> | void): void {
  Deno.test(name, async () => {
    const keep = setInterval(() => {}, 5);
    try {
      await fn();
    } finally {
      clearInterval(keep);
    }
  });
}

test("NodeSync.enter() admits at most `limit` holders and wakes a waiter on leave()", async () => {
  const sync = new NodeSync(2, 1);
  await sync.enter(0, false, 1);
  let second = false;
  const waiting = sync.enter(0, false, 1).then(() => second = true);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(second, false, "a second reader got in past a limit of 1");
  // the write side of the same path is a separate count
  await sync.enter(0, true, 1);
  sync.leave(0, true);
  sync.leave(0, false);
  await waiting;
  assert.equal(second, true);
  sync.leave(0, false);
  assert.deepEqual(sync.peak(0), [1, 1]);
});

test("NodeSync.barrier() releases only when every rank has arrived, generation after generation", async () => {
  const sync = new NodeSync(3, 0);
  for (let round = 0; round < 3; round++) {
    const arrived: number[] = [];
    const a = sync.barrier().then(() => arrived.push(0));
    const b = sync.barrier().then(() => arrived.push(1));
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(arrived, [], `round ${round}: released before the third rank came`);
    await sync.barrier();
    await Promise.all([a, b]);
    assert.equal(arrived.length, 2);
  }
});

test("NodeSync.abort() wakes every waiter with AbortedError", async () => {
  const sync = new NodeSync(2, 1);
  await sync.enter(0, true, 1);
  const atBarrier = sync.barrier();
  const atPath = sync.enter(0, true, 1);
  sync.abort();
  await assert.rejects(atBarrier, AbortedError);
  await assert.rejects(atPath, AbortedError);
  await assert.rejects(sync.barrier(), AbortedError);
});

test("NodeSync attached from buffers shares counters with its maker", () => {
  const a = new NodeSync(2, 1);
  const b = new NodeSync(2, 1, a.buffers);
  b.count(1, true, 4096);
  b.count(0, false, 100);
  assert.deepEqual(a.totals(), [100, 4096]);
  b.iteration = 3;
  assert.equal(a.iteration, 3);
});

Deno.test("NodeSync counts bytes per path as well as per rank", () => {
  const a = new NodeSync(2, 2);
  const b = new NodeSync(2, 2, a.buffers);
  b.count(0, false, 100, 0);
  b.count(1, false, 10, 0);
  b.count(1, true, 4096, 1);
  b.count(0, true, 7);
  assert.deepEqual(a.totals(), [110, 4103]);
  assert.deepEqual(a.pathTotals(), [[110, 0], [0, 4096]]);
});

test("NodeSync.gate() holds every rank until open(), and abort() wakes a rank held there", async () => {
  const a = new NodeSync(2, 1);
  const b = new NodeSync(2, 1, a.buffers);
  let through = 0;
  const held = [a.gate(), b.gate()].map((p) => p.then(() => through++));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(through, 0, "a rank went past a closed gate");
  a.open();
  await Promise.all(held);
  assert.equal(through, 2);
  await b.gate(); // open stays open

  const c = new NodeSync(1, 0);
  const waiting = c.gate();
  c.abort();
  await assert.rejects(waiting, AbortedError);
});
