/**
 * The rounds of `tools/bench/fio_compare.ts` summed up: each case's medians over
 * its rounds (throughput and CPU time per I/O, each tool's and the ratio),
 * the RSS check's, and the table both are printed as (terminal and
 * Markdown).
 *
 * @module
 */

import Table from "cli-table3";
import type { CpuPerIo, Figures, TierbenchFigures } from "./_fio.ts";
import { type CaseDef, CPU_TARGET, metricOf } from "./_fio_cases.ts";
import { median, round3 } from "../../core/stats.ts";

const MiB = 1024 ** 2;

/** Both tools, in the order they ran in a round. */
export type Tool = "tierbench" | "fio";

/** One round of one case. */
export interface CaseRound {
  round: number;
  first: Tool;
  /** tierbench's figures; with `--control`, those of fio run in tierbench's turn. */
  tierbench: Figures | TierbenchFigures;
  fio: Figures;
  /** tierbench/fio of the case's metric. */
  ratio: number;
  /** tierbench/fio of the CPU time per I/O (user + system). */
  cpu_per_io_ratio: number;
  /**
   * Requests the loop device completed per I/O in each tool's run (loop
   * mode's disk cases): above 1 where I/Os were split, which costs the kernel
   * more per I/O whichever tool issued them.
   */
  device_requests_per_io?: ToolPair;
}

/** One figure of each tool's. */
export interface ToolPair {
  tierbench: number;
  fio: number;
}

/** One round of the RSS check. */
export interface RssRound {
  round: number;
  first: "1g" | "8g";
  rss_1g_bytes: number;
  rss_8g_bytes: number;
  ratio: number;
}

/** A case over all its rounds. */
export interface CaseSummary {
  id: string;
  label: string;
  metric: "bw_bytes" | "iops";
  target: number;
  tierbench_median: number;
  fio_median: number;
  /** Median over rounds of the per-round ratio. */
  ratio_median: number;
  met: boolean;
  /** The spread of each tool's figure over the rounds. */
  tierbench_min: number;
  tierbench_max: number;
  fio_min: number;
  fio_max: number;
  /** Each tool's CPU time per I/O, ns: the median over rounds of user and of system time. */
  cpu_per_io_ns: { tierbench: CpuPerIo; fio: CpuPerIo };
  /** Median over rounds of the per-round ratio of CPU time per I/O (user + system). */
  cpu_per_io_ratio: number;
  /** Most acceptable `cpu_per_io_ratio`. */
  cpu_target: number;
  cpu_met: boolean;
  /** Median over rounds of each tool's loop-device requests per I/O, where measured. */
  device_requests_per_io?: ToolPair | undefined;
  rounds: CaseRound[];
}

/** The RSS check over all its rounds. */
export interface RssSummary {
  label: string;
  target: number;
  rss_1g_median_bytes: number;
  rss_8g_median_bytes: number;
  ratio_median: number;
  met: boolean;
  rounds: RssRound[];
}

/** User + system CPU time per I/O. */
export function cpuTotal(c: CpuPerIo): number {
  return c.usr + c.sys;
}

/** One round of case `c` from each tool's figures. */
export function caseRound(
  c: CaseDef,
  round: number,
  first: Tool,
  tierbench: Figures,
  fio: Figures,
): CaseRound {
  const ratio = metricOf(c, tierbench) / metricOf(c, fio);
  const cpu = cpuTotal(tierbench.cpu_per_io_ns) / cpuTotal(fio.cpu_per_io_ns);
  return { round, first, tierbench, fio, ratio, cpu_per_io_ratio: cpu };
}

function medianCpu(rounds: readonly Figures[]): CpuPerIo {
  return {
    usr: median(rounds.map((f) => f.cpu_per_io_ns.usr)),
    sys: median(rounds.map((f) => f.cpu_per_io_ns.sys)),
  };
}

/** Case `c` over its `rounds`. */
export function summarizeCase(c: CaseDef, rounds: CaseRound[]): CaseSummary {
  const ratio = median(rounds.map((r) => r.ratio));
  const cpuRatio = median(rounds.map((r) => r.cpu_per_io_ratio));
  const tb = rounds.map((r) => metricOf(c, r.tierbench));
  const fio = rounds.map((r) => metricOf(c, r.fio));
  return {
    id: c.id,
    label: c.label,
    metric: c.metric === "bw" ? "bw_bytes" : "iops",
    target: c.target,
    tierbench_median: median(tb),
    fio_median: median(fio),
    ratio_median: ratio,
    met: round3(ratio) >= c.target,
    tierbench_min: Math.min(...tb),
    tierbench_max: Math.max(...tb),
    fio_min: Math.min(...fio),
    fio_max: Math.max(...fio),
    cpu_per_io_ns: {
      tierbench: medianCpu(rounds.map((r) => r.tierbench)),
      fio: medianCpu(rounds.map((r) => r.fio)),
    },
    cpu_per_io_ratio: cpuRatio,
    cpu_target: CPU_TARGET,
    cpu_met: round3(cpuRatio) <= CPU_TARGET,
    device_requests_per_io: medianPair(rounds.map((r) => r.device_requests_per_io)),
    rounds,
  };
}

