import assert from "node:assert/strict";
import { Deadlines } from "./deadlines.ts";

Deno.test("Deadlines: a request that settles in time keeps its outcome; one that does not fails with late()'s error, not before its time", async () => {
  const deadlines = new Deadlines(200);
  assert.equal(await deadlines.within(Promise.resolve(7), () => new Error("late")), 7);
  await assert.rejects(
    deadlines.within(Promise.reject(new Error("own")), () => new Error("late")),
    /own/,
  );
  const t0 = performance.now();
  const never = new Promise<void>(() => {});
  const hold = setTimeout(() => {}, 5000); // the pending promise alone keeps nothing alive
  const e = await deadlines.within(never, () => new Error("late")).catch((e) => e);
  const took = performance.now() - t0;
  clearTimeout(hold);
  assert.equal(e.message, "late");
  assert.ok(took >= 199, `fired after ${took} ms`);
});

Deno.test("Deadlines: a deadline removed in time never fires; the next one still does", async () => {
  const deadlines = new Deadlines(50);
  let fired = 0;
  const handle = deadlines.add(() => fired++);
  deadlines.remove(handle);
  deadlines.add(() => fired++);
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(fired, 1);
});

Deno.test("Deadlines: a deadline added while another is pending fires at its own time, before a timer set for a little later", async () => {
  const deadlines = new Deadlines(1600);
  const order: string[] = [];
  const first = deadlines.add(() => order.push("first"));
  await new Promise((r) => setTimeout(r, 450));
  deadlines.add(() => order.push("second"));
  // a timer armed at the same moment for 40 ms more: the second deadline must come before it
  await new Promise((r) => setTimeout(r, 1640)).then(() => order.push("timer"));
  deadlines.remove(first);
  assert.deepEqual(order, ["first", "second", "timer"]);
});
