/**
 * The table printed after a run: one row per run and direction.
 *
 * @module
 */

import Table from "cli-table3";
import pc from "picocolors";
import type { DirectionResult, RunResult } from "../schema/result.ts";
import { formatRate, formatSize } from "../core/units.ts";

function us(ns: number): string {
  const v = ns / 1000;
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

function row(r: RunResult, dir: "read" | "write", d: DirectionResult): string[] {
  const o = r.options;
  const p = d.lat_ns.percentile;
  return [
    r.name,
    r.tier.kind === "null" ? "null" : `${r.tier.kind}:${r.tier.path}`,
    o.rw,
    dir === "read" ? "reading" : "writing",
    formatSize(o.bs),
    `${o.numjobs} proc${o.numjobs === 1 ? "" : "s"} × ${o.iodepth} deep`,
    `${o.engine}${o.direct ? "+direct" : ""}`,
    formatRate(d.bw_bytes),
    Math.round(d.iops).toLocaleString("en-US"),
    us(p["50.000000"] ?? 0),
    us(p["99.000000"] ?? 0),
    us(p["99.990000"] ?? 0),
    `${(r.cpu.usr_pct + r.cpu.sys_pct).toFixed(0)}%`,
    [r.status === "ok" ? "" : r.status, r.not_started ? "not started" : "", behind(r)]
      .filter((x) => x !== "").join(", "),
  ];
}

/** The table's marker for a run that fell behind its rate: `behind 1.52 s`; "" otherwise. */
function behind(r: RunResult): string {
  const s = r.schedule;
  return s === undefined || s.met ? "" : `behind ${(s.final_lag_ms / 1000).toFixed(2)} s`;
}

/**
 * One line per run that did not keep its rate (--rate, --rate-iops), for the
 * end of a run's output; empty when every run kept it or none had one.
 *
 * @example
 * ```ts ignore
 * for (const line of formatScheduleNotes(doc.runs)) console.log(line);
 * ```
 */
export function formatScheduleNotes(runs: readonly RunResult[]): string[] {
  return runs.flatMap((r) => {
    const s = r.schedule;
    const rate = r.options.rate;
    if (s === undefined || s.met || rate === undefined) return [];
    const per = rate.bytes_per_s !== null
      ? `${formatRate(rate.bytes_per_s)}`
      : `${rate.iops!.toLocaleString("en-US")} IOPS`;
    return [
      `rate not met: ${r.name} ended ${(s.final_lag_ms / 1000).toFixed(2)} s behind its ` +
      `schedule of ${per} per job (${s.issued_ios.toLocaleString("en-US")} of ` +
      `${s.intended_ios.toLocaleString("en-US")} requests issued; lat counts from intended starts)`,
    ];
  });
}

/**
 * Renders results as a cli-table3 table (colours only on a terminal).
 *
 * @example
 * ```ts ignore
 * console.log(formatTable(doc.runs));
 * ```
 */
export function formatTable(runs: readonly RunResult[]): string {
  const table = new Table({
    head: [
      "run",
      "tier",
      "rw",
      "I/O",
      "bs",
      "concurrency",
      "engine",
      "bandwidth",
      "IOPS",
      "lat p50 µs",
      "p99 µs",
      "p99.99 µs",
      "cpu",
      "status",
    ].map((h) => pc.bold(h)),
    style: { head: [], border: [] },
    colAligns: [
      "left",
      "left",
      "left",
      "left",
      "right",
      "right",
      "left",
      "right",
      "right",
      "right",
      "right",
      "right",
      "right",
      "left",
    ],
  });
  for (const r of runs) {
    if (r.read.total_ios > 0 || r.write.total_ios === 0) table.push(row(r, "read", r.read));
    if (r.write.total_ios > 0) table.push(row(r, "write", r.write));
  }
  return table.toString();
}
