/**
 * `tierbench compare A.json B.json …`: result documents side by side, per
 * tier and pattern, each file's figures against the first's, with a ratio
 * and a mark: better, worse, or noise.
 *
 * Runs are matched by pattern — tier kind, rw, bs, iodepth, numjobs — and
 * direction (`--match pattern`, the default), or by run name
 * (`--match name`, for contention results where one pattern runs in many
 * groups). Several runs of one key in one file are repeated rounds: the
 * file's figure is their median.
 *
 * Noise criterion: each file's figure has a spread, the range from its
 * smallest to its largest sample — the repeated rounds' figures where a
 * file has two or more, else (bandwidth only) the run's time-series
 * intervals. A difference is noise when the two ranges overlap (a file
 * without a spread counts as the single point of its figure). Where neither
 * file has a spread, the difference is marked better or worse with no
 * claim about noise.
 *
 * ```sh
 * deno task tierbench compare results/a.json results/b.json --html results/compare.html
 * ```
 *
 * @module
 */

import Table from "cli-table3";
import pc from "picocolors";
import { basename } from "node:path";
import { ConfigError, InputError } from "../core/errors.ts";
import { checkOutputPath, writeFileAtomic } from "../core/output_file.ts";
import { redactSecrets } from "../core/secrets.ts";
import type { RunResult } from "../schema/result.ts";
import { formatRate } from "../core/units.ts";
import { median } from "../core/stats.ts";
import { reportCharts } from "./_charts.ts";
import { loadDocument, type ReportDocument } from "./document.ts";
import { escapeHtml, pageHtml } from "./html.ts";
import { directionsOf, patternLabel } from "./tables.ts";

/** How runs are matched across files. */
export const MATCH_MODES = ["pattern", "name"] as const;
/** One of {@linkcode MATCH_MODES}. */
export type MatchMode = typeof MATCH_MODES[number];

/** The noise criterion, as the output states it. */
export const NOISE_CRITERION =
  "noise = the two files' spreads overlap; a file's spread is the range of its repeated " +
  "rounds (several runs of one pattern in the file) or, for bandwidth with a single run, of " +
  "its time-series intervals";

/** One input file. */
export interface CompareInput {
  /** `A`, `B`, … */
  label: string;
  path: string;
  doc: ReportDocument;
}

/** Where a figure's spread came from. */
export type SpreadSource = "rounds" | "timeseries";

/** One file's figure for one key and metric. */
export interface CompareFigure {
  /** The median over rounds (the run's own figure when there is one round). */
  value: number;
  rounds: number;
  /** Smallest and largest sample, when known. */
  spread?: { min: number; max: number; source: SpreadSource };
}

/** better / worse than the first file, noise (within spread), or same (equal figures). */
export type Verdict = "better" | "worse" | "noise" | "same";

/** One line of the comparison: a key (pattern and direction) and a metric, every file's figure. */
export interface CompareRow {
  /** The pattern (`file randrw 1m, 1 proc × 8 deep`) or run name. */
  key: string;
  direction: "read" | "write";
  metric: "bandwidth" | "lat p50" | "lat p99";
  /** Bandwidth: higher is better; latency: lower is better. */
  higherIsBetter: boolean;
  /** Per file, in input order; null where the file has no such run. */
  figures: (CompareFigure | null)[];
  /** Per file: its figure / the first file's (null for the first, or where either is missing). */
  ratios: (number | null)[];
  verdicts: (Verdict | null)[];
}

/** The whole comparison. */
export interface Comparison {
  inputs: CompareInput[];
  match: MatchMode;
  rows: CompareRow[];
  criterion: string;
}

function keyOf(r: RunResult, match: MatchMode): string {
  return match === "name" ? r.name : patternLabel(r);
}

type Metric = CompareRow["metric"];
const METRICS: { metric: Metric; higherIsBetter: boolean }[] = [
  { metric: "bandwidth", higherIsBetter: true },
  { metric: "lat p50", higherIsBetter: false },
  { metric: "lat p99", higherIsBetter: false },
];

