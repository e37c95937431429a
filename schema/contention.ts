/**
 * The contention document (`tierbench/contention@1`): each tier alone, in
 * groups reading or writing, in mixed pairs and reading and writing at once,
 * and each tier's slowdown in each group. bench/contention.ts measures it;
 * the solver and the reports read it.
 *
 * @module
 */
import type { RunStatus } from "./run_status.ts";

/** The schema id of the `contention` section. */
export const CONTENTION_SCHEMA = "tierbench/contention@1";

/** The directions the matrix measures: every member of a group reads, or every member writes. */
export const CONTENTION_DIRECTIONS = ["read", "write"] as const;

/** One of {@linkcode CONTENTION_DIRECTIONS}. */
export type ContentionDirection = typeof CONTENTION_DIRECTIONS[number];

/** A group's direction: every member's, or `mixed` (one member reads while the other writes). */
export type ContentionGroupDirection = ContentionDirection | "mixed";

/** How one tier runs in the matrix. */
export interface ContentionTierPattern {
  /** The tier as `--tier` text. */
  spec: string;
  /** `libaio` (or `io_uring` with --engine io_uring) for file-backed tiers, `s3` for s3. */
  engine: string;
  iodepth: number;
  /** O_DIRECT: on for file and pfs (unless the mount refuses it), off for memory and s3. */
  direct: boolean;
  /** Always false: an fsync after one tier's window could fall inside another's. */
  end_fsync: boolean;
  /** Why the pattern differs from the default, when it does. */
  note?: string;
}

/** The pattern every tier runs: 1 MiB sequential, the same on every tier and in every group. */
export interface ContentionPattern {
  /** `read` or `write`, sequential. */
  rw: readonly ContentionDirection[];
  /** Whether the matrix has the mixed-direction pairs (one tier reading while another writes). */
  mixed: boolean;
  bs: number;
  /** Each tier's file (or objects, for s3). */
  size: number;
  iodepth: number;
  runtime_ms: number;
  /** The ramp asked for; a group may use a longer one (its `ramp_ms`). */
  ramp_ms: number;
  /** Per tier label. */
  tiers: Record<string, ContentionTierPattern>;
}

/** When one member of a group did what, in ms from the group's start (its first layout). */
export interface ContentionWindow {
  /** Its Workers started opening (and laying out or reserving) files. */
  layout_start: number;
  /**
   * Layout done: its Workers had laid out their files and it met the others
   * (absent in documents written before: read `ramp_start`).
   */
  layout_end?: number;
  /** The ramp began (I/O from here on, not yet counted). */
  ramp_start: number;
  /** The measured window: every counted byte moved between these two. */
  measure_start: number;
  measure_end: number;
}

/** One group (two tiers or more): every member in one direction, or a mixed pair. */
export interface ContentionGroup {
  /** Tier labels, in `--tiers` order. */
  tiers: string[];
  /**
   * The labels joined with `+`; in a mixed group each label is followed by
   * its member's direction (`memory:read+file:write`).
   */
  key: string;
  /** Every member's direction, or `mixed` (see `rw`). */
  direction: ContentionGroupDirection;
  /** Each member's direction (all the same unless `direction` is `mixed`). */
  rw: Record<string, ContentionDirection>;
  status: RunStatus;
  error?: string;
  /** Bandwidth of each member during the group (bytes/s). */
  bw_bytes: Record<string, number>;
  /** Each member's bandwidth alone (in its own direction) / in this group; null where either is 0. */
  slowdown: Record<string, number | null>;
  /** The ramp this group used (ms). */
  ramp_ms: number;
  /** Runs it took: 2 when the first one's layout fell inside a measured window. */
  attempts: number;
  /** Each member's windows; null when the run was too short to sample one. */
  windows_ms: Record<string, ContentionWindow | null>;
  /** Time every member was measuring at once, as a fraction of the runtime (0..1). */
  overlap: number | null;
  /** No member's layout fell inside another member's measured window. */
  layout_clear: boolean | null;
}

/** The `contention` section of a result document (`"schema": "tierbench/contention@1"`). */
export interface ContentionResult {
  schema: typeof CONTENTION_SCHEMA;
  /** "ok" when every group was measured. */
  status: RunStatus;
  error?: string;
  pattern: ContentionPattern;
  /** Tier labels: the tier kind, with a number when two tiers are of one kind (`file1`, `file2`). */
  tiers: string[];
  /** Each tier alone (bytes/s). */
  alone: Record<string, { read_bw_bytes: number; write_bw_bytes: number }>;
  /**
   * Every group in the order they ran: each group of two tiers or more, read
   * then write; then the mixed pairs (`direction` "mixed").
   */
  groups: ContentionGroup[];
  /**
   * `slowdown[direction][tier][others]`: the tier's slowdown, doing
   * `direction`, while the tiers named by `others` did I/O: each other
   * member's label when it did the same direction, `label:read` or
   * `label:write` when it did the other, joined with `+` (so
   * `read.file.pfs` is file reading while pfs read too, `read.file["pfs:write"]`
   * file reading while pfs wrote).
   */
  slowdown: Record<ContentionDirection, Record<string, Record<string, number | null>>>;
  /**
   * Each tier reading and writing at once: a read job and a write job on the
   * tier, the pattern's bs and depth each, sequential, windows aligned — what
   * an optimizer that reads one subgroup while it writes another asks of a
   * device (with the mixed pairs; not for s3). The solver's mixed bandwidths.
   */
  self?: Record<string, ContentionSelf>;
  /**
   * Each pair of tiers with every member reading and writing at once (a read
   * job and a write job on each, windows aligned): what an optimizer that
   * splits its subgroups over two paths asks of them (MLP-Offload). Not for
   * s3; with the mixed pairs. The solver's bandwidths of a path while the
   * other path is in use.
   */
  together?: ContentionTogether[];
  /**
   * The same pairs with every job `processes` processes (numjobs), as a
   * plan's ranks drive both paths at once; with the concurrency curves. On
   * two cores a PFS client's CPU at four ranks slows the other tier far more
   * than at one job, which `together` cannot show. Slowdowns are against the
   * tier's `self` figures (one job each).
   */
  together_at?: ContentionTogetherAt[];
}

