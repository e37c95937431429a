/**
 * How the contention matrix is laid out and checked: tier labels, the groups
 * and mixed pairs it runs, and whether members' measured windows overlapped.
 *
 * @module
 */

import type { TierSpec } from "../core/config.ts";
import type { ContentionWindow } from "../schema/contention.ts";

/**
 * Labels for tiers: the kind, numbered from 1 where two tiers are of one kind.
 *
 * @example
 * ```ts
 * import { tierLabels } from "./contention_groups.ts";
 * const labels = tierLabels([
 *   { kind: "memory", path: "/dev/shm" },
 *   { kind: "file", path: "/a" },
 *   { kind: "file", path: "/b" },
 * ]);
 * console.assert(labels.join() === "memory,file1,file2");
 * ```
 */
export function tierLabels(specs: readonly TierSpec[]): string[] {
  const count = new Map<string, number>();
  for (const s of specs) count.set(s.kind, (count.get(s.kind) ?? 0) + 1);
  const seen = new Map<string, number>();
  return specs.map((s) => {
    if (count.get(s.kind) === 1) return s.kind;
    const n = (seen.get(s.kind) ?? 0) + 1;
    seen.set(s.kind, n);
    return `${s.kind}${n}`;
  });
}

/**
 * The groups of the matrix, in the order they run: each item alone, then each
 * pair, then all of them together when there are three or more.
 *
 * @example
 * ```ts
 * import { contentionGroups } from "./contention_groups.ts";
 * const g = contentionGroups(["memory", "file", "pfs"]).map((x) => x.join("+"));
 * console.assert(g.join() === "memory,file,pfs,memory+file,memory+pfs,file+pfs,memory+file+pfs");
 * ```
 */
export function contentionGroups<T>(items: readonly T[]): T[][] {
  const groups: T[][] = items.map((x) => [x]);
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) groups.push([items[i]!, items[j]!]);
  }
  if (items.length >= 3) groups.push([...items]);
  return groups;
}

/**
 * The mixed-direction groups, in the order they run: for each pair in
 * {@linkcode contentionGroups}' order, the first reading while the second
 * writes, then the second reading while the first writes (every ordered
 * pair: n·(n−1) groups).
 *
 * @example
 * ```ts
 * import { mixedContentionGroups } from "./contention_groups.ts";
 * const g = mixedContentionGroups(["memory", "file"]).map((x) => `${x.read}<${x.write}`);
 * console.assert(g.join() === "memory<file,file<memory");
 * ```
 */
export function mixedContentionGroups<T>(items: readonly T[]): { read: T; write: T }[] {
  const groups: { read: T; write: T }[] = [];
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) {
      groups.push({ read: items[i]!, write: items[j]! }, { read: items[j]!, write: items[i]! });
    }
  }
  return groups;
}

/**
 * The fraction of `runtimeMs` during which every window was measuring; null
 * when a window is unknown.
 *
 * @example
 * ```ts
 * import { windowOverlap } from "./contention_groups.ts";
 * const w = (s: number) => ({ layout_start: 0, ramp_start: s, measure_start: s, measure_end: s + 1000 });
 * console.assert(windowOverlap([w(0), w(100)], 1000) === 0.9);
 * ```
 */
export function windowOverlap(
  windows: readonly (ContentionWindow | null)[],
  runtimeMs: number,
): number | null {
  if (windows.some((w) => w === null) || !(runtimeMs > 0)) return null;
  const ws = windows as ContentionWindow[];
  const common = Math.min(...ws.map((w) => w.measure_end)) -
    Math.max(...ws.map((w) => w.measure_start));
  return Math.round(Math.max(0, common / runtimeMs) * 1000) / 1000;
}

/**
 * Whether no window's layout fell inside another window's measurement: its
 * layout ended (`layout_end`, else its ramp's start) no later than the other
 * began measuring, or began after the other ended; null when a window is
 * unknown. Members that meet once laid out are clear however late one of
 * them starts its ramp.
 *
 * @example
 * ```ts
 * import { layoutClear } from "./contention_groups.ts";
 * const a = { layout_start: 0, ramp_start: 10, measure_start: 1010, measure_end: 2010 };
 * const late = { layout_start: 0, ramp_start: 1100, measure_start: 2100, measure_end: 3100 };
 * console.assert(layoutClear([a, { ...a, ramp_start: 50 }]) === true);
 * console.assert(layoutClear([a, late]) === false);
 * // no ramp: laid out and met at 500, the second started 3 ms after the first
 * const met = { layout_start: 0, layout_end: 500, ramp_start: 500.2, measure_start: 500.2 };
 * const next = { ...met, ramp_start: 503.1, measure_start: 503.1, measure_end: 1503 };
 * console.assert(layoutClear([{ ...met, measure_end: 1500 }, next]) === true);
 * ```
 */
export function layoutClear(windows: readonly (ContentionWindow | null)[]): boolean | null {
  if (windows.some((w) => w === null)) return null;
  const ws = windows as ContentionWindow[];
  return ws.every((b, i) =>
    ws.every((a, j) =>
      i === j || (b.layout_end ?? b.ramp_start) <= a.measure_start ||
      b.layout_start >= a.measure_end
    )
  );
}

/**
 * Which group of the matrix each of a contention document's runs belongs to
 * (numbered from 0 in the order they ran), from the runs' names
 * (`<label> <direction> <group>`): each run alone is a group of its own;
 * the members of a group ran one after another under one group name, in one
 * direction unless the group is mixed (`memory:read+file:write`) or reads and
 * writes at once (`… read+write`). fio's `groupid` in `--output-format
 * fio-json`.
 *
 * @example
 * ```ts
 * import { contentionRunGroups } from "./contention_groups.ts";
 * const ids = contentionRunGroups([
 *   "memory read alone",
 *   "file read alone",
 *   "memory read memory+file",
 *   "file read memory+file",
 *   "memory write memory+file",
 *   "file write memory+file",
 * ]);
 * console.assert(ids.join() === "0,1,2,2,3,3");
 * ```
 */
export function contentionRunGroups(names: readonly string[]): number[] {
  const ids: number[] = [];
  let prev: { group: string; direction: string } | undefined;
  let id = -1;
  for (const name of names) {
    const [, direction = "", ...rest] = name.split(" ");
    const group = rest.join(" ");
    // one direction per group, except mixed pairs (`a:read+b:write`), a tier reading and writing
    // (`read+write`) and a concurrency point's readers beside its writers (`1m 2p mixed`)
    const oneDirection = !group.includes(":") && !group.endsWith("read+write") &&
      !group.endsWith(" mixed");
    const same = prev !== undefined && group !== "alone" && group === prev.group &&
      (!oneDirection || direction === prev.direction);
    if (!same) id++;
    prev = { group, direction };
    ids.push(id);
  }
  return ids;
}
