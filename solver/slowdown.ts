/**
 * Slowdown lookups in a profile's contention matrix: how much a tier slows
 * when others do I/O beside it, measured, bounded or assumed.
 *
 * @module
 */

import type { Direction, Profile, ProfileContention } from "../schema/profile.ts";
import { type OtherTier, slowdownKeyOf } from "./profile.ts";
/** How a slowdown was found. */
export type SlowdownStatus =
  /** No other tier: 1. */
  | "alone"
  /** The matrix has the group. */
  | "measured"
  /** The tier moved nothing in the group: the factor is the least it can be (see lookupSlowdown). */
  | "starved"
  /** The matrix lacks the group (or the profile has no matrix): 1. */
  | "unmeasured";

/** A slowdown and how it was found. */
export interface SlowdownLookupResult {
  /** ≥ 0; 1 when unmeasured or alone. */
  slowdown: number;
  status: SlowdownStatus;
  /** The key looked up in `slowdown[direction][tier]` (`""` alone). */
  key: string;
}

/**
 * The least slowdown a starved tier can have had: it moved less than one
 * request in the window, so alone bandwidth × window / request size; undefined
 * where the matrix does not say its window, request size or alone bandwidth.
 */
function starvedBound(
  c: ProfileContention,
  tier: string,
  direction: Direction,
): number | undefined {
  const alone = c.alone?.[tier]?.[`${direction}_bw_bytes`];
  if (!(alone && alone > 0) || !c.bs || !c.runtime_ms) return undefined;
  return Math.max(1, Math.ceil((alone * (c.runtime_ms / 1000) / c.bs) * 1000) / 1000);
}

/**
 * The slowdown of `tier` doing `direction` while `others` do theirs, and how
 * it was found: `measured` from the matrix; `unmeasured` (1) where the
 * matrix lacks that group, or where the tier moved nothing alone; `starved`
 * where the tier moved nothing in the group, with the least factor that
 * explains it (alone bandwidth × window / request size); `alone` (1) without
 * others.
 *
 * @throws {RangeError} when `others` names `tier` or a tier twice.
 *
 * @example
 * ```ts
 * import { loadProfile } from "./profile.ts";
 * import { lookupSlowdown } from "./slowdown.ts";
 * const tier = { read_bw_bytes: 1e9, write_bw_bytes: 1e9, bs: 1048576, iodepth: 8 };
 * const p = loadProfile({
 *   schema: "tierbench/profile@1", created: "2026-11-21",
 *   host: { name: "n", memory_bytes: 2 ** 30, cpus: 2 },
 *   tiers: { file: { kind: "file", ...tier }, pfs: { kind: "pfs", ...tier } },
 *   contention: { slowdown: { read: { file: { pfs: 1.2, "pfs:write": 1.5 } } } },
 * }, "inline");
 * const mixed = lookupSlowdown(p, "file", "read", [{ tier: "pfs", direction: "write" }]);
 * console.assert(mixed.slowdown === 1.5 && mixed.status === "measured" && mixed.key === "pfs:write");
 * console.assert(lookupSlowdown(p, "pfs", "read", [{ tier: "file", direction: "read" }]).status === "unmeasured");
 * ```
 */
export function lookupSlowdown(
  profile: Profile,
  tier: string,
  direction: Direction,
  others: readonly OtherTier[],
): SlowdownLookupResult {
  if (others.length === 0) return { slowdown: 1, status: "alone", key: "" };
  const names = others.map((o) => o.tier);
  if (names.includes(tier) || new Set(names).size < names.length) {
    throw new RangeError(
      `slowdown of ${tier}: others must name other tiers, once each (${names.join(", ")})`,
    );
  }
  const c = profile.contention;
  const key = slowdownKeyOf(direction, others, c?.tiers ?? Object.keys(profile.tiers));
  const row = c?.slowdown[direction][tier];
  if (!c || !row || !Object.hasOwn(row, key)) return { slowdown: 1, status: "unmeasured", key };
  const value = row[key];
  if (typeof value === "number") return { slowdown: value, status: "measured", key };
  const bound = starvedBound(c, tier, direction);
  return bound === undefined
    ? { slowdown: 1, status: "unmeasured", key }
    : { slowdown: bound, status: "starved", key };
}

