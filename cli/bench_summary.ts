/**
 * `bench`'s last screen: the profile at a glance, at most 50 lines of at most
 * 100 columns — one line per tier, the concurrency curves in one table, the
 * contention slowdowns, the workloads' medians. Every bandwidth is in MiB/s
 * (2^20 bytes a second), as fio prints it; the JSON holds bytes a second.
 * Every run's row is `bench --verbose`, the JSON and the report.
 *
 * @module
 */

import type { ResultDocument, RunResult } from "../schema/result.ts";
import type { ContentionResult } from "../schema/contention.ts";
import type { ConcurrencyResult, ConcurrencyResultPoint } from "../schema/concurrency.ts";
import type { WorkloadResult } from "../schema/workload.ts";
import type { ScalingResult } from "../schema/scaling.ts";
import { formatSize } from "../core/units.ts";
import { plainTable, widthOf } from "./_plain_table.ts";

/** The screen's width. */
export const SUMMARY_COLUMNS = 100;

const MIB = 1 << 20;

/** Bytes a second as MiB/s, thousands separated: `12,288`. */
export function mibps(bytesPerSecond: number): string {
  const v = bytesPerSecond / MIB;
  return v >= 100 ? Math.round(v).toLocaleString("en-US") : v.toFixed(v >= 10 ? 1 : 2);
}

/** A request size in words: `1 MiB`, `4 KiB`. */
function sizeText(bytes: number): string {
  return formatSize(bytes).replace(/^(\d+)([kmg])$/, (_, n, u) => `${n} ${u.toUpperCase()}iB`);
}