function medianPair(pairs: (ToolPair | undefined)[]): ToolPair | undefined {
  const known = pairs.filter((p): p is ToolPair => p !== undefined);
  if (known.length === 0) return undefined;
  return { tierbench: median(known.map((p) => p.tierbench)), fio: median(known.map((p) => p.fio)) };
}

/** Each tool's requests per I/O, tierbench's first: "1.50 / 1.00", or "–". */
export function fmtRequests(p: ToolPair | undefined): string {
  return p === undefined ? "–" : `${p.tierbench.toFixed(2)} / ${p.fio.toFixed(2)}`;
}

/** The RSS check over its `rounds`, against `target` (8g/1g). */
export function summarizeRss(rounds: RssRound[], target: number): RssSummary {
  const ratio = median(rounds.map((r) => r.ratio));
  return {
    label: "peak RSS, memory tier 1m seq read, 8g vs 1g moved",
    target,
    rss_1g_median_bytes: median(rounds.map((r) => r.rss_1g_bytes)),
    rss_8g_median_bytes: median(rounds.map((r) => r.rss_8g_bytes)),
    ratio_median: ratio,
    met: round3(ratio) <= target,
    rounds,
  };
}

function fmtInt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** A case's figure: `1,020 MiB/s` or `51,000 IOPS`. */
export function fmtFigure(metric: CaseSummary["metric"], v: number): string {
  return metric === "bw_bytes" ? `${fmtInt(v / MiB)} MiB/s` : `${fmtInt(v)} IOPS`;
}

/** CPU time per I/O as `usr+sys ns`, e.g. `310+2,140 ns`. */
export function fmtCpu(c: CpuPerIo): string {
  return `${fmtInt(c.usr)}+${fmtInt(c.sys)} ns`;
}

/** Bytes in MiB with one decimal. */
export function fmtMiB(bytes: number): string {
  return `${(bytes / MiB).toFixed(1)} MiB`;
}

/** Who runs in tierbench's turns: tierbench, or with `--control` fio again. */
export function turnTaker(control: boolean): string {
  return control ? "fio (control)" : "tierbench";
}

/** The table's head; its second column is whoever ran in tierbench's turns. */
export function head(control: boolean): string[] {
  const a = turnTaker(control);
  return [
    "case",
    a,
    "fio",
    "ratio",
    "per round",
    "target",
    "met",
    `${a} CPU/I/O usr+sys`,
    "fio CPU/I/O usr+sys",
    "CPU ratio",
    "CPU per round",
    "CPU met",
    `requests/I/O ${a} / fio`,
  ];
}

const ALIGN = ["l", "r", "r", "r", "l", "l", "l", "r", "r", "r", "l", "l", "r"] as const;

/** The table's rows, as text (no RSS row when the check did not run). */
export function rows(cases: CaseSummary[], rss: RssSummary | undefined): string[][] {
  const out = cases.map((c) => [
    c.label,
    fmtFigure(c.metric, c.tierbench_median),
    fmtFigure(c.metric, c.fio_median),
    c.ratio_median.toFixed(3),
    c.rounds.map((r) => r.ratio.toFixed(2)).join(" "),
    `≥ ${c.target.toFixed(2)}`,
    c.met ? "yes" : "NO",
    fmtCpu(c.cpu_per_io_ns.tierbench),
    fmtCpu(c.cpu_per_io_ns.fio),
    c.cpu_per_io_ratio.toFixed(3),
    c.rounds.map((r) => r.cpu_per_io_ratio.toFixed(2)).join(" "),
    `${c.cpu_met ? "yes" : "NO"} (≤ ${c.cpu_target.toFixed(2)})`,
    fmtRequests(c.device_requests_per_io),
  ]);
  if (rss === undefined) return out;
  out.push([
    rss.label,
    `${fmtMiB(rss.rss_8g_median_bytes)} (8g) / ${fmtMiB(rss.rss_1g_median_bytes)} (1g)`,
    "–",
    `${rss.ratio_median.toFixed(3)} (8g/1g)`,
    rss.rounds.map((r) => r.ratio.toFixed(2)).join(" "),
    `≤ ${rss.target.toFixed(2)}`,
    rss.met ? "yes" : "NO",
    "–",
    "–",
    "–",
    "–",
    "–",
    "–",
  ]);
  return out;
}

/** The table for a terminal. */
export function terminalTable(head: string[], body: string[][]): string {
  const t = new Table({
    head,
    colAligns: ALIGN.map((a) => (a === "l" ? "left" : "right")),
    style: { head: [], border: [] },
  });
  t.push(...body);
  return t.toString();
}

/** The table in Markdown. */
export function markdownTable(head: string[], body: string[][]): string {
  const cell = (s: string) => s.replaceAll("|", "\\|");
  const line = (cells: string[]) => `| ${cells.map(cell).join(" | ")} |`;
  const align = ALIGN.map((a) => (a === "l" ? "---" : "---:"));
  return [line(head), `|${align.join("|")}|`, ...body.map(line)].join("\n");
}