function sample(r: RunResult, dir: "read" | "write", metric: Metric): number | undefined {
  const d = r[dir];
  if (metric === "bandwidth") return d.bw_bytes;
  if (!(d.lat_ns?.N > 0)) return undefined;
  const v = d.lat_ns.percentile?.[metric === "lat p50" ? "50.000000" : "99.000000"];
  return typeof v === "number" ? v : undefined;
}

function figure(runs: readonly RunResult[], dir: "read" | "write", metric: Metric) {
  const values = runs.map((r) => sample(r, dir, metric)).filter((v): v is number =>
    v !== undefined
  );
  if (values.length === 0) return null;
  const f: CompareFigure = { value: median(values), rounds: values.length };
  if (values.length >= 2) {
    f.spread = { min: Math.min(...values), max: Math.max(...values), source: "rounds" };
  } else if (metric === "bandwidth") {
    const ts = runs[0]!.timeseries;
    const xs = (dir === "read" ? ts?.read_bw_bytes : ts?.write_bw_bytes) ?? [];
    if (xs.length >= 2) {
      f.spread = { min: Math.min(...xs), max: Math.max(...xs), source: "timeseries" };
    }
  }
  return f;
}

/**
 * The verdict on `b` against the baseline `a`.
 *
 * @example
 * ```ts
 * import { verdict } from "./compare.ts";
 * console.assert(verdict({ value: 100, rounds: 1 }, { value: 120, rounds: 1 }, true) === "better");
 * const a = { value: 100, rounds: 3, spread: { min: 90, max: 110, source: "rounds" as const } };
 * console.assert(verdict(a, { value: 105, rounds: 1 }, true) === "noise");
 * console.assert(verdict(a, { value: 105, rounds: 1 }, false) === "noise");
 * console.assert(verdict(a, { value: 80, rounds: 1 }, false) === "better");
 * ```
 */
export function verdict(a: CompareFigure, b: CompareFigure, higherIsBetter: boolean): Verdict {
  if (a.spread || b.spread) {
    const lo = (f: CompareFigure) => f.spread?.min ?? f.value;
    const hi = (f: CompareFigure) => f.spread?.max ?? f.value;
    if (lo(a) <= hi(b) && lo(b) <= hi(a)) return "noise";
  }
  if (b.value === a.value) return "same";
  return (b.value > a.value) === higherIsBetter ? "better" : "worse";
}

/**
 * Compares result documents: one row per key, direction and metric, each
 * file against the first.
 *
 * @example
 * ```ts ignore
 * const c = compareDocuments([{ label: "A", path: "a.json", doc: a }, { label: "B", path: "b.json", doc: b }]);
 * console.log(formatComparison(c));
 * ```
 */
export function compareDocuments(
  inputs: readonly CompareInput[],
  match: MatchMode = "pattern",
): Comparison {
  if (inputs.length < 2) throw new RangeError("compare needs two documents or more");
  const grouped = inputs.map((inp) => {
    const m = new Map<string, RunResult[]>();
    for (const r of inp.doc.runs ?? []) {
      if (r.status !== "ok" && directionsOf(r).length === 0) continue;
      const k = keyOf(r, match);
      let l = m.get(k);
      if (!l) m.set(k, l = []);
      l.push(r);
    }
    return m;
  });
  const keys: string[] = [];
  for (const g of grouped) for (const k of g.keys()) if (!keys.includes(k)) keys.push(k);
  const rows: CompareRow[] = [];
  for (const key of keys) {
    for (const dir of ["read", "write"] as const) {
      const runsPerFile = grouped.map((g) =>
        (g.get(key) ?? []).filter((r) => directionsOf(r).includes(dir))
      );
      if (runsPerFile.every((rs) => rs.length === 0)) continue;
      for (const { metric, higherIsBetter } of METRICS) {
        const figures = runsPerFile.map((rs) => rs.length === 0 ? null : figure(rs, dir, metric));
        if (figures.every((f) => f === null)) continue;
        const base = figures[0];
        const ratios = figures.map((f, i) =>
          i === 0 || !f || !base || base.value === 0 ? null : f.value / base.value
        );
        const verdicts = figures.map((f, i) =>
          i === 0 || !f || !base ? null : verdict(base, f, higherIsBetter)
        );
        rows.push({ key, direction: dir, metric, higherIsBetter, figures, ratios, verdicts });
      }
    }
  }
  return { inputs: [...inputs], match, rows, criterion: NOISE_CRITERION };
}

