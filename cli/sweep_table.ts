/**
 * A sweep as console tables: per tier, bandwidth per bs × numjobs × iodepth,
 * the best setting with its figures, and its DeepSpeed `aio` block.
 *
 * @module
 */
import Table from "cli-table3";
import pc from "picocolors";
import type { SweepResult } from "../schema/sweep.ts";
import { formatRate, formatSize } from "../core/units.ts";

function mib(bw: number): string {
  return (bw / 1024 ** 2).toFixed(0);
}

function us(ns: number): string {
  const v = ns / 1000;
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/**
 * The sweep as people read it: per tier and pattern, bandwidth (MiB/s) with a
 * row per bs × numjobs and a column per iodepth (`*` the best, `~` not
 * steady), the best setting with its figures, and its DeepSpeed `aio` block.
 *
 * @example
 * ```ts ignore
 * console.log(formatSweep(doc.sweep!, "0.16.9"));
 * ```
 */
export function formatSweep(s: SweepResult, deepspeedVersion?: string): string {
  const out: string[] = [];
  for (const t of s.tiers) {
    const depths = [...new Set(t.points.map((p) => p.iodepth))].sort((a, b) => a - b);
    const rows = [...new Set(t.points.map((p) => `${p.bs} ${p.numjobs}`))];
    const table = new Table({
      head: ["bs", "jobs", ...depths.map((d) => `depth ${d}`)].map((h) => pc.bold(h)),
      style: { head: [], border: [] },
      colAligns: ["right", "right", ...depths.map(() => "right" as const)],
    });
    for (const row of rows) {
      const [bs, nj] = row.split(" ").map(Number) as [number, number];
      table.push([
        formatSize(bs),
        String(nj),
        ...depths.map((d) => {
          const p = t.points.find((x) => x.bs === bs && x.numjobs === nj && x.iodepth === d);
          if (!p) return "";
          return `${mib(p.bw_bytes)}${p.steady ? "" : "~"}${p === t.best ? "*" : ""}`;
        }),
      ]);
    }
    const b = t.best;
    out.push(
      `${t.tier} ${t.rw}: bandwidth in MiB/s (* best, ~ not steady)`,
      table.toString(),
      `best on ${t.tier} ${t.rw}: bs ${
        formatSize(b.bs)
      }, iodepth ${b.iodepth}, numjobs ${b.numjobs}: ` +
        `${formatRate(b.bw_bytes)}, ${Math.round(b.iops).toLocaleString("en-US")} IOPS, ` +
        `lat p50 ${us(b.lat_p50_ns)} µs, p99 ${us(b.lat_p99_ns)} µs${
          b.steady ? "" : " (not steady)"
        }`,
    );
    if (Object.keys(t.aio).length > 0) {
      out.push(
        `DeepSpeed ${deepspeedVersion ?? ""} "aio" block for it:`.replace("  ", " "),
        JSON.stringify({ aio: t.aio }, null, 2),
      );
    }
  }
  out.push(`criterion: ${s.criterion}`);
  return out.join("\n");
}