/**
 * The slowdown of `tier` doing `direction` while `others` do theirs; 1 where
 * unmeasured ({@linkcode lookupSlowdown} says whether it was).
 *
 * @example
 * ```ts
 * import { loadProfile } from "./profile.ts";
 * import { slowdownOf } from "./slowdown.ts";
 * const tier = { read_bw_bytes: 1e9, write_bw_bytes: 1e9, bs: 1048576, iodepth: 8 };
 * const p = loadProfile({
 *   schema: "tierbench/profile@1", created: "2026-11-21",
 *   host: { name: "n", memory_bytes: 2 ** 30, cpus: 2 },
 *   tiers: { memory: { kind: "memory", ...tier }, file: { kind: "file", ...tier } },
 *   contention: { slowdown: { write: { file: { memory: 1.3 } } } },
 * }, "inline");
 * console.assert(slowdownOf(p, "file", "write", [{ tier: "memory", direction: "write" }]) === 1.3);
 * console.assert(slowdownOf(p, "file", "write", [{ tier: "memory", direction: "read" }]) === 1);
 * ```
 */
export function slowdownOf(
  profile: Profile,
  tier: string,
  direction: Direction,
  others: readonly OtherTier[],
): number {
  return lookupSlowdown(profile, tier, direction, others).slowdown;
}

/**
 * `tier`'s bandwidths while it reads and writes at once and `other` does
 * too (the matrix's `together` pairs), or undefined where not measured.
 *
 * @example
 * ```ts
 * import { loadProfile } from "./profile.ts";
 * import { togetherOf } from "./slowdown.ts";
 * const p = loadProfile({
 *   schema: "tierbench/profile@1",
 *   created: "2026-01-01",
 *   host: { name: "n" },
 *   tiers: { file: { kind: "file", read_bw_bytes: 1e9, write_bw_bytes: 1e9 } },
 * }, "n.json");
 * p.contention = {
 *   basis: "measured",
 *   tiers: ["file", "pfs"],
 *   slowdown: { read: {}, write: {} },
 *   together: { "file+pfs": { file: { read_bw_bytes: 4e8, write_bw_bytes: 3e8 } } },
 * };
 * console.assert(togetherOf(p, "file", "pfs")?.write_bw_bytes === 3e8);
 * console.assert(togetherOf(p, "pfs", "file") === undefined);
 * ```
 */
export function togetherOf(
  profile: Profile,
  tier: string,
  other: string,
): { read_bw_bytes: number; write_bw_bytes: number } | undefined {
  return pairOf(profile.contention?.together, tier, other)?.[tier];
}

/** The entry of the pair of `tier` and `other` in a record keyed `a+b`, in either order. */
function pairOf<T>(
  byPair: Record<string, T> | undefined,
  tier: string,
  other: string,
): T | undefined {
  return byPair?.[`${tier}+${other}`] ?? byPair?.[`${other}+${tier}`];
}

/**
 * `tier`'s totals, bytes/s, while it and `other` each read and write at
 * once with every job `processes` processes (`contention.together_at`);
 * undefined where not measured.
 *
 * @example
 * ```ts ignore
 * togetherAtOf(profile, "file", "pfs"); // { processes: 4, read_bw_bytes: …, write_bw_bytes: … }
 * ```
 */
export function togetherAtOf(
  profile: Profile,
  tier: string,
  other: string,
): { processes: number; read_bw_bytes: number; write_bw_bytes: number } | undefined {
  const g = pairOf(profile.contention?.together_at, tier, other);
  const x = g?.members[tier];
  return g && x && { processes: g.processes, ...x };
}

/**
 * A pairwise lookup in the shape the solver takes (`SlowdownLookup` of
 * solver/solve.ts): the slowdown of `tier` doing `direction` while `other`
 * does `otherDirection`, 1 where unmeasured.
 *
 * @example
 * ```ts ignore
 * const look = slowdownLookup(profile);
 * look("file", "read", "pfs", "write"); // slowdown.read.file["pfs:write"]
 * ```
 */
export function slowdownLookup(
  profile: Profile,
): (tier: string, direction: Direction, other: string, otherDirection: Direction) => number {
  return (tier, direction, other, otherDirection) =>
    slowdownOf(profile, tier, direction, [{ tier: other, direction: otherDirection }]);
}
