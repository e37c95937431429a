/**
 * The contention matrix of several processes that ran it at once (one per
 * node, every group's window started together at a barrier), made into one:
 * each tier's bandwidth alone and in each group is the plain sum of the
 * processes' figures, and every slowdown is recomputed from the sums
 * (docs/multinode.md, "`contention` across nodes"). Pure: it reads the
 * processes' own matrices, nothing else.
 *
 * @module
 */

import {
  CONTENTION_SCHEMA,
  type ContentionGroup,
  type ContentionResult,
  type ContentionSelf,
  type ContentionTogether,
  slowdown,
  slowdownMatrix,
} from "../schema/contention.ts";
import { worstStatus } from "../schema/run_status.ts";

type Bw = { read_bw_bytes: number; write_bw_bytes: number };

function sum(xs: readonly number[]): number {
  return xs.reduce((a, x) => a + x, 0);
}

/** The smallest of the known values; null when one is unknown. */
function least(xs: readonly (number | null)[]): number | null {
  return xs.some((x) => x === null) ? null : Math.min(...(xs as number[]));
}

/** A failure anywhere outranks an interruption anywhere. */

/** true when every process's was, false when any's was, else null. */
function allClear(xs: readonly (boolean | null)[]): boolean | null {
  if (xs.includes(false)) return false;
  return xs.includes(null) ? null : true;
}

/** How many leading entries every list shares, matched by `key`. */
function common<T>(lists: readonly (readonly T[])[], key: (x: T) => string): number {
  const n = Math.min(...lists.map((l) => l.length));
  for (let k = 0; k < n; k++) {
    const first = key(lists[0]![k]!);
    if (lists.some((l) => key(l[k]!) !== first)) return k;
  }
  return n;
}

function sumBw(parts: readonly (Bw | undefined)[]): Bw {
  return {
    read_bw_bytes: sum(parts.map((p) => p?.read_bw_bytes ?? 0)),
    write_bw_bytes: sum(parts.map((p) => p?.write_bw_bytes ?? 0)),
  };
}

/** `self`/`together` figures summed, slowdowns against `base` (the summed baseline). */
function sumSelf(parts: readonly (ContentionSelf | undefined)[], base: Bw | undefined) {
  const bw = sumBw(parts);
  return {
    ...bw,
    slowdown: {
      read: base ? slowdown(base.read_bw_bytes, bw.read_bw_bytes) : null,
      write: base ? slowdown(base.write_bw_bytes, bw.write_bw_bytes) : null,
    },
  };
}

/**
 * One matrix from every process's (by rank; the first one's tiers, pattern
 * and windows stand for all): `alone`, each group's `bw_bytes`, `self` and
 * `together` summed over the processes; slowdowns recomputed from the sums;
 * a group's status the worst of the processes', its `overlap` the least and
 * `layout_clear` true only where every process's was. Only the groups that
 * every process ran (the same key in the same place) are kept.
 *
 * @throws {RangeError} without any matrix.
 *
 * @example
 * ```ts ignore
 * const c = aggregateContention(processes.map((p) => p.contention!));
 * console.log(c.groups[0]!.bw_bytes); // each tier's bandwidth summed over the processes
 * ```
 */
export function aggregateContention(parts: readonly ContentionResult[]): ContentionResult {
  const first = parts[0];
  if (first === undefined) throw new RangeError("aggregateContention() needs one matrix or more");
  const alone: ContentionResult["alone"] = {};
  for (const t of first.tiers) alone[t] = sumBw(parts.map((p) => p.alone[t]));
  const n = common(parts.map((p) => p.groups), (g) => `${g.key} ${g.direction}`);
  const groups: ContentionGroup[] = [];
  for (let k = 0; k < n; k++) {
    const each = parts.map((p) => p.groups[k]!);
    const { error: _, ...g } = each[0]!;
    const bw: Record<string, number> = {};
    const slow: Record<string, number | null> = {};
    for (const t of g.tiers) {
      bw[t] = sum(each.map((x) => x.bw_bytes[t] ?? 0));
      slow[t] = slowdown(alone[t]?.[`${g.rw[t]!}_bw_bytes`] ?? 0, bw[t]!);
    }
    const status = worstStatus(each.map((x) => x.status));
    const failed = each.find((x) => x.status === status && x.error !== undefined);
    groups.push({
      ...g,
      status,
      bw_bytes: bw,
      slowdown: slow,
      overlap: least(each.map((x) => x.overlap)),
      layout_clear: allClear(each.map((x) => x.layout_clear)),
      ...(failed ? { error: failed.error! } : {}),
    });
  }
  const out: ContentionResult = {
    schema: CONTENTION_SCHEMA,
    status: worstStatus(parts.map((p) => p.status)),
    pattern: first.pattern,
    tiers: first.tiers,
    alone,
    groups,
    slowdown: slowdownMatrix(alone, groups),
  };
  const error = parts.find((p) => p.error !== undefined)?.error;
  if (error !== undefined && out.status !== "ok") out.error = error;
  if (parts.every((p) => p.self !== undefined)) {
    const self: Record<string, ContentionSelf> = {};
    for (const t of Object.keys(first.self!)) {
      const each = parts.map((p) => p.self![t]);
      self[t] = { ...sumSelf(each, alone[t]), overlap: least(each.map((x) => x?.overlap ?? null)) };
    }
    out.self = self;
  }
  if (parts.every((p) => p.together !== undefined)) {
    const m = common(parts.map((p) => p.together!), (x) => x.key);
    const together: ContentionTogether[] = [];
    for (let k = 0; k < m; k++) {
      const each = parts.map((p) => p.together![k]!);
      const members: Record<string, ContentionSelf> = {};
      for (const t of each[0]!.tiers) {
        members[t] = { ...sumSelf(each.map((x) => x.members[t]), out.self?.[t]), overlap: null };
      }
      together.push({
        tiers: each[0]!.tiers,
        key: each[0]!.key,
        members,
        overlap: least(each.map((x) => x.overlap)),
      });
    }
    out.together = together;
  }
  return out;
}
