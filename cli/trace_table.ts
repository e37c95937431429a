/**
 * The console form of `trace stats`: a line per phase that did I/O, then
 * per phase its file groups (bytes, where their files end) and each
 * thread's order; phases without I/O named on one line.
 *
 * @module
 */

import Table from "cli-table3";
import { formatRate, formatSize } from "../core/units.ts";
import type { TraceReplayResult } from "../schema/trace_replay.ts";
import type { Counts, OrderRun, PhaseStats, TraceStats } from "../trace/stats.ts";

/** Bytes for people: `232.2 MiB`. */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n, i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/**
 * Counts as `key×count`, the most frequent first, at most `limit` of them
 * (`…` when there are more); `—` when empty.
 *
 * @example
 * ```ts
 * import { formatCounts } from "./trace_table.ts";
 * console.assert(formatCounts({ "1048576": 9, "4096": 2 }, (k) => `${Number(k) / 1024}k`) === "1024k×9 4k×2");
 * ```
 */
export function formatCounts(c: Counts, key: (k: string) => string = (k) => k, limit = 4): string {
  const entries = Object.entries(c).sort((a, b) => b[1] - a[1] || Number(a[0]) - Number(b[0]));
  if (entries.length === 0) return "—";
  const shown = entries.slice(0, limit).map(([k, n]) => `${key(k)}×${n}`);
  return shown.join(" ") + (entries.length > limit ? " …" : "");
}

const size = (k: string) => formatSize(Number(k));

/** The directory every group of the trace shares, to write groups shorter. */
function commonDir(stats: TraceStats): string {
  const groups = stats.phases.flatMap((p) => Object.keys(p.groups));
  if (groups.length === 0) return "";
  let prefix = groups[0]!.slice(0, groups[0]!.lastIndexOf("/") + 1);
  for (const g of groups) {
    while (!g.startsWith(prefix)) {
      const cut = prefix.lastIndexOf("/", prefix.length - 2);
      prefix = cut < 0 || prefix === "/" ? "" : prefix.slice(0, cut + 1);
    }
  }
  return prefix;
}

function hasIo(p: PhaseStats): boolean {
  return p.read.ops + p.write.ops + p.fsyncs + p.opened + p.failures.length > 0;
}

function phaseRow(p: PhaseStats): string[] {
  const failures = p.failures.reduce((t, f) => t + f.count, 0);
  return [
    p.name,
    `${p.time_s.toFixed(3)} s`,
    String(p.threads.length),
    String(p.contexts.length),
    `${formatBytes(p.read.bytes)} / ${p.read.ops}`,
    `${formatBytes(p.write.bytes)} / ${p.write.ops}`,
    `${formatCounts(p.read.sizes, size, 2)} / ${formatCounts(p.write.sizes, size, 2)}`,
    formatCounts(p.iocbs_per_submit, undefined, 3),
    formatCounts(p.in_flight, undefined, 3),
    failures === 0 ? "—" : String(failures),
  ];
}

function orderText(runs: readonly OrderRun[], dir: string): string {
  return runs.map((r) => {
    const g = r.group.startsWith(dir) ? r.group.slice(dir.length) : r.group;
    const n = r.files > 1 ? ` ×${r.files} ${r.direction}` : "";
    return `${r.op === "read" ? "r" : "w"} ${g}${n}`;
  }).join(" → ");
}

function phaseDetail(p: PhaseStats, dir: string): string[] {
  const t = new Table({
    head: ["  group", "files", "read", "write", "write ends ÷", "read ends ÷", "read − write end"],
    style: { head: [], border: [] },
    chars: { mid: "", "left-mid": "", "mid-mid": "", "right-mid": "" },
  });
  for (const [g, s] of Object.entries(p.groups)) {
    t.push([
      `  ${g.startsWith(dir) ? g.slice(dir.length) : g}`,
      String(s.files),
      formatBytes(s.read.bytes),
      formatBytes(s.write.bytes),
      formatCounts(s.write_end_alignment, size, 2),
      formatCounts(s.read_end_alignment, size, 2),
      formatCounts(s.read_past_write, (k) => k, 2),
    ]);
  }
  const lines = [`${p.name}:`, t.toString()];
  for (const [thread, runs] of Object.entries(p.order)) {
    lines.push(`  order, thread ${thread}: ${orderText(runs, dir)}${p.order_cut ? " …" : ""}`);
  }
  for (const c of p.contexts) {
    lines.push(
      `  aio context ${c.ctx}: ${c.submits} submits, ${c.iocbs} iocbs, at most ${c.max_in_flight} ` +
        `in flight; submitted by ${c.submitters.join(", ") || "—"}, reaped by ` +
        `${c.reapers.join(", ") || "—"}`,
    );
  }
  for (const f of p.failures) {
    lines.push(`  failed: ${f.call} ${f.errno} ×${f.count} (${f.where})`);
  }
  return lines;
}