/** The host line of a file: the column header and legend. */
export function hostLine(doc: ReportDocument): string {
  const h = doc.host;
  if (!h) return "host unknown";
  return `${h.hostname} · ${h.cpu_model} ×${h.cores} · ${
    (h.memory_bytes / 1024 ** 3).toFixed(0)
  } GiB`;
}

/** The tiers a file measured, with what lies under them (`file:/x ext4 vda`). */
export function tierLine(doc: ReportDocument): string {
  const seen = new Set<string>();
  for (const r of doc.runs ?? []) {
    const t = r.tier;
    if (!t) continue;
    const dev = t.fs?.device ? ` on ${t.fs.device.name}` : "";
    const fs = t.fs ? ` (${t.fs.fs_type}${dev})` : "";
    seen.add(t.kind === "null" ? "null" : `${t.kind}:${t.path}${fs}`);
  }
  return [...seen].join(", ");
}

function formatValue(metric: Metric, v: number): string {
  if (metric === "bandwidth") return formatRate(v);
  const us = v / 1000;
  return `${us >= 100 ? us.toFixed(0) : us >= 10 ? us.toFixed(1) : us.toFixed(2)} µs`;
}

/** A figure as text: the value, and its spread as ± half the range relative to it. */
export function formatFigure(metric: Metric, f: CompareFigure | null): string {
  if (!f) return "–";
  const v = formatValue(metric, f.value);
  if (!f.spread || f.value === 0) return v;
  const half = (f.spread.max - f.spread.min) / 2 / f.value * 100;
  return `${v} ±${half.toFixed(0)}%${f.spread.source === "rounds" ? ` (${f.rounds} rounds)` : ""}`;
}

const MARKS: Record<Verdict, string> = {
  better: "▲ better",
  worse: "▼ worse",
  noise: "≈ noise",
  same: "= same",
};

function colourMark(v: Verdict | null): string {
  if (!v) return "";
  const m = MARKS[v];
  return v === "better" ? pc.green(m) : v === "worse" ? pc.red(m) : pc.dim(m);
}

/**
 * The comparison for the terminal: a legend naming each file, host and
 * tiers; the side-by-side table (cli-table3; colours only on a terminal);
 * and the noise criterion.
 *
 * @example
 * ```ts ignore
 * console.log(formatComparison(compareDocuments(inputs)));
 * ```
 */
export function formatComparison(c: Comparison): string {
  const head = ["pattern", "dir", "metric"];
  c.inputs.forEach((inp, i) => {
    head.push(`${inp.label}: ${hostLine(inp.doc)}`);
    if (i > 0) head.push(`${inp.label}/${c.inputs[0]!.label}`, "");
  });
  const table = new Table({
    head: head.map((h) => pc.bold(h)),
    style: { head: [], border: [] },
    wordWrap: true,
    colWidths: head.map((h, i) => (i >= 3 && h.includes("·") ? 30 : null)),
  });
  for (const r of c.rows) {
    const cells = [r.key, r.direction, r.metric];
    r.figures.forEach((f, i) => {
      cells.push(formatFigure(r.metric, f));
      if (i > 0) {
        const ratio = r.ratios[i];
        cells.push(ratio == null ? "–" : ratio.toFixed(2));
        cells.push(colourMark(r.verdicts[i] ?? null));
      }
    });
    table.push(cells);
  }
  const legend = c.inputs.map((inp) =>
    `${inp.label} = ${inp.path}: ${inp.doc.kind} ${inp.doc.started ?? ""}, ` +
    `${hostLine(inp.doc)}, ${inp.doc.host?.kernel ?? ""}; tiers ${tierLine(inp.doc) || "none"}`
  );
  const common = c.rows.some((r) => r.figures.filter((f) => f !== null).length >= 2);
  return [
    ...legend,
    table.toString(),
    `matched by ${c.match === "pattern" ? "tier kind, rw, bs, iodepth × numjobs" : "run name"}; ` +
    `bandwidth: higher is better, latency: lower is better`,
    c.criterion,
    ...(common ? [] : ["no run is in two files: nothing to set side by side (try --match name)"]),
  ].join("\n");
}

