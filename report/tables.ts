/**
 * The tables of a report: plain rows of numbers and text, in the units the
 * column names say, shared by the Markdown summary, the CSV exports and the
 * HTML page.
 *
 * @module
 */

import type { DirectionResult, RunResult } from "../schema/result.ts";
import { formatSize } from "../core/units.ts";
import type { PlanDocument } from "../schema/plan.ts";
import type { WorkloadResult } from "../schema/workload.ts";
import { type ReportDocument, sweepOf } from "./document.ts";

/** A cell: a number in the column's unit, text, or null where there is no figure. */
export type Cell = string | number | boolean | null;

/** One table of a report. */
export interface ReportTable {
  /** File-name stem of its CSV (`runs`, `contention`, …). */
  name: string;
  /** A heading for people. */
  title: string;
  columns: string[];
  rows: Cell[][];
}

const MIB = 1024 * 1024;

/** Rounds to `d` decimals (keeps CSVs readable; figures are never more precise than this). */
export function round(x: number, d = 1): number {
  const f = 10 ** d;
  return Math.round(x * f) / f;
}

/** The directions of a run that moved anything (read first). */
export function directionsOf(r: RunResult): ("read" | "write")[] {
  const out: ("read" | "write")[] = [];
  if ((r.read?.total_ios ?? 0) > 0) out.push("read");
  if ((r.write?.total_ios ?? 0) > 0) out.push("write");
  return out;
}

/**
 * A run's pattern as people read it: `file randrw 1m, 1 proc × 8 deep`
 * (tier kind, rw, bs, numjobs and iodepth spelled out).
 *
 * @example
 * ```ts ignore
 * console.assert(patternLabel(run) === "file randrw 1m, 1 proc × 8 deep");
 * ```
 */
export function patternLabel(r: RunResult): string {
  const o = r.options;
  const procs = `${o.numjobs} proc${o.numjobs === 1 ? "" : "s"} × ${o.iodepth} deep`;
  return `${r.tier?.kind ?? "?"} ${o.rw} ${formatSize(o.bs)}, ${procs}`;
}

function p(d: DirectionResult, key: string): number | null {
  const v = d.lat_ns?.percentile?.[key];
  return typeof v === "number" && d.lat_ns.N > 0 ? round(v / 1000, 2) : null;
}

/** One row per run and direction: bandwidth, IOPS and latency percentiles. */
export function runsTable(doc: ReportDocument): ReportTable | undefined {
  const rows: Cell[][] = [];
  for (const r of doc.runs ?? []) {
    for (const dir of directionsOf(r)) {
      const d = r[dir];
      rows.push([
        r.name,
        r.tier?.kind ?? "",
        r.tier?.path ?? "",
        r.options.rw,
        dir,
        r.options.bs,
        r.options.iodepth,
        r.options.numjobs,
        r.options.engine,
        r.options.direct,
        round(d.bw_bytes / MIB),
        Math.round(d.iops),
        p(d, "50.000000"),
        p(d, "99.000000"),
        p(d, "99.990000"),
        r.status,
      ]);
    }
  }
  if (rows.length === 0) return undefined;
  return {
    name: "runs",
    title: "Runs",
    columns: [
      "run",
      "tier",
      "path",
      "rw",
      "direction",
      "bs",
      "iodepth",
      "numjobs",
      "engine",
      "direct",
      "bw_MiB_s",
      "iops",
      "lat_p50_us",
      "lat_p99_us",
      "lat_p99.99_us",
      "status",
    ],
    rows,
  };
}

/**
 * The concurrency curves: a row per tier, request size, process count and
 * I/O (reading, writing, both: n reading while n others write, each side's
 * total), measured or left out as alike on either side (`interpolated`, no
 * figure).
 */
