/**
 * The report's charts as vega-lite specs, one function per chart family.
 * Each takes every input ("source": one file in a report, several in a
 * comparison) and returns undefined when none of them has the data. With
 * one source, colour tells directions or runs apart; with several, colour
 * tells the sources apart (one colour per input file) and the rest is drawn
 * on top of each other.
 *
 * @module
 */

import { decodeHistogram } from "../core/recorder.ts";
import type { RunResult } from "../schema/result.ts";
import { formatSize } from "../core/units.ts";
import type { PlanDocument } from "../schema/plan.ts";
import { type ReportDocument, sweepOf } from "./document.ts";
import { directionsOf, patternLabel, round, workloadsOf } from "./tables.ts";
import { ganttBars, type TimelineSpan, timelineSpans } from "./timeline.ts";

/** One input of a chart: a labelled result document and/or plan. */
export interface ChartSource {
  /** Short label (the file's name, or `A`, `B` …). */
  label: string;
  doc?: ReportDocument;
  plan?: PlanDocument;
}

/** A chart: a vega-lite spec with a title and a caption saying what it shows. */
export interface ChartSpec {
  /** Stable id (`bandwidth`, `latency`, …), used for element ids and tests. */
  id: string;
  title: string;
  caption: string;
  spec: Record<string, unknown>;
}

const MIB = 1024 * 1024;
/** Most lines per source on the latency and time-series charts (legends stay readable). */
export const MAX_SERIES = 16;
/** Time bins of a workload timeline. */
const TIMELINE_BINS = 120;

const SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json";

function base(extra: Record<string, unknown>): Record<string, unknown> {
  return { $schema: SCHEMA, background: "white", padding: 8, ...extra };
}

/**
 * The `description` channel of a data mark: the row's `tip`, the text that
 * report/_svg.ts puts in the mark's `<title>` (shown on hover, no script).
 */
const TIP = { description: { field: "tip" } } as const;

/**
 * A line per `series` (its title: the series) and a titled point at every
 * vertex (its title: the row's `tip`), sharing the enclosing encoding.
 */
function lineLayers(
  line: Record<string, unknown> = {},
  point: Record<string, unknown> = {},
): Record<string, unknown>[] {
  return [
    { mark: { type: "line", ...line }, encoding: { description: { field: "series" } } },
    { mark: { type: "point", filled: true, ...point }, encoding: TIP },
  ];
}

/** What changes from one panelled chart to the next. */
interface Panels {
  readonly id: string;
  readonly title: string;
  readonly caption: string;
  readonly rows: Record<string, unknown>[];
  /** The field that makes one small panel per value (a tier), and its title. */
  readonly panel: { readonly field: string; readonly title: string | null };
  /** The marks drawn in every panel (default: a line per `series` and a point per row). */
  readonly layer?: Record<string, unknown>[];
  /** x, y, colour and the rest, shared by every panel. */
  readonly encoding: Record<string, unknown>;
  readonly width?: number | { step: number };
  readonly height?: number;
  /**
   * The scales each panel has of its own (default y: tiers ten times apart
   * would flatten each other; x too where each panel has its own categories).
   */
  readonly own?: readonly ("x" | "y")[];
  /** Panels per row. */
  readonly columns?: number;
}

/**
 * A chart of small panels, one per value of `o.panel.field` (a tier), each
 * drawn with the same layers and encoding: the one spec every panelled
 * chart of the report is made from.
 */
function panelChart(o: Panels): ChartSpec {
  // panels in the order the rows name them, the harness's ceiling last
  const order = [...new Set(o.rows.map((r) => String(r[o.panel.field])))];
  order.sort((a, b) => Number(a.startsWith("null")) - Number(b.startsWith("null")));
  // a dash belongs to the lines alone: on the points too, its legend would draw filled dots
  const { strokeDash, ...encoding } = o.encoding;
  const layer = (o.layer ?? lineLayers()).map((l) =>
    strokeDash !== undefined && (l.mark as { type?: string } | undefined)?.type === "line"
      ? { ...l, encoding: { ...(l.encoding as object), strokeDash } }
      : l
  );
  return {
    id: o.id,
    title: o.title,
    caption: o.caption,
    spec: base({
      data: { values: o.rows },
      facet: { field: o.panel.field, type: "nominal", title: o.panel.title, sort: order },
      columns: o.columns ?? 3,
      config: { legend: { orient: "bottom", columns: 3, labelLimit: 360 } },
      resolve: {
        scale: Object.fromEntries((o.own ?? ["y"]).map((axis) => [axis, "independent"])),
      },
      spec: {
        width: o.width ?? 260,
        height: o.height ?? 180,
        encoding,
        layer,
      },
    }),
  };
}

/** The panel a run goes in: its tier kind, the null tier named as the harness's ceiling. */
function tierPanel(r: RunResult): string {
  const kind = r.tier?.kind ?? "?";
  return kind === "null" ? "null (harness ceiling)" : kind;
}

/** A number for a tip: at most `digits` decimals, grouped thousands. */
function num(v: number, digits = 1): string {
  return v.toLocaleString("en-US", { maximumFractionDigits: digits });
}

/**
 * A document's runs of its own patterns: every run that moved bytes, less
 * the concurrency curves' runs (their own chart draws them).
 */
function ownRuns(doc: ReportDocument): RunResult[] {
  const curves = new Set(
    (doc.concurrency?.tiers ?? []).flatMap((t) =>
      (t.curves ?? []).flatMap((c) => (c.points ?? []).flatMap((p) => p.runs ?? []))
    ),
  );
  return (doc.runs ?? []).filter((r) => directionsOf(r).length > 0 && !curves.has(r.name));
}

