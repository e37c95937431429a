/**
 * Small statistics every folder needs: the median of a list of figures, the
 * median of per-round ratios and the length of a union of intervals.
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
 * The median over rounds of `xs[i] / bases[i]`, leaving out the rounds whose
 * base is not a positive figure (a ceiling that moved nothing in its window
 * says nothing of what the others reached). `NaN` when no round has one.
 *
 * @example
 * ```ts
 * import { medianRatio } from "./stats.ts";
 * console.assert(medianRatio([2, 3, 5], [4, 0, 10]) === 0.5);
 * console.assert(Number.isNaN(medianRatio([1], [0])));
 * ```
 */
export function medianRatio(xs: readonly number[], bases: readonly number[]): number {
  const ratios: number[] = [];
  xs.forEach((x, i) => {
    const b = bases[i];
    if (b !== undefined && b > 0) ratios.push(x / b);
  });
  return median(ratios);
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