/** The comparison table as HTML, marks coloured by class. */
export function comparisonHtml(c: Comparison): string {
  const th = ["pattern", "dir", "metric"];
  c.inputs.forEach((inp, i) => {
    th.push(`${inp.label}: ${hostLine(inp.doc)}`);
    if (i > 0) th.push(`${inp.label}/${c.inputs[0]!.label}`, "");
  });
  const body = c.rows.map((r) => {
    const tds = [r.key, r.direction, r.metric].map((x) => `<td>${escapeHtml(x)}</td>`);
    r.figures.forEach((f, i) => {
      tds.push(`<td class="n">${escapeHtml(formatFigure(r.metric, f))}</td>`);
      if (i > 0) {
        const ratio = r.ratios[i];
        const v = r.verdicts[i];
        tds.push(`<td class="n">${ratio == null ? "–" : ratio.toFixed(2)}</td>`);
        tds.push(v ? `<td class="${v}">${escapeHtml(MARKS[v])}</td>` : "<td></td>");
      }
    });
    return `<tr>${tds.join("")}</tr>`;
  });
  return [
    "<h2>Side by side</h2>",
    '<table data-table="compare">',
    `<thead><tr>${th.map((h) => `<th>${escapeHtml(h)}</th>`).join("")}</tr></thead>`,
    `<tbody>${body.join("\n")}</tbody></table>`,
    `<p>${escapeHtml(c.criterion)}.</p>`,
  ].join("\n");
}

/** Options of {@linkcode runCompare}. */
export interface CompareOptions {
  match?: string | undefined;
  /** Write an HTML page here, with the report's charts overlaid (one colour per file). */
  html?: string | undefined;
}

/**
 * `tierbench compare`: reads the files, prints nothing, returns the
 * comparison and its terminal text, and writes the HTML page when asked.
 * Bad input throws a {@linkcode ConfigError} naming the argument.
 *
 * @example
 * ```ts ignore
 * const { text } = await runCompare(["a.json", "b.json"], { html: "cmp.html" });
 * console.log(text);
 * ```
 */
export async function runCompare(
  paths: readonly string[],
  options: CompareOptions = {},
): Promise<{ comparison: Comparison; text: string }> {
  const match = options.match ?? "pattern";
  if (!(MATCH_MODES as readonly string[]).includes(match)) {
    throw new ConfigError("match", `"${match}" is not a way to match runs`, MATCH_MODES.join(", "));
  }
  if (paths.length < 2) {
    throw new InputError("compare", `${paths.length} file given: it needs two or more`);
  }
  if (paths.length > 26) throw new InputError("compare", `${paths.length} files: at most 26`);
  if (options.html !== undefined) checkOutputPath(options.html, "html");
  const inputs: CompareInput[] = [];
  for (const [i, path] of paths.entries()) {
    const loaded = await loadDocument(path);
    if (loaded.kind !== "result") {
      throw new InputError(path, "a plan; compare takes result documents");
    }
    inputs.push({ label: String.fromCharCode(65 + i), path, doc: loaded.doc });
  }
  const comparison = compareDocuments(inputs, match as MatchMode);
  if (options.html !== undefined) {
    const page = await pageHtml({
      title: `tierbench compare: ${paths.map((p) => basename(p)).join(" vs ")}`,
      facts: inputs.map((inp) =>
        `${inp.label} = ${inp.path}: ${inp.doc.kind}, ${hostLine(inp.doc)}; tiers ${
          tierLine(inp.doc) || "none"
        }`
      ),
      html: [comparisonHtml(comparison)],
      charts: reportCharts(inputs.map((inp) => ({ label: inp.label, doc: inp.doc }))),
      tables: [],
    });
    await writeFileAtomic(options.html, redactSecrets(page));
  }
  return { comparison, text: formatComparison(comparison) };
}
