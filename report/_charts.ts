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

/** Runs whose lines are drawn: contention documents draw the tiers alone. */
function drawnRuns(doc: ReportDocument): RunResult[] {
  const runs = (doc.runs ?? []).filter((r) => directionsOf(r).length > 0);
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

/** Bandwidth per run and direction (bars). */
export function bandwidthChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    if (!s.doc) continue;
    const runs = (s.doc.runs ?? []).filter((r) => directionsOf(r).length > 0);
    const labels = runLabels(runs);
    for (const r of runs) {
      for (const dir of directionsOf(r)) {
        rows.push({
          source: s.label,
          run: multi ? `${patternLabel(r)} ${dir}` : labels.get(r)!,
          direction: dir,
          bw: round(r[dir].bw_bytes / MIB),
        });
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "bandwidth",
    title: "Bandwidth per tier and direction",
    caption: multi
      ? "MiB/s per pattern and direction, one bar per file (the mean where a file repeats a pattern)."
      : "MiB/s of each run, read and write side by side (last-done bandwidth).",
    spec: base({
      data: { values: rows },
      mark: { type: "bar", tooltip: true },
      width: { step: multi ? 18 * sources.length : 36 },
      height: 260,
      encoding: {
        x: {
          field: "run",
          type: "nominal",
          sort: null,
          title: null,
          axis: { labelAngle: -35, labelLimit: 260 },
        },
        xOffset: { field: multi ? "source" : "direction" },
        y: { field: "bw", type: "quantitative", aggregate: "mean", title: "MiB/s" },
        color: colour(multi, { field: "direction", type: "nominal", title: "direction" }),
      },
    }),
  };
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

/** Total latency per percentile, decoded from each run's HDR histograms (log scales). */
export function latencyChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    if (!s.doc) continue;
    const runs = drawnRuns(s.doc);
    const labels = runLabels(runs);
    for (const r of runs) {
      for (const dir of directionsOf(r)) {
        const encoded = r[dir].hist?.lat;
        if (typeof encoded !== "string" || encoded === "") continue;
        let h;
        try {
          h = decodeHistogram(encoded);
        } catch {
          continue; // an unreadable histogram draws no curve; the tables still have fio's figures
        }
        if (h.totalCount === 0) continue;
        const series = `${multi ? `${s.label}: ` : ""}${labels.get(r)} ${dir}`;
        for (const p of CURVE_PERCENTILES) {
          // a percentile needs at least one sample beyond it to mean anything
          if (h.totalCount * (1 - p / 100) < 1) break;
          rows.push({
            source: s.label,
            series,
            percentile: p,
            nines: 100 / (100 - p),
            lat_us: Math.max(round(h.getValueAtPercentile(p) / 1000, 3), 0.001),
          });
        }
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "latency",
    title: "Latency percentiles",
    caption: "Total latency (fio's lat: prepare to completion) at each percentile, from the " +
      "merged HDR histograms; both axes logarithmic, percentiles shown only where a sample lies beyond them.",
    spec: base({
      data: { values: rows },
      mark: { type: "line", point: true, tooltip: true },
      width: 640,
      height: 300,
      encoding: {
        x: {
          field: "nines",
          type: "quantitative",
          title: "percentile",
          scale: { type: "log" },
          axis: {
            values: [1.0101, 2, 10, 100, 1000, 10000, 100000],
            labelExpr: "format(100 - 100 / datum.value, '.3~f') + '%'",
          },
        },
        y: { field: "lat_us", type: "quantitative", title: "latency µs", scale: { type: "log" } },
        color: multi
          ? { field: "source", type: "nominal", title: "file" }
          : { field: "series", type: "nominal", title: "run", legend: { labelLimit: 320 } },
        detail: { field: "series" },
        tooltip: [
          { field: "series" },
          { field: "percentile" },
          { field: "lat_us", title: "µs" },
        ],
      },
    }),
  };
}

/** Bandwidth over time from each run's `timeseries`. */
export function timeseriesChart(sources: readonly ChartSource[]): ChartSpec | undefined {
  const multi = sources.length > 1;
  const rows: Record<string, unknown>[] = [];
  for (const s of sources) {
    if (!s.doc) continue;
    const runs = drawnRuns(s.doc);
    const labels = runLabels(runs);
    for (const r of runs) {
      const ts = r.timeseries;
      if (!ts || !Array.isArray(ts.t_ms)) continue;
      for (const dir of directionsOf(r)) {
        const bw = dir === "read" ? ts.read_bw_bytes : ts.write_bw_bytes;
        if (!Array.isArray(bw)) continue;
        const series = `${multi ? `${s.label}: ` : ""}${labels.get(r)} ${dir}`;
        ts.t_ms.forEach((t, i) => {
          const v = bw[i];
          if (typeof v === "number") {
            rows.push({ source: s.label, series, t_s: t / 1000, bw: round(v / MIB) });
          }
        });
      }
    }
  }
  if (rows.length === 0) return undefined;
  return {
    id: "timeseries",
    title: "Bandwidth over time",
    caption: "MiB/s in each logging interval (--log-avg-msec), from the end of the ramp.",
    spec: base({
      data: { values: rows },
      mark: { type: "line", point: true, tooltip: true },
      width: 640,
      height: 260,
      encoding: {
        x: { field: "t_s", type: "quantitative", title: "s since measurement began" },
        y: { field: "bw", type: "quantitative", title: "MiB/s" },
        color: multi
          ? { field: "source", type: "nominal", title: "file" }
          : { field: "series", type: "nominal", title: "run", legend: { labelLimit: 320 } },
        detail: { field: "series" },
      },
    }),
  };
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
          rows.push({
            source: s.label,
            direction: direction === "read" ? "reading" : "writing",
            tier,
            others,
            slowdown: ok ? v : null,
            label: ok ? v.toFixed(2) : "none moved",
          });
        }
      }
    }
  }
  if (rows.length === 0) return undefined;
  const layer = [
    { mark: { type: "rect", color: "#e5e5e5" } },
    {
      transform: [{ filter: "datum.slowdown != null" }],
      mark: { type: "rect", tooltip: true },
      encoding: {
        color: {
          field: "slowdown",
          type: "quantitative",
          title: "slowdown",
          scale: { type: "log", scheme: "redyellowgreen", reverse: true, domainMid: 1 },
        },
      },
    },
    { mark: { type: "text", fontSize: 10 }, encoding: { text: { field: "label" } } },
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
          rows.push({
            source: s.label,
            workload: `${w.name} (iteration ${iteration})`,
            path: key,
            series: `${s.label} ${key}`,
            t_s: round(((i + 0.5) * width) / 1000, 3),
            bw: round(bytes / MIB / (width / 1000)),
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
        mark: { type: "line", interpolate: "step-after", point: false, tooltip: true },
        encoding: {
          x: { field: "t_s", type: "quantitative", title: "s into the iteration" },
          y: { field: "bw", type: "quantitative", title: "MiB/s" },
          color: multi
            ? { field: "source", type: "nominal", title: "file" }
            : { field: "path", type: "nominal", title: "path" },
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
    if (plan.placement.host_subgroups > 0) {
      rows.push({ plan: s.label, part: "host memory", subgroups: plan.placement.host_subgroups });
    }
    for (const p of plan.placement.paths ?? []) {
      const onPath = p.subgroups - p.cache_subgroups;
      if (onPath > 0) {
        rows.push({ plan: s.label, part: `${p.name} (${p.tier})`, subgroups: onPath });
      }
      if (p.cache_subgroups > 0) {
        rows.push({
          plan: s.label,
          part: `${p.name} (${p.tier}), cached in host`,
          subgroups: p.cache_subgroups,
        });
      }
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
          mark: { type: "bar", tooltip: true },
          encoding: {
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
      mark: { type: "bar", tooltip: true },
      encoding: { color: { field, type: "nominal", title: null, scale } },
    },
    {
      mark: { type: "text", align: "left", dx: 4, fontSize },
      encoding: { text: { field: "label" } },
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
      rows.push({
        plan: s.label,
        update: name.replace("_", "-"),
        update_s: round(p.update_s, 2),
        fits: p.feasible ? "fits" : "does not fit",
        label: `${round(p.update_s, 1)} s${p.feasible ? "" : " (does not fit)"}`,
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
      for (const [key, v] of Object.entries(pt.update_s ?? {})) {
        if (typeof v !== "number") continue;
        rows.push({
          nodes: pt.nodes,
          panel: UPDATE,
          series: prefix + (names[key] ?? key),
          value: round(v, 2),
        });
      }
      if (pt.remote) {
        rows.push({
          nodes: pt.nodes,
          panel: REMOTE,
          series: `${prefix}plan on ${pt.remote.tier} (${pt.remote.basis})`,
          value: round((pt.fraction?.[pt.remote.tier] ?? 0) * 100, 1),
          basis: pt.remote.basis,
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
        mark: { type: "line", point: true, tooltip: true },
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
      rows.push({ item, kind: "predicted", s: round(predicted, 4), label: "" });
    }
    if (measured !== null) {
      const pct = error === null ? "" : ` (${error >= 0 ? "+" : ""}${Math.round(error * 100)} %)`;
      rows.push({
        item,
        kind: "measured",
        s: round(measured, 4),
        label: `${round(measured, 3)} s${pct}`,
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
        rows.push({
          tier: `${multi ? `${s.label}: ` : ""}${t.tier} ${t.rw}`,
          numjobs: `numjobs ${pt.numjobs}`,
          bs: formatSize(pt.bs),
          bs_bytes: pt.bs,
          iodepth: pt.iodepth,
          bw: round(pt.bw_bytes / MIB),
          label: `${Math.round(pt.bw_bytes / MIB)}${best ? " ★" : ""}${
            pt.steady === false ? "?" : ""
          }`,
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
            mark: { type: "rect", tooltip: true },
            encoding: {
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
            encoding: { text: { field: "label" } },
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
    latencyChart(sources),
    timeseriesChart(sources),
    sweepChart(sources),
    contentionChart(sources),
    workloadChart(sources),
    placementChart(sources),
    predictionsChart(sources),
    nodesChart(sources),
    replayChart(sources),
  ].filter((c): c is ChartSpec => c !== undefined);
}
