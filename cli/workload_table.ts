/**
 * The table printed after a workload: one row per iteration and phase, with
 * time, stall and the bandwidth of each path, then the summary line.
 *
 * @module
 */

import Table from "cli-table3";
import pc from "picocolors";
import { formatSize } from "../core/units.ts";
import type { WorkloadResult } from "../schema/workload.ts";

function s(x: number): string {
  return x >= 10 ? x.toFixed(1) : x >= 0.1 ? x.toFixed(2) : x.toFixed(3);
}

/**
 * Renders a workload result (colours only on a terminal).
 *
 * @example
 * ```ts ignore
 * console.log(formatWorkloadTable(doc.workload!));
 * ```
 */
export function formatWorkloadTable(w: WorkloadResult): string {
  const keys = [
    ...new Set(
      w.iterations.flatMap((it) => Object.values(it.phases).flatMap((p) => Object.keys(p.io))),
    ),
  ]
    .sort();
  const table = new Table({
    head: ["iter", "phase", "time s", "stall s", ...keys.map((k) => `${k} MB/s`)].map((h) =>
      pc.bold(h)
    ),
    style: { head: [], border: [] },
  });
  for (const it of w.iterations) {
    for (const [name, p] of Object.entries(it.phases)) {
      table.push([
        `${it.iteration}${it.warmup ? " (warm-up)" : ""}`,
        `${name}${p.background ? " (bg)" : ""}`,
        s(p.time_s),
        s(p.stall_s),
        ...keys.map((k) => {
          const io = p.io[k];
          if (!io) return "";
          return k.endsWith(":hit")
            ? `${formatSize(io.bytes)} hit`
            : (io.bw_bytes / 1e6).toFixed(0);
        }),
      ]);
    }
  }
  const lines = [table.toString()];
  const sum = w.summary;
  if (sum) {
    const parts = [
      `iteration ${s(sum.iteration_s)} s`,
      sum.update_s !== undefined ? `update ${s(sum.update_s)} s` : "",
      `stall ${s(sum.stall_s)} s`,
      sum.flush_s !== undefined ? `flush ${s(sum.flush_s)} s` : "",
    ].filter(Boolean);
    lines.push(`${pc.bold(w.name)} (median of ${sum.iterations}): ${parts.join(", ")}`);
    const bytes = Object.entries(sum.bytes).map(([k, v]) => `${k} ${(v / 1e6).toFixed(1)} MB`)
      .join(", ");
    lines.push(`bytes per iteration: ${bytes}`);
  }
  const bg = w.background_rate;
  if (bg) {
    const rate = `${formatSize(bg.bytes_per_s)}/s per rank and path`;
    if (bg.met) lines.push(`background rate ${rate}: schedule met`);
    else {
      const behind = bg.schedules.filter((x) => !x.met)
        .map((x) => `rank ${x.rank} ${x.path} ${(x.end_lag_ms / 1000).toFixed(2)} s behind`);
      lines.push(pc.yellow(`background rate not met (${rate}): ${behind.join(", ")}`));
    }
  }
  for (const n of w.notes) lines.push(pc.dim(`note: ${n}`));
  return lines.join("\n");
}

/**
 * One row per workload: the summary of each, as `bench` prints them.
 *
 * @example
 * ```ts ignore
 * console.log(formatWorkloadSummaries(doc.workloads ?? []));
 * ```
 */
export function formatWorkloadSummaries(ws: readonly WorkloadResult[]): string {
  const table = new Table({
    head: [
      "workload",
      "paths",
      "iteration s",
      "update s",
      "stall s",
      "flush s",
      "MB moved / iteration",
    ]
      .map((h) => pc.bold(h)),
    style: { head: [], border: [] },
  });
  for (const w of ws) {
    const sum = w.summary;
    const moved = sum
      ? Object.entries(sum.bytes).filter(([k]) => !k.endsWith(":hit")).reduce(
        (t, [, v]) => t + v,
        0,
      )
      : 0;
    table.push([
      w.name,
      w.paths.map((p) => p.name).join(", "),
      sum ? s(sum.iteration_s) : "",
      sum?.update_s !== undefined ? s(sum.update_s) : "",
      sum ? s(sum.stall_s) : "",
      sum?.flush_s !== undefined ? s(sum.flush_s) : "",
      (moved / 1e6).toFixed(0),
    ]);
  }
  return table.toString();
}