/** A pair of tiers, each reading and writing at once with `processes` jobs per direction. */
export interface ContentionTogetherAt extends ContentionTogether {
  /** Processes (numjobs) of each member's read job and of its write job. */
  processes: number;
}

/** A pair of tiers, each reading and writing at once. */
export interface ContentionTogether {
  tiers: string[];
  /** The labels joined with `+`, as a same-direction group's. */
  key: string;
  /** Each member's bandwidths here, and slowdowns against its `self` figures. */
  members: Record<string, ContentionSelf>;
  /** Share of the runtime all four windows shared. */
  overlap: number | null;
}

/** A tier reading and writing at once (bytes/s), against its own directions alone. */
export interface ContentionSelf {
  read_bw_bytes: number;
  write_bw_bytes: number;
  /** Alone / here, per direction (null when it moved nothing here). */
  slowdown: { read: number | null; write: number | null };
  /** Share of the runtime both windows shared. */
  overlap: number | null;
}

/**
 * A group's key: the labels joined with `+` when every member does one
 * direction, each label followed by `:read` or `:write` when they do not.
 *
 * @example
 * ```ts
 * import { groupKey } from "./contention.ts";
 * console.assert(groupKey(["memory", "file"], { memory: "read", file: "read" }) === "memory+file");
 * console.assert(
 *   groupKey(["memory", "file"], { memory: "write", file: "read" }) === "memory:write+file:read",
 * );
 * ```
 */
export function groupKey(
  tiers: readonly string[],
  rw: Readonly<Record<string, ContentionDirection>>,
): string {
  const mixed = new Set(tiers.map((t) => rw[t])).size > 1;
  return tiers.map((t) => mixed ? `${t}:${rw[t]}` : t).join("+");
}

/**
 * Where a member's slowdown goes in the matrix, under `slowdown[rw[tier]][tier]`:
 * the other members, each named by its label when it does `tier`'s direction
 * and by `label:direction` when it does the other, joined with `+`.
 *
 * @example
 * ```ts
 * import { slowdownKey } from "./contention.ts";
 * const rw = { memory: "read", file: "read", pfs: "write" } as const;
 * console.assert(slowdownKey(["memory", "file", "pfs"], rw, "file") === "memory+pfs:write");
 * console.assert(slowdownKey(["memory", "file", "pfs"], rw, "pfs") === "memory:read+file:read");
 * ```
 */
export function slowdownKey(
  tiers: readonly string[],
  rw: Readonly<Record<string, ContentionDirection>>,
  tier: string,
): string {
  return tiers.filter((x) => x !== tier)
    .map((x) => rw[x] === rw[tier] ? x : `${x}:${rw[x]}`)
    .join("+");
}

/**
 * A tier's slowdown: bandwidth alone over bandwidth in a group, rounded to
 * 3 decimals; null when either is 0 (nothing to compare).
 *
 * @example
 * ```ts
 * import { slowdown } from "./contention.ts";
 * console.assert(slowdown(1000, 500) === 2);
 * console.assert(slowdown(1000, 0) === null);
 * ```
 */
export function slowdown(aloneBw: number, groupBw: number): number | null {
  if (!(aloneBw > 0) || !(groupBw > 0)) return null;
  return Math.round((aloneBw / groupBw) * 1000) / 1000;
}

/**
 * The slowdown matrix from alone figures and groups:
 * `[direction][tier][other members joined with "+"]`, each other member
 * named as {@linkcode slowdownKey} does (`pfs` doing the same direction,
 * `pfs:write` doing the other). A group without `rw` has every member doing
 * its `direction`; a mixed one without `rw` is left out.
 *
 * @example
 * ```ts
 * import { slowdownMatrix } from "./contention.ts";
 * const m = slowdownMatrix(
 *   { a: { read_bw_bytes: 100, write_bw_bytes: 50 }, b: { read_bw_bytes: 10, write_bw_bytes: 10 } },
 *   [{ tiers: ["a", "b"], direction: "read", bw_bytes: { a: 50, b: 10 } }],
 * );
 * console.assert(m.read.a!.b === 2 && m.read.b!.a === 1);
 * ```
 */
export function slowdownMatrix(
  alone: ContentionResult["alone"],
  groups: readonly (
    & Pick<ContentionGroup, "tiers" | "direction" | "bw_bytes">
    & Partial<Pick<ContentionGroup, "rw">>
  )[],
): ContentionResult["slowdown"] {
  const out: ContentionResult["slowdown"] = { read: {}, write: {} };
  for (const d of CONTENTION_DIRECTIONS) for (const t of Object.keys(alone)) out[d][t] = {};
  for (const g of groups) {
    const direction = g.direction;
    const rw = g.rw ??
      (direction === "mixed" ? undefined : Object.fromEntries(g.tiers.map((t) => [t, direction])));
    if (rw === undefined) continue;
    for (const t of g.tiers) {
      const d = rw[t]!;
      const a = alone[t]?.[`${d}_bw_bytes`] ?? 0;
      (out[d][t] ??= {})[slowdownKey(g.tiers, rw, t)] = slowdown(a, g.bw_bytes[t] ?? 0);
    }
  }
  return out;
}