/** Runs whose lines are drawn: contention documents draw the tiers alone. */
function drawnRuns(doc: ReportDocument): RunResult[] {
  const runs = ownRuns(doc);
  const alone = doc.kind === "contention" ? runs.filter((r) => r.name.endsWith(" alone")) : [];
  return (alone.length > 0 ? alone : runs).slice(0, MAX_SERIES);
}

/** Labels runs by pattern, or by name where two runs of a document share a pattern. */
function runLabels(runs: readonly RunResult[]): Map<RunResult, string> {
  const count = new Map<string, number>();
  for (const r of runs) count.set(patternLabel(r), (count.get(patternLabel(r)) ?? 0) + 1);
  return new Map(runs.map((r) => [r, count.get(patternLabel(r))! > 1 ? r.name : patternLabel(r)]));
}

function colour(multi: boolean, single: Record<string, unknown>): Record<string, unknown> {
  return multi ? { field: "source", type: "nominal", title: "file" } : single;
}

/** Colour by file when several are drawn, else by the run field `field` (a long legend). */
function runColour(multi: boolean, field: string): Record<string, unknown> {
  return colour(multi, { field, type: "nominal", title: "run", legend: { labelLimit: 320 } });
}

/** One direction of one drawn run, and the name its line carries. */
interface DrawnSeries {
  /** The file's label. */
  source: string;
  run: RunResult;
  dir: "read" | "write";
  /** `label dir`, after `file: ` when several files are drawn. */
  series: string;
}

/** Every direction of every drawn run of every source, in order. */
function* drawnSeries(sources: readonly ChartSource[]): Generator<DrawnSeries> {
  const multi = sources.length > 1;
  for (const s of sources) {
    if (!s.doc) continue;
    const runs = drawnRuns(s.doc);
    const labels = runLabels(runs);
    for (const run of runs) {
      for (const dir of directionsOf(run)) {
        const series = `${multi ? `${s.label}: ` : ""}${labels.get(run)} ${dir}`;
        yield { source: s.label, run, dir, series };
      }
    }
  }
}

/** A run's pattern without its tier kind, for a panel that names the tier. */
function inPanel(label: string, r: RunResult): string {
  const kind = r.tier?.kind ?? "";
  return label.startsWith(`${kind} `) ? label.slice(kind.length + 1) : label;
}

/**
 * Bandwidth per run and direction: bars in one panel per tier, each on its
 * own scale, so neither the null tier's ceiling nor host memory flattens a
 * disk; the concurrency curves' runs are left to their own chart.
 */
export function bandwidthChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  // one bar per source, run and direction: the mean where a file repeats a pattern
  const bars = new Map<
    string,
    { source: string; panel: string; run: string; direction: string; bw: number[] }
  >();
  for (const s of sources) {
    if (!s.doc) continue;
    const runs = ownRuns(s.doc);
    const labels = runLabels(runs);
    for (const r of runs) {
      for (const dir of directionsOf(r)) {
        const run = inPanel(multi ? patternLabel(r) : labels.get(r)!, r);
        const panel = tierPanel(r);
        const key = JSON.stringify([s.label, panel, run, dir]);
        let bar = bars.get(key);
        if (!bar) bars.set(key, bar = { source: s.label, panel, run, direction: dir, bw: [] });
        bar.bw.push(r[dir].bw_bytes / MIB);
      }
    }
  }
  if (bars.size === 0) return undefined;
  const rows = [...bars.values()].map(({ bw, ...b }) => {
    const mean = round(bw.reduce((a, v) => a + v, 0) / bw.length);
    const what = `${multi ? `${b.source}: ` : ""}${b.panel}: ${b.run} ${b.direction}`;
    const of = bw.length > 1 ? ` (mean of ${bw.length} runs)` : "";
    return {
      ...b,
      direction: word(b.direction),
      bw: mean,
      tip: `${what}: ${num(mean)} MiB/s${of}`,
    };
  });
  return panelChart({
    id: "bandwidth",
    title: "Bandwidth per tier and direction",
    caption: (multi
      ? "MiB/s per pattern and direction, one bar per file (the mean where a file repeats a pattern)"
      : "MiB/s of each run, reading and writing side by side (last-done bandwidth)") +
      "; one panel per tier, each on its own scale; the null tier does no I/O: its panel is the " +
      "harness's own ceiling, not a tier.",
    rows,
    panel: { field: "panel", title: null },
    own: ["x", "y"],
    columns: 2,
    width: { step: multi ? 12 : 26 }, // per bar: a pattern holds one per direction (or file)
    height: 200,
    layer: [{ mark: { type: "bar" }, encoding: TIP }],
    encoding: {
      x: {
        field: "run",
        type: "nominal",
        sort: null,
        title: null,
        // "randread 4k" over "1 proc" over "× 32 deep"
        axis: {
          labelAngle: 0,
          labelExpr: "split(replace(datum.label, ' × ', ', × '), ', ')",
          labelFontSize: 9,
        },
      },
      xOffset: { field: multi ? "source" : "direction" },
      y: { field: "bw", type: "quantitative", title: "MiB/s" },
      color: colour(multi, { field: "direction", type: "nominal", title: "I/O" }),
    },
  });
}

/** `read` and `write` as the charts' legends say them. */
function word(direction: string): string {
  return direction === "read" ? "reading" : direction === "write" ? "writing" : direction;
}

/** Percentiles drawn on the latency curves (more nines kept only where there are samples). */
const CURVE_PERCENTILES = [
  1,
  10,
  20,
  30,
  40,
  50,
  60,
  70,
  80,
  90,
  95,
  98,
  99,
  99.5,
  99.9,
  99.95,
  99.99,
  99.995,
  99.999,
];

/**
 * Total latency per percentile, decoded from each run's HDR histograms (log
 * scales): one small panel per tier, a line per pattern and direction.
 */
