/**
 * The contention matrix as console tables: a row per tier and direction with
 * its bandwidth alone and its slowdown in each group, then the mixed pairs.
 *
 * @module
 */
import Table from "cli-table3";
import pc from "picocolors";
import {
  CONTENTION_DIRECTIONS,
  type ContentionGroup,
  type ContentionResult,
  type ContentionSelf,
  type ContentionTogether,
} from "../schema/contention.ts";
import { formatRate } from "../core/units.ts";

function cell(s: number | null | undefined, bw: number | undefined): string {
  if (s === undefined || bw === undefined) return "";
  return `${s === null ? "–" : `${s.toFixed(2)}×`} ${formatRate(bw)}`;
}

/** A group's overlap as the tables show it. */
function overlapCell(g: ContentionGroup | undefined): string {
  if (g?.overlap === null || g?.overlap === undefined) return "";
  return `${(g.overlap * 100).toFixed(0)}%${g.layout_clear === false ? " (layout in)" : ""}`;
}

/**
 * The mixed pairs: a row per pair, the tier reading and the one writing,
 * each one's slowdown (against its own direction alone) and bandwidth.
 */
function formatMixedTable(
  mixed: readonly ContentionGroup[],
  self: Readonly<Record<string, ContentionSelf>>,
  together: readonly ContentionTogether[],
): string {
  const table = new Table({
    head: ["reads", "writes", "reader", "writer", "overlap"].map((h) => pc.bold(h)),
    style: { head: [], border: [] },
    colAligns: ["left", "left", "right", "right", "right"],
  });
  for (const g of mixed) {
    const reader = g.tiers.find((t) => g.rw[t] === "read") ?? "";
    const writer = g.tiers.find((t) => g.rw[t] === "write") ?? "";
    table.push([
      reader,
      writer,
      cell(g.slowdown[reader], g.bw_bytes[reader]),
      cell(g.slowdown[writer], g.bw_bytes[writer]),
      pc.dim(overlapCell(g)),
    ]);
  }
  for (const [t, x] of Object.entries(self)) {
    table.push([
      t,
      t,
      cell(x.slowdown.read, x.read_bw_bytes),
      cell(x.slowdown.write, x.write_bw_bytes),
      pc.dim(x.overlap === null ? "?" : `${Math.round(x.overlap * 100)}%`),
    ]);
  }
  // both tiers of a pair reading and writing: each one's slowdown against its row above
  for (const g of together) {
    for (const t of g.tiers) {
      const x = g.members[t]!;
      const at = "processes" in g ? `, ${g.processes} processes each` : "";
      const both = `${t} (${g.key}${at})`;
      table.push([
        both,
        both,
        cell(x.slowdown.read, x.read_bw_bytes),
        cell(x.slowdown.write, x.write_bw_bytes),
        pc.dim(g.overlap === null ? "?" : `${Math.round(g.overlap * 100)}%`),
      ]);
    }
  }
  return table.toString();
}

/**
 * Renders the matrix: a row per tier and direction with its bandwidth alone
 * and, per group, its slowdown and bandwidth there; a last row per direction
 * gives how much of the runtime the members' measured windows shared. The
 * mixed pairs follow in a second table, a row per pair.
 *
 * @example
 * ```ts ignore
 * console.log(formatContentionTable(doc.contention));
 * ```
 */
export function formatContentionTable(c: ContentionResult): string {
  const same = c.groups.filter((g) => g.direction !== "mixed");
  const mixed = c.groups.filter((g) => g.direction === "mixed");
  const keys = [...new Set(same.map((g) => g.key))];
  const table = new Table({
    head: ["tier", "rw", "alone", ...keys].map((h) => pc.bold(h)),
    style: { head: [], border: [] },
    colAligns: ["left", "left", "right", ...keys.map(() => "right" as const)],
  });
  for (const d of CONTENTION_DIRECTIONS) {
    const groups = keys.map((k) => same.find((g) => g.key === k && g.direction === d));
    for (const t of c.tiers) {
      const alone = c.alone[t]?.[`${d}_bw_bytes`];
      table.push([
        t,
        d,
        alone === undefined ? "" : formatRate(alone),
        ...groups.map((g) => cell(g?.slowdown[t], g?.bw_bytes[t])),
      ]);
    }
    table.push([
      pc.dim("windows"),
      pc.dim(d),
      pc.dim("overlap"),
      ...groups.map((g) => pc.dim(overlapCell(g))),
    ]);
  }
  const parts = keys.length > 0 ? [table.toString()] : [];
  if (mixed.length > 0) {
    const together = [...(c.together ?? []), ...(c.together_at ?? [])];
    parts.push(formatMixedTable(mixed, c.self ?? {}, together));
  }
  const note = "slowdown = bandwidth alone / bandwidth in the group (>1: slower)";
  return [...parts, mixed.length > 0 ? `${note}; mixed: against its own direction alone` : note]
    .join("\n");
}
