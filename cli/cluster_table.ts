/**
 * What `run` across processes prints under its table: each node's share of
 * every run over the common window, and the aggregates by their rules
 * (docs/multinode.md); for a `workload` across processes, each node's own
 * summary.
 *
 * @module
 */

import Table from "cli-table3";
import { formatRate } from "../core/units.ts";
import type { ClusterSection, ClusterWorkload } from "../schema/cluster.ts";

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
  const tables = [
    ...(runs && c.runs.length > 0 ? [table.toString()] : []),
    ...(c.workloads_per_process ? [formatNodeWorkloads(c.workloads_per_process)] : []),
  ];
  return [head, ...tables, ...(runs ? lines : []), ...lost].join("\n");
}

function seconds(x: number | undefined): string {
  return x === undefined ? "" : x >= 10 ? x.toFixed(1) : x >= 0.1 ? x.toFixed(2) : x.toFixed(3);
}

/** One row per node of a workload across processes: its own medians and bytes per iteration. */
function formatNodeWorkloads(ws: readonly ClusterWorkload[]): string {
  const table = new Table({
    head: ["node", "rank", "status", "iteration s", "update s", "stall s", "flush s", "MB/iter"],
    colAligns: ["left", "right", "left", "right", "right", "right", "right", "right"],
    style: { head: [], border: [] },
  });
  for (const w of ws) {
    const sum = w.workload.summary;
    const moved = sum
      ? Object.entries(sum.bytes).filter(([k]) => !k.endsWith(":hit"))
        .reduce((t, [, v]) => t + v, 0)
      : 0;
    table.push([
      w.node,
      w.rank,
      w.status,
      seconds(sum?.iteration_s),
      seconds(sum?.update_s),
      seconds(sum?.stall_s),
      seconds(sum?.flush_s),
      sum ? (moved / 1e6).toFixed(1) : "",
    ]);
  }
  return table.toString();
}