/**
 * The statistics as the console shows them.
 *
 * @example
 * ```ts ignore
 * console.log(formatTraceStats(await traceStats(reader), "run.trace.gz"));
 * ```
 */
export function formatTraceStats(stats: TraceStats, name: string): string {
  const dir = commonDir(stats);
  const busy = stats.phases.filter(hasIo);
  const idle = stats.phases.filter((p) => !hasIo(p)).map((p) => p.name);
  const t = new Table({
    head: [
      "phase",
      "time",
      "threads",
      "ctx",
      "read / reqs",
      "write / reqs",
      "sizes r / w",
      "iocbs/submit",
      "in flight",
      "failed",
    ],
    style: { head: [], border: [] },
  });
  for (const p of busy) t.push(phaseRow(p));
  const out = [
    `${name}: ${stats.phases.length} phases; read ${formatBytes(stats.read.bytes)} in ` +
    `${stats.read.ops} requests, wrote ${formatBytes(stats.write.bytes)} in ${stats.write.ops}` +
    (dir ? `; groups under ${dir}` : ""),
    t.toString(),
  ];
  if (idle.length > 0) out.push(`no I/O in: ${idle.join(", ")}`);
  for (const p of busy) out.push(...phaseDetail(p, dir));
  for (const n of stats.notes) out.push(`note: ${n}`);
  return out.join("\n");
}

/** µs with 3 significant figures from ns. */
function usOf(ns: number): string {
  const v = ns / 1000;
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/**
 * A trace replay as the console shows it: per tier and direction, then
 * recorded beside replayed time for the whole trace and each phase.
 *
 * @example
 * ```ts ignore
 * console.log(formatTraceReplay(doc.trace_replay!));
 * ```
 */
export function formatTraceReplay(r: TraceReplayResult): string {
  const t = new Table({
    head: ["prefix", "tier", "dir", "bytes", "bw", "IOPS", "reqs", "lat p50 µs", "p99", "max"],
    style: { head: [], border: [] },
  });
  for (const tier of r.tiers) {
    for (const dir of ["read", "write"] as const) {
      const d = tier[dir];
      if (d.total_ios === 0) continue;
      const p = d.lat_ns.percentile;
      t.push([
        tier.prefix,
        `${tier.tier.kind}:${tier.tier.path}`,
        dir,
        formatBytes(d.io_bytes),
        formatRate(d.bw_bytes),
        Math.round(d.iops).toLocaleString("en-US"),
        String(d.total_ios),
        usOf(p["50.000000"] ?? 0),
        usOf(p["99.000000"] ?? 0),
        usOf(d.lat_ns.max),
      ]);
    }
  }
  const ratio = (a: number, b: number) => (a > 0 ? ` (${(b / a).toFixed(2)}×)` : "");
  const out = [
    t.toString(),
    `speed ${r.speed}: recorded ${r.total.recorded_s.toFixed(3)} s, replayed ` +
    `${r.total.replayed_s.toFixed(3)} s${ratio(r.total.recorded_s, r.total.replayed_s)}; ` +
    `${r.threads.length} threads; laid out ${r.layout.files} files (${
      formatBytes(r.layout.bytes)
    })`,
  ];
  if (r.phases.length > 1 && r.phases.length <= 40) {
    const p = new Table({
      head: ["phase", "recorded s", "replayed s"],
      style: { head: [], border: [] },
    });
    for (const ph of r.phases) {
      p.push([ph.name, ph.recorded_s.toFixed(3), ph.replayed_s.toFixed(3)]);
    }
    out.push(p.toString());
  }
  if (r.verify) {
    out.push(
      `verify: ${formatBytes(r.verify.checked_bytes)} read back and checked, ` +
        `${formatBytes(r.verify.unchecked_bytes)} read where no write of the thread was`,
    );
  }
  for (const n of r.notes) out.push(`note: ${n}`);
  return out.join("\n");
}