function count(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

function micros(ns: number | undefined): string {
  if (ns === undefined) return "–";
  const v = ns / 1000;
  return v >= 100 ? count(v) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

/** "1 proc × 8 deep", "4 procs × 8 deep". */
export function procsDeep(processes: number, depth: number): string {
  return `${processes} proc${processes === 1 ? "" : "s"} × ${depth} deep`;
}

function seconds(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

/** The header lines: the host, the unit, and what each phase took. */
function headerLines(doc: ResultDocument): string[] {
  const h = doc.host;
  const gib = (h.memory_bytes / 2 ** 30).toFixed(0);
  const lines = [
    `tierbench bench on ${h.hostname} (${h.cores} × ${h.cpu_model}, ${gib} GiB), ` +
    `${doc.started.slice(0, 16).replace("T", " ")} UTC`,
    "bandwidth in MiB/s (2^20 bytes/s), as fio prints it; every run: --verbose, the JSON, the report",
  ];
  const phases = doc.phases ?? [];
  if (phases.length > 0) {
    const total = phases.reduce((t, p) => t + p.wall_ms, 0);
    lines.push(
      `took ${seconds(total)}: ` + phases.map((p) => `${p.name} ${seconds(p.wall_ms)}`).join(", "),
    );
  }
  return lines;
}

/** `items` after `label`, comma-separated, wrapped at {@linkcode SUMMARY_COLUMNS}. */
function wrapped(label: string, items: readonly string[]): string[] {
  const lines = [label];
  for (const [i, item] of items.entries()) {
    const text = item + (i < items.length - 1 ? "," : "");
    const last = lines.length - 1;
    if (
      lines[last]!.trim() !== label.trim() &&
      lines[last]!.length + 1 + text.length > SUMMARY_COLUMNS
    ) {
      lines.push(" ".repeat(label.length) + text);
    } else lines[last] += (lines[last] === label ? "" : " ") + text;
  }
  return lines;
}

/** A run of the profile's patterns by name, if it ended ok. */
function runNamed(runs: readonly RunResult[], name: string): RunResult | undefined {
  const r = runs.find((x) => x.name === name);
  return r?.status === "ok" ? r : undefined;
}

/** The tiers' patterns: one line per tier; the null tier's ceiling on a line of its own. */
function tierLines(doc: ResultDocument): string[] {
  const rows: string[][] = [];
  const where: string[] = [];
  for (const kind of ["memory", "file", "pfs", "s3"]) {
    const at = (name: string) => runNamed(doc.runs, `${kind}-${name}`);
    const read = at("read-1m-d8"), write = at("write-1m-d8");
    const some = read ?? write;
    if (!some) continue;
    const iops = at("randread-4k-d32"), one = at("randread-4k-d1");
    const mixed = at("randrw-1m-d16");
    where.push(
      `${kind} ${some.options.tier.slice(kind.length + 1)}${
        some.options.direct ? " (O_DIRECT)" : ""
      }`,
    );
    rows.push([
      kind,
      read ? mibps(read.read.bw_bytes) : "–",
      write ? mibps(write.write.bw_bytes) : "–",
      mixed ? `${mibps(mixed.read.bw_bytes)} + ${mibps(mixed.write.bw_bytes)}` : "–",
      iops ? count(iops.read.iops) : "–",
      micros(one?.read.lat_ns.percentile["99.000000"]),
    ]);
  }
  const head = [
    "tier",
    "reading\n1 MiB seq\n1 proc × 8 deep",
    "writing\n1 MiB seq\n1 proc × 8 deep",
    "both: r + w\n1 MiB random\n1 proc × 16 deep",
    "reading, IOPS\n4 KiB random\n1 proc × 32 deep",
    "reading, p99 µs\n4 KiB random\n1 proc × 1 deep",
  ];
  const lines = rows.length > 0 ? [plainTable(head, rows), ...wrapped("tiers: ", where)] : [];
  const ceiling = runNamed(doc.runs, "null-randread-4k-d1");
  if (ceiling) {
    lines.push(
      `harness ceiling (null tier: no I/O), 4 KiB reads, 1 proc × 1 deep: ` +
        `${count(ceiling.read.iops)} IOPS, p99 ` +
        `${micros(ceiling.read.lat_ns.percentile["99.000000"])} µs`,
    );
  }
  return lines;
}

/** A point's figure in one direction; "both" is the reads' and the writes' total. */
function figure(p: ConcurrencyResultPoint | undefined, kind: string): string {
  if (!p) return "·";
  if (kind === "reading") return mibps(p.read_bw_bytes);
  if (kind === "writing") return mibps(p.write_bw_bytes);
  if (p.mixed_read_bw_bytes === undefined) return "–";
  return mibps(p.mixed_read_bw_bytes + p.mixed_write_bw_bytes!);
}

/** The curves as one table, request sizes as column groups; else (too wide) as row groups. */
function concurrencyLines(c: ConcurrencyResult): string[] {
  if (c.tiers.length === 0) return [];
  const sizes = [...new Set(c.tiers.flatMap((t) => t.curves.map((x) => x.bs)))];
  const depth = c.tiers[0]!.curves[0]?.iodepth ?? 8;
  const kinds = ["reading", "writing", "both"];
  const head = (n: number) => `${n} proc${n === 1 ? "" : "s"}`;
  const wide = () => {
    const rows = c.tiers.flatMap((t) =>
      kinds.map((k) => [
        t.label,
        k,
        ...sizes.flatMap((bs) => {
          const curve = t.curves.find((x) => x.bs === bs);
          return c.processes.map((n) => figure(curve?.points.find((p) => p.processes === n), k));
        }),
      ])
    );
    const cols = sizes.flatMap((bs) =>
      c.processes.map((n, i) => `${i === 0 ? sizeText(bs) : ""}\n${head(n)}`)
    );
    return plainTable(["tier", "I/O", ...cols], rows, 2);
  };
  const tall = () => {
    const rows = c.tiers.flatMap((t) =>
      t.curves.flatMap((curve) =>
        kinds.map((k) => [
          t.label,
          sizeText(curve.bs),
          k,
          ...c.processes.map((n) => figure(curve.points.find((p) => p.processes === n), k)),
        ])
      )
    );
    return plainTable(["tier", "bs", "I/O", ...c.processes.map(head)], rows, 3);
  };
  let table = wide();
  if (widthOf(table) > SUMMARY_COLUMNS) table = tall();
  const skipped = c.tiers.some((t) => t.curves.some((x) => (x.interpolated ?? []).length > 0));
  return [
    `concurrency: MiB/s in all of n procs × ${depth} deep at once (both: n reading + n writing)`,
    table,
    ...(skipped ? ["· not measured: alike on either side, read as the line between them"] : []),
  ];
}

function times(s: number | null | undefined): string {
  return s === undefined ? "" : s === null ? "–" : `${s.toFixed(2)}×`;
}

/**
 * The matrix as one table: a row per tier and direction, its bandwidth
 * alone and its slowdown next to each other tier reading and writing, next
 * to itself doing the other direction, and next to all the others; the
 * pair reading and writing at once where it fits.
 */
function contentionLines(c: ContentionResult): string[] {
  if (c.groups.length === 0) return [];
  const dirs = [["read", "reading"], ["write", "writing"]] as const;
  const build = (withPairs: boolean) => {
    const head = ["tier", "I/O", "\nalone\nMiB/s"];
    for (const other of c.tiers) {
      head.push(`next to\n${other}\nreading`, `next to\n${other}\nwriting`);
    }
    head.push("next to\nitself\nother way");
    if (c.tiers.length > 2) head.push("next to\nall others\nsame way");
    const pairs = withPairs ? [...(c.together ?? []), ...(c.together_at ?? [])] : [];
    for (const g of pairs) {
      const procs = "processes" in g ? g.processes : 1;
      head.push(`${g.key}\nboth ways\n${procs} proc${procs === 1 ? "" : "s"} each`);
    }
    const rows = c.tiers.flatMap((t) =>
      dirs.map(([d, word]) => {
        const other = d === "read" ? "write" : "read";
        const row = c.slowdown[d][t] ?? {};
        const cells = c.tiers.flatMap((o) =>
          o === t
            ? ["·", "·"]
            : d === "read"
            ? [times(row[o]), times(row[`${o}:${other}`])]
            : [times(row[`${o}:${other}`]), times(row[o])]
        );
        const all = c.tiers.filter((o) => o !== t).join("+");
        return [
          t,
          word,
          mibps(c.alone[t]?.[`${d}_bw_bytes`] ?? 0),
          ...cells,
          times(c.self?.[t]?.slowdown[d]),
          ...(c.tiers.length > 2 ? [times(row[all])] : []),
          ...pairs.map((g) => times(g.members[t]?.slowdown[d])),
        ];
      })
    );
    return plainTable(head, rows, 2);
  };
  let table = build(true);
  if (widthOf(table) > SUMMARY_COLUMNS) table = build(false);
  return [
    `contention (${sizeText(c.pattern.bs)}, 1 proc × ${c.pattern.iodepth} deep each): ` +
    "slowdown = alone / next to the others; 1.00× unaffected",
    table,
    ...(table.includes("–") ? ["– moved nothing there"] : []),
  ];
}

/** The shared tiers against nodes at once (a run across nodes): all of them, and each one's share. */
function scalingLines(s: ScalingResult): string[] {
  const counts = [...new Set(s.tiers.flatMap((t) => t.points.map((p) => p.nodes)))].sort((a, b) =>
    a - b
  );
  if (counts.length === 0) return [];
  const rows = s.tiers.flatMap((t) =>
    (["read", "write"] as const).map((d) => [
      t.label,
      d === "read" ? "reading" : "writing",
      ...counts.map((n) => {
        const p = t.points.find((x) => x.nodes === n)?.[d];
        return p ? `${mibps(p.bw_bytes)} (${mibps(p.bw_bytes_per_node)})` : "·";
      }),
    ])
  );
  const head = counts.map((n) => `${n} node${n === 1 ? "" : "s"}`);
  return [
    `shared tier: MiB/s of n nodes at once, ${sizeText(s.tiers[0]!.bs)}, 1 proc × ` +
    `${s.tiers[0]!.iodepth} deep each (in brackets: per node)`,
    plainTable(["tier", "I/O", ...head], rows, 2),
  ];
}

/** The workloads' medians: a row per workload. */
function workloadLines(ws: readonly WorkloadResult[]): string[] {
  if (ws.length === 0) return [];
  const s = (x: number | undefined) => x === undefined ? "" : x.toFixed(2);
  const rows = ws.map((w) => {
    const sum = w.summary;
    const moved = (d: string) =>
      Object.entries(sum?.bytes ?? {}).filter(([k]) => k.endsWith(`:${d}`)).reduce(
        (t, [, v]) => t + v,
        0,
      );
    return [
      w.name,
      w.paths.map((p) => p.name).join(", "),
      s(sum?.iteration_s),
      s(sum?.update_s),
      s(sum?.stall_s),
      count(moved("read") / MIB),
      count(moved("write") / MIB),
    ];
  });
  const setup = ws[0]!.setup;
  return [
    `workloads: medians of ${ws[0]!.summary?.iterations ?? "?"} iterations, ` +
    `${setup.model ?? ""} at scale ${setup.scale ?? ""}`,
    plainTable(
      [
        "workload",
        "paths",
        "iteration\ns",
        "update\ns",
        "stall\ns",
        "reading\nMiB / iter",
        "writing\nMiB / iter",
      ],
      rows,
      2,
    ),
  ];
}

/**
 * `bench`'s summary of a profile document: the header, the tiers, the
 * curves, the contention matrix and the workloads, each section present
 * only where the document has it, separated by blank lines.
 *
 * @example
 * ```ts ignore
 * console.log(formatBenchSummary(doc));
 * ```
 */
export function formatBenchSummary(doc: ResultDocument): string {
  const sections = [
    headerLines(doc),
    tierLines(doc),
    doc.concurrency ? concurrencyLines(doc.concurrency) : [],
    doc.contention ? contentionLines(doc.contention) : [],
    doc.scaling ? scalingLines(doc.scaling) : [],
    workloadLines(doc.workloads ?? []),
  ].filter((s) => s.length > 0);
  return sections.map((s) => s.join("\n")).join("\n\n");
}