export function latencyChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const { source, run, dir, series } of drawnSeries(sources)) {
    const encoded = run[dir].hist?.lat;
    if (typeof encoded !== "string" || encoded === "") continue;
    let h;
    try {
      h = decodeHistogram(encoded);
    } catch {
      continue; // an unreadable histogram draws no curve; the tables still have fio's figures
    }
    if (h.totalCount === 0) continue;
    const panel = tierPanel(run);
    const line = multi ? series : inPanel(series, run);
    for (const p of CURVE_PERCENTILES) {
      // a percentile needs at least one sample beyond it to mean anything
      if (h.totalCount * (1 - p / 100) < 1) break;
      const lat = Math.max(round(h.getValueAtPercentile(p) / 1000, 3), 0.001);
      rows.push({
        source,
        panel,
        series: line,
        percentile: p,
        nines: 100 / (100 - p),
        lat_us: lat,
        tip: `${panel}: ${line}: p${p} = ${num(lat, 3)} µs`,
      });
    }
  }
  if (rows.length === 0) return undefined;
  return panelChart({
    id: "latency",
    title: "Latency percentiles",
    caption: "Total latency (fio's lat: prepare to completion) at each percentile, from the " +
      "merged HDR histograms; one panel per tier, each on its own scale; both axes " +
      "logarithmic, percentiles shown only where a sample lies beyond them.",
    rows,
    panel: { field: "panel", title: null },
    encoding: {
      x: {
        field: "nines",
        type: "quantitative",
        title: "percentile",
        scale: { type: "log" },
        axis: {
          values: [1.0101, 2, 10, 100, 1000, 10000, 100000],
          labelExpr: "format(100 - 100 / datum.value, '.3~f') + '%'",
          labelAngle: -40,
        },
      },
      y: { field: "lat_us", type: "quantitative", title: "latency µs", scale: { type: "log" } },
      color: runColour(multi, "series"),
      detail: { field: "series" },
    },
  });
}

/** The line dashes of a `strokeDash` encoding, in order, and their names for a caption. */
const DASHES: readonly { readonly dash: readonly number[]; readonly name: string }[] = [
  { dash: [1, 0], name: "solid" },
  { dash: [6, 3], name: "dashed" },
  { dash: [2, 2], name: "dotted" },
  { dash: [8, 3, 2, 3], name: "dash-dotted" },
];

/**
 * `field`'s values drawn as {@linkcode DASHES} in the order of `domain`, the
 * legend drawing each as a grey line of its dash (a point would not show it).
 */
function dashes(field: string, title: string | null, domain: readonly string[]) {
  return {
    field,
    type: "nominal",
    title,
    scale: { domain, range: domain.map((_, i) => DASHES[i % DASHES.length]!.dash) },
    legend: { symbolType: "stroke", symbolStrokeColor: "#555", symbolStrokeWidth: 2 },
  };
}

/** `solid 1 MiB, dashed 2 MiB`: which dash draws which of `domain`. */
function dashWords(domain: readonly string[]): string {
  return domain.map((d, i) => `${DASHES[i % DASHES.length]!.name} ${d}`).join(", ");
}

/** A request size for a legend: `1 MiB`. */
function sizeWords(bytes: number): string {
  return formatSize(bytes).replace(/^(\d+)([kmg])$/, (_, n, u) => `${n} ${u.toUpperCase()}iB`);
}

/**
 * Bandwidth against processes at once, per tier: reading, writing and both
 * (n reading while n others write: their total), a line per request size —
 * what one figure per tier cannot say about R ranks swapping at once.
 */
export function concurrencyChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    for (const t of s.doc?.concurrency?.tiers ?? []) {
      for (const c of t.curves ?? []) {
        for (const p of c.points ?? []) {
          const kinds: [string, number | undefined][] = [
            ["reading", p.read_bw_bytes],
            ["writing", p.write_bw_bytes],
            [
              "both",
              p.mixed_read_bw_bytes === undefined
                ? undefined
                : p.mixed_read_bw_bytes + (p.mixed_write_bw_bytes ?? 0),
            ],
          ];
          for (const [io, bw] of kinds) {
            if (bw === undefined) continue;
            const size = sizeWords(c.bs);
            const series = `${multi ? `${s.label}: ` : ""}${io}, ${size}`;
            const mib = round(bw / MIB);
            const procs = `${p.processes} proc${p.processes === 1 ? "" : "s"} × ${c.iodepth} deep`;
            rows.push({
              source: s.label,
              panel: t.label,
              io,
              size,
              bs: c.bs,
              depth: c.iodepth,
              series,
              processes: p.processes,
              bw: mib,
              tip: `${t.label} ${series}, ${procs}: ${num(mib)} MiB/s in all`,
            });
          }
        }
      }
    }
  }
  if (rows.length === 0) return undefined;
  const sizes = [...new Map(rows.map((r) => [r.size as string, r.bs as number]))]
    .sort((a, b) => a[1] - b[1]).map(([size]) => size);
  const depths = [...new Set(rows.map((r) => r.depth as number))].sort((a, b) => a - b);
  return panelChart({
    id: "concurrency",
    title: "Bandwidth against processes at once",
    caption: `MiB/s of n processes together, each its own file and ${depths.join(" or ")} ` +
      "requests in flight, as n ranks swapping at once would: all reading, all writing, and both " +
      `(n reading while n others write: the total); requests ${dashWords(sizes)}; one panel ` +
      "per tier on its own scale; a count left out (alike on either side) reads as the line " +
      "between its neighbours.",
    rows,
    panel: { field: "panel", title: null },
    encoding: {
      x: {
        field: "processes",
        type: "quantitative",
        title: "processes at once",
        axis: { tickMinStep: 1, format: "d" },
      },
      y: { field: "bw", type: "quantitative", title: "MiB/s in all" },
      color: multi
        ? { field: "source", type: "nominal", title: "file" }
        : { field: "io", type: "nominal", title: "I/O", sort: ["reading", "writing", "both"] },
      strokeDash: dashes("size", "request", sizes),
      detail: { field: "series" },
    },
  });
}

