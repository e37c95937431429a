/**
 * A table without borders, one line per row, for summaries that must fit a
 * screen: cli-table3 with every border character blank.
 *
 * @module
 */

import Table from "cli-table3";
import pc from "picocolors";

/** cli-table3's border characters, all blank but the space between columns. */
const NO_BORDERS = {
  "top": "",
  "top-mid": "",
  "top-left": "",
  "top-right": "",
  "bottom": "",
  "bottom-mid": "",
  "bottom-left": "",
  "bottom-right": "",
  "left": "",
  "left-mid": "",
  "mid": "",
  "mid-mid": "",
  "right": "",
  "right-mid": "",
  "middle": "  ",
};

/**
 * Renders `rows` under `head` (bold on a terminal), the first `left`
 * columns aligned left and the others right, no borders, one line per row
 * (a header cell may hold a line break: two header lines).
 *
 * @example
 * ```ts
 * import { plainTable } from "./_plain_table.ts";
 * const text = plainTable(["tier", "MiB/s"], [["memory", "12,300"]]);
 * console.assert(text.split("\n").length === 2);
 * ```
 */
export function plainTable(head: readonly string[], rows: readonly string[][], left = 1): string {
  const table = new Table({
    head: head.map((h) => pc.bold(h)),
    chars: NO_BORDERS,
    style: { head: [], border: [], "padding-left": 0, "padding-right": 0, compact: true },
    colAligns: head.map((_, i) => i < left ? "left" as const : "right" as const),
  });
  table.push(...rows);
  return table.toString().split("\n").map((l) => l.trimEnd()).join("\n");
}

/** The widest line of `text` in columns, colours left out. */
export function widthOf(text: string): number {
  // deno-lint-ignore no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
  return Math.max(...plain.split("\n").map((l) => [...l].length));
}
