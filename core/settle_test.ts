import assert from "node:assert/strict";
import { settleAll } from "./settle.ts";

const after = <T>(ms: number, value: T) =>
  new Promise<T>((res) => setTimeout(() => res(value), ms));
const failAfter = (ms: number, message: string) =>
  new Promise<never>((_, rej) => setTimeout(() => rej(new Error(message)), ms));

Deno.test("settleAll resolves with every value in order when all succeed", async () => {
  assert.deepEqual(await settleAll([after(10, "a"), after(0, "b")]), ["a", "b"]);
});

Deno.test("settleAll rejects with the first failure only after the slower tasks have ended", async () => {
  let slowEnded = false;
  const slow = after(40, "slow").then((v) => {
    slowEnded = true;
    return v;
  });
  await assert.rejects(settleAll([slow, failAfter(5, "first")]), /^Error: first$/);
  assert.ok(slowEnded, "settleAll rejected while a task was still running");
});

Deno.test("settleAll rejects with the earliest failure in time, not in order, and tells onFailure once", async () => {
  const seen: string[] = [];
  await assert.rejects(
    settleAll(
      [failAfter(30, "late"), failAfter(5, "early")],
      (err) => seen.push((err as Error).message),
    ),
    /^Error: early$/,
  );
  assert.deepEqual(seen, ["early"]);
});