/**
 * The remote tiers' bandwidth against nodes doing I/O at once (a run across
 * nodes): all the nodes together and each node's share, reading and writing.
 */
export function scalingChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    for (const t of s.doc?.scaling?.tiers ?? []) {
      for (const p of t.points ?? []) {
        for (const dir of ["read", "write"] as const) {
          const d = p[dir];
          if (!d) continue;
          for (const [what, bw] of [["all nodes", d.bw_bytes], ["per node", d.bw_bytes_per_node]]) {
            const series = `${multi ? `${s.label}: ` : ""}${word(dir)}, ${what}`;
            const mib = round(Number(bw) / MIB);
            rows.push({
              source: s.label,
              panel: t.label,
              io: word(dir),
              what,
              series,
              nodes: p.nodes,
              bw: mib,
              tip: `${t.label} ${series} at ${p.nodes} node${p.nodes === 1 ? "" : "s"}: ` +
                `${num(mib)} MiB/s`,
            });
          }
        }
      }
    }
  }
  if (rows.length === 0) return undefined;
  return panelChart({
    id: "scaling",
    title: "Shared tier against nodes at once",
    caption: "MiB/s of the shared tier with 1, 2, 4 … nodes doing the same I/O at once (one " +
      "process per node): all the nodes together (solid) and what each node got (dashed), " +
      "reading and writing; what a plan for an N-node job reads (plan --nodes).",
    rows,
    panel: { field: "panel", title: null },
    encoding: {
      x: {
        field: "nodes",
        type: "quantitative",
        title: "nodes at once",
        axis: { tickMinStep: 1, format: "d" },
      },
      y: { field: "bw", type: "quantitative", title: "MiB/s" },
      color: multi
        ? { field: "source", type: "nominal", title: "file" }
        : { field: "io", type: "nominal", title: "I/O" },
      strokeDash: dashes("what", null, ["all nodes", "per node"]),
      detail: { field: "series" },
    },
  });
}

/** Bandwidth over time from each run's `timeseries`: one panel per tier. */
export function timeseriesChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const { source, run, dir, series } of drawnSeries(sources)) {
    const ts = run.timeseries;
    if (!ts || !Array.isArray(ts.t_ms)) continue;
    const bw = dir === "read" ? ts.read_bw_bytes : ts.write_bw_bytes;
    if (!Array.isArray(bw)) continue;
    const panel = tierPanel(run);
    const line = multi ? series : inPanel(series, run);
    ts.t_ms.forEach((t, i) => {
      const v = bw[i];
      if (typeof v === "number") {
        const bw = round(v / MIB);
        const tip = `${panel}: ${line}: ${num(t / 1000, 3)} s, ${num(bw)} MiB/s`;
        rows.push({ source, panel, series: line, t_s: t / 1000, bw, tip });
      }
    });
  }
  if (rows.length === 0) return undefined;
  return panelChart({
    id: "timeseries",
    title: "Bandwidth over time",
    caption: "MiB/s in each logging interval (--log-avg-msec), from the end of the ramp; one " +
      "panel per tier, each on its own scale.",
    rows,
    panel: { field: "panel", title: null },
    encoding: {
      x: { field: "t_s", type: "quantitative", title: "s since measurement began" },
      y: { field: "bw", type: "quantitative", title: "MiB/s" },
      color: runColour(multi, "series"),
      detail: { field: "series" },
    },
  });
}

/**
 * Total latency over time: p50 and p99 of each logging interval, read from
 * the interval's HDR histogram (`timeseries.read_lat_p50_ns` …, written since
 * interval logs were added; older results draw no such chart).
 */
export function latencyTimeChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const { source, run: r, dir, series: run } of drawnSeries(sources)) {
    const ts = r.timeseries;
    if (!ts || !Array.isArray(ts.t_ms)) continue;
    const p50 = ts[`${dir}_lat_p50_ns`];
    const p99 = ts[`${dir}_lat_p99_ns`];
    const max = ts[`${dir}_lat_max_ns`];
    if (!Array.isArray(p50) || !Array.isArray(p99)) continue;
    const panel = tierPanel(r);
    const line = multi ? run : inPanel(run, r);
    ts.t_ms.forEach((t, i) => {
      const top = max?.[i];
      for (const [pct, values] of [["p50", p50], ["p99", p99]] as const) {
        const v = values[i];
        if (typeof v !== "number" || v <= 0) continue;
        const us = Math.max(round(v / 1000, 3), 0.001);
        const also = pct === "p99" && typeof top === "number"
          ? ` (max ${num(top / 1000, 3)} µs)`
          : "";
        rows.push({
          source,
          panel,
          run: line,
          percentile: pct,
          series: `${line} ${pct}`,
          t_s: t / 1000,
          lat_us: us,
          tip: `${panel}: ${line} ${pct}: ${num(t / 1000, 3)} s, ${num(us, 3)} µs${also}`,
        });
      }
    });
  }
  if (rows.length === 0) return undefined;
  return panelChart({
    id: "latency-time",
    title: "Latency over time",
    caption: "Total latency (fio's lat) of the requests that completed in each logging interval " +
      "(--log-avg-msec): p50 solid, p99 dashed, from each interval's HDR histogram merged over " +
      "jobs; one panel per tier; latency axis logarithmic; an interval where none completed has " +
      "no point.",
    rows,
    panel: { field: "panel", title: null },
    encoding: {
      x: { field: "t_s", type: "quantitative", title: "s since measurement began" },
      y: { field: "lat_us", type: "quantitative", title: "latency µs", scale: { type: "log" } },
      color: runColour(multi, "run"),
      strokeDash: dashes("percentile", "percentile", ["p50", "p99"]),
      detail: { field: "series" },
    },
  });
}