export function concurrencyTable(doc: ReportDocument): ReportTable | undefined {
  const rows: Cell[][] = [];
  for (const t of doc.concurrency?.tiers ?? []) {
    for (const c of t.curves ?? []) {
      const counts = [...(c.points ?? []).map((p) => p.processes), ...(c.interpolated ?? [])]
        .sort((a, b) => a - b);
      for (const n of counts) {
        const p = c.points.find((x) => x.processes === n);
        const at = (io: string, read: number | null, write: number | null) =>
          rows.push([
            t.label,
            c.bs,
            c.iodepth,
            n,
            io,
            p ? "measured" : "interpolated",
            read,
            write,
          ]);
        const mib = (x: number | undefined) => x === undefined ? null : round(x / MIB);
        at("reading", mib(p?.read_bw_bytes), null);
        at("writing", null, mib(p?.write_bw_bytes));
        at("both", mib(p?.mixed_read_bw_bytes), mib(p?.mixed_write_bw_bytes));
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    name: "concurrency",
    title: "Bandwidth against processes at once",
    columns: [
      "tier",
      "bs",
      "iodepth",
      "processes",
      "io",
      "point",
      "read_MiB_s_total",
      "write_MiB_s_total",
    ],
    rows,
  };
}

/** The contention matrix: each tier's slowdown per direction and group of others. */
export function contentionTable(doc: ReportDocument): ReportTable | undefined {
  const c = doc.contention;
  if (!c?.slowdown) return undefined;
  const rows: Cell[][] = [];
  for (const [direction, byTier] of Object.entries(c.slowdown)) {
    for (const [tier, byOthers] of Object.entries(byTier ?? {})) {
      const alone = c.alone?.[tier];
      const aloneBw = direction === "read" ? alone?.read_bw_bytes : alone?.write_bw_bytes;
      for (const [others, s] of Object.entries(byOthers ?? {})) {
        rows.push([
          direction,
          tier,
          others,
          s,
          aloneBw === undefined ? null : round(aloneBw / MIB),
        ]);
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    name: "contention",
    title: "Contention (slowdown = bandwidth alone / bandwidth with the others)",
    columns: ["direction", "tier", "others", "slowdown", "alone_bw_MiB_s"],
    rows,
  };
}

/** The workloads of a document: `workload`, then `workloads`. */
export function workloadsOf(doc: ReportDocument): WorkloadResult[] {
  return [...(doc.workload ? [doc.workload] : []), ...(doc.workloads ?? [])].filter((w) =>
    w && typeof w.name === "string"
  );
}

/** Each workload's medians: iteration, update, stall, flush, and bytes per path. */
export function workloadTable(doc: ReportDocument): ReportTable | undefined {
  const rows: Cell[][] = [];
  for (const w of workloadsOf(doc)) {
    const s = w.summary;
    if (!s) continue;
    const bytes = Object.entries(s.bytes ?? {}).map(([k, b]) => `${k} ${round(b / MIB)} MiB`);
    rows.push([
      w.name,
      s.iterations,
      round(s.iteration_s, 3),
      s.update_s === undefined ? null : round(s.update_s, 3),
      round(s.stall_s, 3),
      s.flush_s === undefined ? null : round(s.flush_s, 3),
      bytes.join("; "),
    ]);
  }
  if (rows.length === 0) return undefined;
  return {
    name: "workloads",
    title: "Workloads (medians of the measured iterations)",
    columns: ["workload", "iterations", "iteration_s", "update_s", "stall_s", "flush_s", "bytes"],
    rows,
  };
}

/**
 * A trace replay: per mapped tier and direction, what moved and how fast;
 * then the whole trace, each thread and each phase, recorded beside
 * replayed.
 */
export function traceReplayTables(doc: ReportDocument): ReportTable[] {
  const t = doc.trace_replay;
  if (!t) return [];
  const lat = (d: { lat_ns: { N: number; percentile?: Record<string, number> } }, k: string) => {
    const v = d.lat_ns.percentile?.[k];
    return typeof v === "number" && d.lat_ns.N > 0 ? round(v / 1000, 2) : null;
  };
  const io: Cell[][] = t.tiers.flatMap((x) =>
    (["read", "write"] as const).filter((dir) => x[dir].total_ios > 0).map((dir) => [
      x.prefix,
      `${x.tier.kind}:${x.tier.path ?? ""}`,
      dir,
      round(x[dir].io_bytes / MIB),
      round(x[dir].bw_bytes / MIB),
      Math.round(x[dir].iops),
      x[dir].total_ios,
      lat(x[dir], "50.000000"),
      lat(x[dir], "99.000000"),
    ])
  );
  const times: Cell[][] = [
    ["whole trace", "", round(t.total.recorded_s, 6), round(t.total.replayed_s, 6)],
    ...t.threads.map((
      x,
    ): Cell[] => ["thread", x.thread, round(x.recorded_s, 6), round(x.replayed_s, 6)]),
    ...t.phases.map((
      x,
    ): Cell[] => ["phase", x.name, round(x.recorded_s, 6), round(x.replayed_s, 6)]),
  ];
  return [
    {
      name: "trace-replay",
      title: `Trace replay (--speed ${t.speed}): per tier and direction`,
      columns: [
        "prefix",
        "tier",
        "direction",
        "MiB",
        "bw_MiB_s",
        "iops",
        "requests",
        "lat_p50_us",
        "lat_p99_us",
      ],
      rows: io,
    },
    {
      name: "trace-replay-times",
      title: "Trace replay: recorded beside replayed, s",
      columns: ["what", "name", "recorded_s", "replayed_s"],
      rows: times,
    },
  ];
}

/** The plan's placement: subgroups per rank on each path. */
export function placementTable(plan: PlanDocument): ReportTable {
  const rows: Cell[][] = plan.placement.paths.map((p) => [
    p.name,
    p.tier,
    p.subgroups,
    round(p.ratio * 100, 1),
    p.cache_subgroups,
    p.readers ?? null,
    p.writers ?? null,
    p.bs,
    p.iodepth,
  ]);
  if (plan.placement.host_subgroups > 0) {
    rows.push([
      "host",
      "memory",
      plan.placement.host_subgroups,
      null,
      null,
      null,
      null,
      null,
      null,
    ]);
  }
  return {
    name: "placement",
    title: "Plan: placement (per rank)",
    columns: [
      "path",
      "tier",
      "subgroups",
      "share_pct",
      "cached_subgroups",
      "readers",
      "writers",
      "bs",
      "iodepth",
    ],
    rows,
  };
}

/** The predicted update phase of the plan and of the baselines. */
export function predictionsTable(plan: PlanDocument): ReportTable {
  const rows: Cell[][] = Object.entries(plan.predictions).map(([name, p]) => [
    name,
    round(p.update_s, 2),
    round(p.read_s, 2),
    round(p.write_s, 2),
    round(p.compute_s, 2),
    round(p.overlap_s, 2),
    p.feasible,
    p.note ?? "",
  ]);
  return {
    name: "predictions",
    title: "Plan: predicted update phase per rank (plan and baselines)",
    columns: [
      "update",
      "update_s",
      "read_s",
      "write_s",
      "compute_s",
      "hidden_s",
      "feasible",
      "note",
    ],
    rows,
  };
}

/** Every point of a sweep, the best of each tier marked. */
export function sweepTable(doc: ReportDocument): ReportTable | undefined {
  const s = sweepOf(doc);
  if (!s || s.tiers.length === 0) return undefined;
  const rows: Cell[][] = [];
  for (const t of s.tiers) {
    for (const pt of t.points) {
      const best = t.best && pt.bs === t.best.bs && pt.iodepth === t.best.iodepth &&
        pt.numjobs === t.best.numjobs;
      rows.push([
        t.tier,
        t.rw,
        pt.bs,
        pt.iodepth,
        pt.numjobs,
        round(pt.bw_bytes / MIB),
        Math.round(pt.iops),
        round(pt.lat_p50_ns / 1000, 2),
        round(pt.lat_p99_ns / 1000, 2),
        pt.runtime_ms,
        pt.steady,
        best,
      ]);
    }
  }
  return {
    name: "sweep",
    title: `Sweep${s.criterion ? ` (${s.criterion})` : ""}`,
    columns: [
      "tier",
      "rw",
      "bs",
      "iodepth",
      "numjobs",
      "bw_MiB_s",
      "iops",
      "lat_p50_us",
      "lat_p99_us",
      "runtime_ms",
      "steady",
      "best",
    ],
    rows,
  };
}

/**
 * Every table a report has for a result document and an optional plan, in
 * the order the report shows them; tables without data are left out.
 *
 * @example
 * ```ts ignore
 * for (const t of reportTables(doc)) console.log(t.name, t.rows.length);
 * ```
 */
export function reportTables(doc: ReportDocument | undefined, plan?: PlanDocument): ReportTable[] {
  const out: (ReportTable | undefined)[] = [];
  if (doc) {
    out.push(
      runsTable(doc),
      sweepTable(doc),
      concurrencyTable(doc),
      contentionTable(doc),
      workloadTable(doc),
    );
    out.push(...traceReplayTables(doc));
  }
  if (plan) out.push(placementTable(plan), predictionsTable(plan));
  return out.filter((t): t is ReportTable => t !== undefined);
}
