import assert from "node:assert/strict";
import { median, medianRatio, unionLength } from "./stats.ts";

Deno.test("median() of an odd list is its middle figure, of an even one the mean of the middle two", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 2, 3]), 2.5);
  assert.equal(median([7]), 7);
  assert.equal(median([-1, -3]), -2);
});

Deno.test("median() of an empty list is NaN", () => {
  assert.ok(Number.isNaN(median([])));
});

Deno.test("median() leaves its argument as it was", () => {
  const xs = [3, 1, 2];
  median(xs);
  assert.deepEqual(xs, [3, 1, 2]);
});

Deno.test("median() sorts numerically, not as text", () => {
  assert.equal(median([10, 9, 100]), 10);
});

Deno.test("unionLength() counts overlaps once and gaps not at all", () => {
  assert.equal(unionLength([[0, 2], [1, 3]]), 3);
  assert.equal(unionLength([[5, 6], [0, 2], [1, 3]]), 4);
  assert.equal(unionLength([[0, 10], [2, 3], [4, 5]]), 10, "nested intervals add nothing");
  assert.equal(unionLength([[0, 1], [1, 2]]), 2, "touching intervals join");
});

Deno.test("unionLength() of no intervals is 0, and an interval ending before it starts covers nothing", () => {
  assert.equal(unionLength([]), 0);
  assert.equal(unionLength([[3, 1]]), 0);
  assert.equal(unionLength([[3, 1], [0, 2]]), 2);
  assert.equal(unionLength([[4, 4]]), 0);
});

Deno.test("unionLength() leaves its argument as it was", () => {
  const xs: [number, number][] = [[5, 6], [0, 2]];
  unionLength(xs);
  assert.deepEqual(xs, [[5, 6], [0, 2]]);
});

Deno.test("medianRatio() leaves out the rounds whose base moved nothing, and is NaN when none is left", () => {
  assert.equal(medianRatio([2, 3, 5], [4, 0, 10]), 0.5);
  assert.equal(medianRatio([1, 2, 9], [1, 1, 1]), 2);
  assert.ok(Number.isNaN(medianRatio([1, 2], [0, -1])));
  assert.ok(Number.isNaN(medianRatio([], [])));
});
