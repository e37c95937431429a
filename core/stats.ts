/**
 * Small statistics every folder needs: the median of a list of figures and
 * the length of a union of intervals.
 *
 * @module
 */

/**
 * The median of `xs` (the mean of the middle two for an even count), without
 * reordering `xs`. `NaN` for an empty list: there is no middle figure, and a
 * `NaN` stays visible in arithmetic and is written as `null` in JSON; a
 * caller that wants a figure for no samples says which
 * (`xs.length === 0 ? 0 : median(xs)`).
 *
 * @example
 * ```ts
 * import { median } from "./stats.ts";
 * console.assert(median([3, 1, 2]) === 2 && median([4, 1, 2, 3]) === 2.5);
 * console.assert(Number.isNaN(median([])));
 * ```
 */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * The length covered by the union of the intervals `[start, end]`, in their
 * unit: overlaps count once. 0 for none; an interval that ends before it
 * starts covers nothing. Does not reorder `intervals`; intervals that start
 * together are taken in the order given.
 *
 * @example
 * ```ts
 * import { unionLength } from "./stats.ts";
 * console.assert(unionLength([[5, 6], [0, 2], [1, 3]]) === 4);
 * console.assert(unionLength([]) === 0);
 * ```
 */
export function unionLength(intervals: readonly (readonly [number, number])[]): number {
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  let total = 0, reach = -Infinity;
  for (const [s, e] of sorted) {
    if (e <= reach || e < s) continue;
    total += e - Math.max(s, reach);
    reach = e;
  }
  return total;
}

/**
 * `x` rounded to 3 decimals (µs in ms, ms in s): how documents keep times
 * readable.
 *
 * @example
 * ```ts
 * import { round3 } from "./stats.ts";
 * console.assert(round3(1.23456) === 1.235);
 * ```
 */
export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
