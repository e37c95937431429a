/**
 * CSV exports of a report's tables (RFC 4180: comma separated, fields with a
 * comma, quote or line break quoted, CRLF-free: one `\n` per row).
 *
 * @module
 */

import type { Cell, ReportTable } from "./tables.ts";

function field(c: Cell): string {
  if (c === null) return "";
  const s = String(c);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/**
 * A table as CSV text, header first.
 *
 * @example
 * ```ts
 * import { tableCsv } from "./csv.ts";
 * const csv = tableCsv({ name: "t", title: "T", columns: ["a", "b"], rows: [[1, "x,y"], [null, true]] });
 * console.assert(csv === 'a,b\n1,"x,y"\n,true\n');
 * ```
 */
export function tableCsv(t: ReportTable): string {
  return [t.columns, ...t.rows].map((r) => r.map(field).join(",")).join("\n") + "\n";
}
