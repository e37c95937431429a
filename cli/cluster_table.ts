/**
 * What `run` across processes prints under its table: each node's share of
 * every run over the common window, and the aggregates by their rules
 * (docs/multinode.md).
 *
 * @module
 */

import Table from "cli-table3";
import { formatRate } from "../core/units.ts";
import type { ClusterSection } from "../schema/cluster.ts";

/**
 * Renders the per-node table and one line per run and direction naming the
 * common window, IOR's last-done and elbencho's first-done figures; with
 * `runs` false (`contention`, whose matrix table follows) only the first line
 * and the lost members.
 *
 * @example
 * ```ts ignore
 * console.log(formatClusterTable(doc.cluster!));
 * ```
 */
export function formatClusterTable(c: ClusterSection<unknown>, runs = true): string {
  const table = new Table({
    head: ["run", "node", "processes", "read", "write"],
    colAligns: ["left", "left", "right", "right", "right"],
    style: { head: [], border: [] },
  });
  const lines: string[] = [];
  for (const r of c.runs) {
    for (const n of r.per_node) {
      table.push([
        r.name,
        n.node,
        n.processes,
        formatRate(n.read_bw_bytes),
        formatRate(n.write_bw_bytes),
      ]);
    }
    const ms = (r.window.end_ms - r.window.start_ms).toFixed(0);
    for (const dir of ["read", "write"] as const) {
      const d = r[dir];
      if (d.io_bytes === 0) continue;
      lines.push(
        `${r.name} ${dir}: ${formatRate(d.common_bw_bytes)} summed over the common window ` +
          `(${ms} ms); last-done ${formatRate(d.last_done.bw_bytes)}, ` +
          `first-done ${formatRate(d.first_done.bw_bytes)}`,
      );
    }
  }
  const head = `${c.processes_count} processes on ${c.nodes.length} node(s) ` +
    `(${c.launcher}, ${c.transport})`;
  const lost = (c.lost ?? []).map((l) => `lost: ${l.error}`);
  if (!runs) return [head, ...lost].join("\n");
  return [head, table.toString(), ...lines, ...lost].join("\n");
}