/** The contention matrix as a heatmap: a tier's slowdown per group of other tiers. */
export function contentionChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    const c = s.doc?.contention;
    if (!c?.slowdown) continue;
    for (const [direction, byTier] of Object.entries(c.slowdown)) {
      for (const [tier, byOthers] of Object.entries(byTier ?? {})) {
        for (const [others, v] of Object.entries(byOthers ?? {})) {
          const ok = typeof v === "number" && v > 0;
          const doing = direction === "read" ? "reading" : "writing";
          const what = ok ? `slowdown ${v.toFixed(2)}` : "moved nothing";
          rows.push({
            source: s.label,
            direction: doing,
            tier,
            others,
            slowdown: ok ? v : null,
            label: ok ? v.toFixed(2) : "none moved",
            tip: `${multi ? `${s.label}: ` : ""}${tier} ${doing} while ${others} did I/O: ${what}`,
          });
        }
      }
    }
  }
  if (rows.length === 0) return undefined;
  const layer = [
    { mark: { type: "rect", color: "#e5e5e5" }, encoding: TIP },
    {
      transform: [{ filter: "datum.slowdown != null" }],
      mark: { type: "rect" },
      encoding: {
        ...TIP,
        color: {
          field: "slowdown",
          type: "quantitative",
          title: "slowdown",
          scale: { type: "log", scheme: "redyellowgreen", reverse: true, domainMid: 1 },
        },
      },
    },
    { mark: { type: "text", fontSize: 10 }, encoding: { text: { field: "label" }, ...TIP } },
  ];
  return {
    id: "contention",
    title: "Contention matrix",
    caption: "Each tier's slowdown (bandwidth alone / bandwidth while the tiers of the column " +
      "did I/O; `x:write` means x wrote while the row's tier read); 1 is unaffected, 2 half as " +
      "fast; grey where the tier moved nothing.",
    spec: base({
      data: { values: rows },
      facet: {
        column: { field: "direction", type: "nominal", title: "the row's tier is" },
        ...(multi ? { row: { field: "source", type: "nominal", title: "file" } } : {}),
      },
      resolve: { scale: { x: "independent" } },
      spec: {
        width: { step: 70 },
        height: { step: 28 },
        encoding: {
          x: {
            field: "others",
            type: "nominal",
            title: "while these did I/O",
            axis: { labelAngle: -30 },
          },
          y: { field: "tier", type: "nominal", title: null },
        },
        layer,
      },
    }),
  };
}

/** Reads and writes per path over one iteration of each workload (binned MiB/s). */
export function workloadChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    if (!s.doc) continue;
    for (const w of workloadsOf(s.doc)) {
      const spans = (w.timeline?.spans ?? []).filter((x) =>
        Array.isArray(x) && (x[2] === "read" || x[2] === "write") && x[6] > x[5]
      );
      if (spans.length === 0) continue;
      const end = Math.max(...spans.map((x) => x[6]));
      const width = end / TIMELINE_BINS;
      const bins = new Map<string, number[]>();
      for (const [, stream, kind, , bytes, start, stop] of spans) {
        const key = `${stream.split(":")[0]} ${kind}`;
        let b = bins.get(key);
        if (!b) bins.set(key, b = new Array(TIMELINE_BINS).fill(0));
        const rate = bytes / (stop - start); // bytes per ms, spread over the op's time
        const first = Math.min(Math.floor(start / width), TIMELINE_BINS - 1);
        const last = Math.min(Math.floor(stop / width), TIMELINE_BINS - 1);
        for (let i = first; i <= last; i++) {
          const lo = Math.max(start, i * width);
          const hi = Math.min(stop, (i + 1) * width);
          if (hi > lo) b[i]! += rate * (hi - lo);
        }
      }
      const iteration = w.timeline.iteration;
      for (const [key, b] of [...bins.entries()].sort()) {
        b.forEach((bytes, i) => {
          const t = round(((i + 0.5) * width) / 1000, 3);
          const bw = round(bytes / MIB / (width / 1000));
          const series = `${multi ? `${s.label}: ` : ""}${w.name} ${key}`;
          rows.push({
            source: s.label,
            workload: `${w.name} (iteration ${iteration})`,
            path: key,
            series,
            t_s: t,
            bw,
            tip: `${series}: ${num(t, 3)} s, ${num(bw)} MiB/s`,
          });
        });
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "workload",
    title: "Workload timelines",
    caption: `Reads and writes per path over the recorded iteration, all ranks together: each ` +
      `op's bytes spread over its time, in ${TIMELINE_BINS} bins (MiB/s).`,
    spec: base({
      data: { values: rows },
      facet: { row: { field: "workload", type: "nominal", title: null } },
      resolve: { scale: { x: "independent" } },
      spec: {
        width: 640,
        height: 140,
        layer: lineLayers({ interpolate: "step-after" }, { size: 9 }),
        encoding: {
          x: { field: "t_s", type: "quantitative", title: "s into the iteration" },
          y: { field: "bw", type: "quantitative", title: "MiB/s" },
          color: colour(multi, { field: "path", type: "nominal", title: "path" }),
          ...(multi ? { strokeDash: { field: "path", type: "nominal", title: "path" } } : {}),
          detail: { field: "series" },
        },
      },
    }),
  };
}

