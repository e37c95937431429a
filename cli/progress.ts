/**
 * The live progress line on stderr (cli-progress), only on a terminal: the
 * run (or group, or grid point), each tier's bandwidth and IOPS over the last
 * 100 ms, the time left of the run and, for a series of runs (a sweep's grid),
 * the time left of the whole series.
 *
 * ```
 * file-read-1m-d4-j1 |████████░░░░░░░░| 52% · file 1.1 GiB/s 1,130 IOPS · 3s left · point 4/36, 3m 10s left in all
 * read memory+file |████░░░░░░░░░░░░| 26% · memory 9.9 GiB/s 10,140 IOPS, file 1.0 GiB/s 1,020 IOPS · 2s left
 * ```
 *
 * @module
 */

import cliProgress from "cli-progress";
import process from "node:process";
import type { RunProgress, StepProgress } from "../bench/runner.ts";
import { formatRate } from "../core/units.ts";

/** Where a progress line is drawn: a terminal stream, or one that says it is one. */
export interface ProgressStream {
  write(text: string): unknown;
  /** Drawn on only when true. */
  readonly isTTY?: boolean;
  readonly columns?: number;
}

/** Options of {@linkcode ProgressLine}. */
export interface ProgressLineOptions {
  /** Draw nothing. */
  readonly quiet?: boolean;
  /**
   * Where to draw. Default: stderr, and only when it is a terminal. A stream
   * given here is drawn on when its `isTTY` is true.
   */
  readonly stream?: ProgressStream;
}

/** What one progress line shows. */
export interface ProgressView {
  /** The run, group or point. */
  readonly label: string;
  readonly phase: RunProgress["phase"];
  /** 0..1 of the run. */
  readonly fraction: number;
  /** Bandwidth (B/s) and IOPS of each tier, in the order first seen; `""` for a run's only tier. */
  readonly tiers: readonly { tier: string; bwBytes: number; iops: number }[];
  /** Time left of the run, ms, for time-based runs while measuring. */
  readonly leftMs: number | undefined;
  readonly step?: StepProgress | undefined;
}

const BAR = 16;

/**
 * A duration left as the progress line says it: `7s`, `3m 05s`, `1h 02m`.
 *
 * @example
 * ```ts
 * import { formatLeft } from "./progress.ts";
 * console.assert(formatLeft(6_400) === "7s");
 * console.assert(formatLeft(185_000) === "3m 05s");
 * console.assert(formatLeft(3_720_000) === "1h 02m");
 * ```
 */
export function formatLeft(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s}s`;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
}

/**
 * The text of one progress line.
 *
 * @example
 * ```ts
 * import { formatProgressLine } from "./progress.ts";
 * const line = formatProgressLine({
 *   label: "read memory+file", phase: "measure", fraction: 0.5, leftMs: 2000,
 *   tiers: [{ tier: "memory", bwBytes: 8 * 1024 ** 3, iops: 8192 }, { tier: "file", bwBytes: 1024 ** 3, iops: 1024 }],
 * });
 * console.assert(line.includes("memory 8.0 GiB/s 8,192 IOPS, file 1.0 GiB/s 1,024 IOPS"));
 * console.assert(line.endsWith("2s left"));
 * ```
 */
export function formatProgressLine(v: ProgressView): string {
  const f = Math.min(1, Math.max(0, v.fraction));
  const full = Math.round(f * BAR);
  const bar = "█".repeat(full) + "░".repeat(BAR - full);
  const parts = [`${v.label} |${bar}| ${Math.floor(f * 100)}%`];
  if (v.phase === "measure" && v.tiers.length > 0) {
    parts.push(
      v.tiers.map((t) =>
        `${t.tier ? `${t.tier} ` : ""}${formatRate(t.bwBytes)} ${
          Math.round(t.iops).toLocaleString("en-US")
        } IOPS`
      ).join(", "),
    );
  }
  if (v.phase !== "measure") parts.push(v.phase);
  else if (v.leftMs !== undefined) parts.push(`${formatLeft(v.leftMs)} left`);
  const s = v.step;
  if (s) {
    const left = s.leftMs === undefined ? "" : `, ${formatLeft(s.leftMs)} left in all`;
    parts.push(`${s.what} ${s.index}/${s.count}${left}`);
  }
  return parts.join(" · ");
}

/**
 * Draws one line per run (a contention group's members on the same line, a
 * tier each); silent when stderr is not a terminal or when quiet.
 *
 * @example
 * ```ts
 * import { ProgressLine } from "./progress.ts";
 * const out: string[] = [];
 * const line = new ProgressLine({ stream: { isTTY: true, columns: 200, write: (s: string) => out.push(s) } });
 * line.update({ name: "run", phase: "measure", elapsedMs: 1000, totalMs: 3000, fraction: 1 / 3,
 *   readBytes: 0, writeBytes: 0, bwBytes: 1024 ** 2, iops: 1, tier: "file" });
 * line.stop();
 * console.assert(out.join("").includes("file 1.0 MiB/s 1 IOPS · 2s left"));
 * ```
 */
export class ProgressLine {
  readonly #bar: cliProgress.SingleBar | undefined;
  #active = false;
  #label = "";
  #view: ProgressView | undefined;
  #tiers = new Map<string, { bwBytes: number; iops: number }>();

  constructor(options: boolean | ProgressLineOptions = false) {
    const o = typeof options === "boolean" ? { quiet: options } : options;
    if (o.quiet) return;
    const stream = o.stream ?? (Deno.stderr.isTerminal() ? process.stderr : undefined);
    if (!stream || stream.isTTY !== true) return;
    this.#bar = new cliProgress.SingleBar({
      // cli-progress wants a Node stream; it calls write() and reads isTTY and columns
      stream: stream as unknown as NodeJS.WritableStream,
      format: () => (this.#view ? formatProgressLine(this.#view) : ""),
      hideCursor: true,
      clearOnComplete: true,
      noTTYOutput: false,
    }, cliProgress.Presets.shades_classic);
  }

  /** Whether anything is drawn. */
  get enabled(): boolean {
    return this.#bar !== undefined;
  }

  /** Shows `p`; `step` places the run in a series (a sweep's grid). */
  update(p: RunProgress, step?: StepProgress): void {
    if (!this.#bar) return;
    if (this.#label !== p.name) this.#tiers = new Map();
    this.#tiers.set(p.tier ?? "", { bwBytes: p.bwBytes, iops: p.iops });
    const previous = this.#label === p.name ? this.#view?.fraction ?? 0 : 0;
    this.#view = {
      label: p.name,
      phase: p.phase,
      // the members of a group report in turn: the line follows the one furthest on
      fraction: p.tier === undefined ? p.fraction : Math.max(previous, p.fraction),
      tiers: [...this.#tiers].map(([tier, t]) => ({ tier, ...t })),
      leftMs: p.phase === "measure" && p.totalMs !== undefined
        ? Math.max(0, p.totalMs - p.elapsedMs)
        : undefined,
      step,
    };
    if (!this.#active || this.#label !== p.name) {
      if (this.#active) this.#bar.stop();
      this.#bar.start(1000, 0);
      this.#active = true;
      this.#label = p.name;
    }
    this.#bar.update(Math.round(this.#view.fraction * 1000));
  }

  stop(): void {
    if (this.#active) this.#bar?.stop();
    this.#active = false;
    this.#label = "";
  }
}