/** The plan's placement: subgroups per rank on each path, cached ones apart. */
export function placementChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    const plan = s.plan;
    if (!plan?.placement) continue;
    const add = (part: string, subgroups: number) =>
      rows.push({
        plan: s.label,
        part,
        subgroups,
        tip: `${s.label}: ${part}: ${subgroups} subgroup${subgroups === 1 ? "" : "s"} per rank`,
      });
    if (plan.placement.host_subgroups > 0) add("host memory", plan.placement.host_subgroups);
    for (const p of plan.placement.paths ?? []) {
      const onPath = p.subgroups - p.cache_subgroups;
      if (onPath > 0) add(`${p.name} (${p.tier})`, onPath);
      if (p.cache_subgroups > 0) add(`${p.name} (${p.tier}), cached in host`, p.cache_subgroups);
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "placement",
    title: "Plan: placement",
    caption: "Optimizer subgroups of each rank by where they live at the end of a pass.",
    spec: base({
      data: { values: rows },
      width: 560,
      height: { step: 40 },
      layer: [
        {
          mark: { type: "bar" },
          encoding: {
            ...TIP,
            y: { field: "plan", type: "nominal", title: null },
            x: {
              field: "subgroups",
              type: "quantitative",
              stack: "zero",
              title: "subgroups per rank",
            },
            color: { field: "part", type: "nominal", title: "where", legend: { labelLimit: 300 } },
          },
        },
      ],
    }),
  };
}

/**
 * Horizontal bars coloured by `field` (its values and their colours in
 * `colours`, legend without a title), each labelled at its end with the
 * row's `label`.
 */
function labelledBars(
  field: string,
  colours: Record<string, string>,
  fontSize: number,
): Record<string, unknown>[] {
  const scale = { domain: Object.keys(colours), range: Object.values(colours) };
  return [
    {
      mark: { type: "bar" },
      encoding: { color: { field, type: "nominal", title: null, scale }, ...TIP },
    },
    {
      mark: { type: "text", align: "left", dx: 4, fontSize },
      encoding: { text: { field: "label" }, ...TIP },
    },
  ];
}

/** Predicted update phase of the plan beside the baselines. */
export function predictionsChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    const preds = s.plan?.predictions;
    if (!preds) continue;
    for (const [name, p] of Object.entries(preds)) {
      if (typeof p?.update_s !== "number") continue;
      const update = name.replace("_", "-");
      const fits = p.feasible ? "fits" : "does not fit";
      rows.push({
        plan: s.label,
        update,
        update_s: round(p.update_s, 2),
        fits,
        label: `${round(p.update_s, 1)} s${p.feasible ? "" : " (does not fit)"}`,
        tip: `${s.label}: ${update}: ${num(p.update_s, 2)} s predicted update phase (${fits})`,
      });
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "predictions",
    title: "Plan: predicted vs baseline update phase",
    caption: "Predicted update-phase time per rank of the plan and of ZeRO-Infinity (all on the " +
      "node-local tier) and ZeRO-Offload (all in host memory), on the same profile.",
    spec: base({
      data: { values: rows },
      width: 480,
      height: { step: 32 },
      encoding: {
        y: { field: "update", type: "nominal", title: null, sort: null },
        x: { field: "update_s", type: "quantitative", title: "predicted update phase, s" },
      },
      layer: labelledBars("fits", { "fits": "#4c78a8", "does not fit": "#bab0ac" }, 11),
    }),
  };
}

/** The update phase and the remote tier's share of state, by node count, of a plan's `--nodes` sweep. */
export function nodesChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  const names: Record<string, string> = {
    zero_infinity: "ZeRO-Infinity",
    plan: "plan",
    mlp_offload: "MLP-Offload (1 in 3 remote)",
  };
  const UPDATE = "predicted update phase, s";
  const REMOTE = "optimizer state on the remote tier, %";
  for (const s of sources) {
    const sweep = s.plan?.nodes_sweep;
    if (!Array.isArray(sweep)) continue;
    const prefix = multi ? `${s.label}: ` : "";
    for (const pt of sweep) {
      if (typeof pt?.nodes !== "number") continue;
      const at = `${pt.nodes} node${pt.nodes === 1 ? "" : "s"}`;
      for (const [key, v] of Object.entries(pt.update_s ?? {})) {
        if (typeof v !== "number") continue;
        const series = prefix + (names[key] ?? key);
        rows.push({
          nodes: pt.nodes,
          panel: UPDATE,
          series,
          value: round(v, 2),
          tip: `${series}, ${at}: ${num(v, 2)} s predicted update phase`,
        });
      }
      if (pt.remote) {
        const series = `${prefix}plan on ${pt.remote.tier} (${pt.remote.basis})`;
        const value = round((pt.fraction?.[pt.remote.tier] ?? 0) * 100, 1);
        rows.push({
          nodes: pt.nodes,
          panel: REMOTE,
          series,
          value,
          basis: pt.remote.basis,
          tip: `${series}, ${at}: ${num(value)} % of optimizer state on the remote tier`,
        });
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "nodes",
    title: "Plan: by node count",
    caption: "The plan's --nodes sweep: the predicted update phase per rank of ZeRO-Infinity, " +
      "the plan and MLP-Offload's fixed ratio, and the share of optimizer state the plan puts " +
      "on the remote tier, as every node of the job shares it (per-node bandwidth measured, " +
      "interpolated or extrapolated from the profile's scaling curve; docs/multinode.md).",
    spec: base({
      data: { values: rows },
      facet: { row: { field: "panel", type: "nominal", title: null, sort: [UPDATE, REMOTE] } },
      resolve: { scale: { y: "independent" } },
      spec: {
        width: 480,
        height: 180,
        layer: lineLayers(),
        encoding: {
          x: {
            field: "nodes",
            type: "quantitative",
            title: "nodes",
            scale: { type: "log", base: 2 },
          },
          y: { field: "value", type: "quantitative", title: null },
          color: { field: "series", type: "nominal", title: null },
        },
      },
    }),
  };
}

/** A replay: the plan's prediction × scale beside what its run measured, phase and path. */
export function replayChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  const add = (source: string, part: string, predicted: number | null, measured: number | null) => {
    const item = multi ? `${source}: ${part}` : part;
    const error = predicted && measured !== null ? measured / predicted - 1 : null;
    if (predicted !== null) {
      const tip = `${item}, predicted × scale: ${num(predicted, 4)} s`;
      rows.push({ item, kind: "predicted", s: round(predicted, 4), label: "", tip });
    }
    if (measured !== null) {
      const pct = error === null ? "" : ` (${error >= 0 ? "+" : ""}${Math.round(error * 100)} %)`;
      rows.push({
        item,
        kind: "measured",
        s: round(measured, 4),
        label: `${round(measured, 3)} s${pct}`,
        tip: `${item}, measured: ${num(measured, 4)} s${pct}`,
      });
    }
  };
  for (const src of sources) {
    const r = src.doc?.replay;
    if (!r) continue;
    add(src.label, "update phase", r.predicted.update_s_scaled, r.measured.update_s);
    for (const p of r.paths ?? []) {
      add(src.label, `${p.path} busy`, p.predicted.busy_s, p.measured.busy_s);
    }
    const a = r.activations;
    if (a) {
      for (const [name, run] of [["planned", a.plan], ["all out", a.all]] as const) {
        for (const phase of ["forward", "backward"] as const) {
          add(
            src.label,
            `activations (${name}) ${phase}`,
            run.predicted[`${phase}_s`],
            run.measured[`${phase}_s`],
          );
        }
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "replay",
    title: "Replay: predicted × scale vs measured",
    caption: "The plan's predicted update phase (and each path's busy time, and the activation " +
      "phases when replayed with --activations), scaled as the replay ran it, beside the median " +
      "the run measured; the label gives measured / predicted − 1.",
    spec: base({
      data: { values: rows },
      width: 480,
      height: { step: 16 },
      encoding: {
        y: { field: "item", type: "nominal", title: null, sort: null, axis: { labelLimit: 320 } },
        yOffset: { field: "kind", sort: ["predicted", "measured"] },
        x: { field: "s", type: "quantitative", title: "seconds" },
      },
      layer: labelledBars("kind", { predicted: "#bab0ac", measured: "#4c78a8" }, 10),
    }),
  };
}

/** What each timeline source is called on the Gantt chart. */
const GANTT_SOURCE: Record<string, string> = {
  simulated: "simulated (the plan × scale)",
  measured: "measured",
  replayed: "replayed",
};

/**
 * Every op of a document's timeline as a bar on its track (rank × stream,
 * or process × thread): a workload's measured iteration, a plan's simulated
 * ones, a replay's simulated iteration beside its measured one on the same
 * time axis, a trace replay's threads. Near neighbours of one track and kind
 * are drawn as one bar (its tip says how many).
 */
export function ganttChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  const panels: string[] = [];
  const notes: string[] = [];
  for (const src of sources) {
    const spans: TimelineSpan[] = [];
    for (const d of [src.doc, src.plan]) if (d) spans.push(...timelineSpans(d));
    if (spans.length === 0) continue;
    const g = ganttBars(spans);
    for (const [source, n] of g.cut) notes.push(`${source}: ${n} more tracks not drawn`);
    for (const source of g.tracks.keys()) {
      const name = GANTT_SOURCE[source] ?? source;
      panels.push(multi ? `${src.label}: ${name}` : name);
    }
    for (const b of g.bars) {
      const name = GANTT_SOURCE[b.source] ?? b.source;
      const what = b.ops > 1 ? `${b.ops} ${b.kind} ops from ${b.first}` : `${b.kind} ${b.first}`;
      rows.push({
        panel: multi ? `${src.label}: ${name}` : name,
        track: b.track,
        kind: b.kind,
        start_s: round(b.start_ms / 1000, 6),
        end_s: round(b.end_ms / 1000, 6),
        tip: `${b.track}: ${what}, ${num(b.start_ms / 1000, 4)}–${num(b.end_ms / 1000, 4)} s` +
          (b.bytes > 0 ? `, ${formatSize(b.bytes)}` : ""),
      });
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "gantt",
    title: "Timeline",
    caption: "Each op as a bar on its track (rank × stream, or process × thread), from the start " +
      "of the iteration or replay; a replay's simulated iteration (the plan's, × scale) above " +
      "the one it measured, on one time axis. Ops of a track and kind closer than 1/800 of the " +
      `panel's length are drawn as one bar.${notes.length > 0 ? ` ${notes.join("; ")}.` : ""}`,
    spec: base({
      data: { values: rows },
      facet: { row: { field: "panel", type: "nominal", title: null, sort: panels } },
      resolve: { scale: { y: "independent" } },
      spec: {
        width: 760,
        height: { step: 12 },
        mark: { type: "bar" },
        encoding: {
          y: {
            field: "track",
            type: "nominal",
            title: null,
            sort: null,
            axis: { labelLimit: 260 },
          },
          x: { field: "start_s", type: "quantitative", title: "s from the start" },
          x2: { field: "end_s" },
          color: { field: "kind", type: "nominal", title: "op", scale: { scheme: "tableau10" } },
          ...TIP,
        },
      },
    }),
  };
}

/** A sweep's grid: bandwidth per bs × iodepth, one heatmap per tier and numjobs. */
export function sweepChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    const sweep = s.doc ? sweepOf(s.doc) : undefined;
    if (!sweep) continue;
    for (const t of sweep.tiers) {
      for (const pt of t.points) {
        if (typeof pt?.bs !== "number" || typeof pt.bw_bytes !== "number") continue;
        const best = t.best !== undefined && pt.bs === t.best.bs &&
          pt.iodepth === t.best.iodepth && pt.numjobs === t.best.numjobs;
        const tier = `${multi ? `${s.label}: ` : ""}${t.tier} ${t.rw}`;
        const bw = round(pt.bw_bytes / MIB);
        const p99 = typeof pt.lat_p99_ns === "number"
          ? `, p99 ${num(pt.lat_p99_ns / 1000)} µs`
          : "";
        const notes = `${best ? " (best)" : ""}${pt.steady === false ? " (not steady)" : ""}`;
        rows.push({
          tier,
          numjobs: `numjobs ${pt.numjobs}`,
          bs: formatSize(pt.bs),
          bs_bytes: pt.bs,
          iodepth: pt.iodepth,
          bw,
          label: `${Math.round(pt.bw_bytes / MIB)}${best ? " ★" : ""}${
            pt.steady === false ? "?" : ""
          }`,
          tip: `${tier}, bs ${formatSize(pt.bs)}, iodepth ${pt.iodepth}, numjobs ${pt.numjobs}: ` +
            `${num(bw)} MiB/s${p99}${notes}`,
        });
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "sweep",
    title: "Sweep: bandwidth by bs × iodepth",
    caption: "MiB/s at each point, one grid per tier and numjobs; ★ the best point of the tier, " +
      "? a point that did not reach steady state.",
    spec: base({
      data: { values: rows },
      facet: {
        row: { field: "tier", type: "nominal", title: null },
        column: { field: "numjobs", type: "nominal", title: null },
      },
      spec: {
        width: { step: 56 },
        height: { step: 26 },
        encoding: {
          x: {
            field: "bs",
            type: "ordinal",
            title: "bs",
            sort: { field: "bs_bytes", op: "min" },
          },
          y: { field: "iodepth", type: "ordinal", title: "iodepth", sort: "descending" },
        },
        layer: [
          {
            mark: { type: "rect" },
            encoding: {
              ...TIP,
              color: {
                field: "bw",
                type: "quantitative",
                title: "MiB/s",
                scale: { scheme: "viridis" },
              },
            },
          },
          {
            mark: { type: "text", fontSize: 10, color: "white" },
            encoding: { text: { field: "label" }, ...TIP },
          },
        ],
      },
    }),
  };
}

/**
 * A sweep's throughput against its p99 latency: per tier and pattern, one
 * line per iodepth through the points of each bs (or, where the grid has a
 * single bs, of each numjobs), so the knee where more requests in flight buy
 * latency and no bandwidth shows.
 */
export function sweepLatencyChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    const sweep = s.doc ? sweepOf(s.doc) : undefined;
    if (!sweep) continue;
    for (const t of sweep.tiers) {
      const points = t.points.filter((pt) =>
        typeof pt?.bs === "number" && typeof pt.bw_bytes === "number" &&
        typeof pt.lat_p99_ns === "number" && pt.lat_p99_ns > 0
      );
      const byBs = new Set(points.map((pt) => pt.bs)).size > 1;
      const jobsVary = new Set(points.map((pt) => pt.numjobs)).size > 1;
      const tier = `${multi ? `${s.label}: ` : ""}${t.tier} ${t.rw}`;
      for (const pt of points) {
        const line = `iodepth ${pt.iodepth}${byBs && jobsVary ? ` × numjobs ${pt.numjobs}` : ""}`;
        const bw = round(pt.bw_bytes / MIB);
        const p99 = round(pt.lat_p99_ns / 1000, 3);
        rows.push({
          tier,
          series: `${tier}, ${line}`,
          line,
          iodepth: pt.iodepth,
          order: byBs ? pt.bs : pt.numjobs,
          label: byBs ? formatSize(pt.bs) : `${pt.numjobs} jobs`,
          p99_us: p99,
          bw,
          tip: `${tier}, bs ${formatSize(pt.bs)}, iodepth ${pt.iodepth}, numjobs ${pt.numjobs}: ` +
            `${num(bw)} MiB/s at p99 ${num(p99, 3)} µs`,
        });
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "sweep-latency",
    title: "Sweep: throughput vs p99 latency",
    caption: "MiB/s against the p99 of total latency (the point's direction; reads for randrw), " +
      "one line per iodepth through the block sizes (labelled), or through numjobs where the " +
      "grid has one block size; latency axis logarithmic.",
    spec: base({
      data: { values: rows },
      facet: { row: { field: "tier", type: "nominal", title: null } },
      spec: {
        width: 560,
        height: 240,
        encoding: {
          x: {
            field: "p99_us",
            type: "quantitative",
            title: "p99 latency µs",
            scale: { type: "log" },
          },
          y: { field: "bw", type: "quantitative", title: "MiB/s" },
          color: {
            field: "line",
            type: "ordinal",
            title: null,
            sort: { field: "iodepth", op: "min" },
            scale: { scheme: "tableau10" },
          },
          detail: { field: "series" },
          order: { field: "order", type: "quantitative" },
        },
        layer: [
          ...lineLayers(),
          {
            mark: { type: "text", align: "left", dx: 5, dy: -5, fontSize: 9, color: "#555" },
            encoding: { text: { field: "label" }, ...TIP },
          },
        ],
      },
    }),
  };
}

/**
 * Every chart that has data, in the order a report shows them.
 *
 * @example
 * ```ts ignore
 * const charts = reportCharts([{ label: "run.json", doc }]);
 * ```
 */
export function reportCharts(sources: readonly ChartSource[]): ChartSpec[] {
  return [
    bandwidthChart(sources),
    concurrencyChart(sources),
    scalingChart(sources),
    latencyChart(sources),
    timeseriesChart(sources),
    latencyTimeChart(sources),
    sweepChart(sources),
    sweepLatencyChart(sources),
    contentionChart(sources),
    workloadChart(sources),
    ganttChart(sources),
    placementChart(sources),
    predictionsChart(sources),
    nodesChart(sources),
    replayChart(sources),
  ].filter((c): c is ChartSpec => c !== undefined);
}
