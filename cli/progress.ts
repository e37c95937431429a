/**
 * The live progress line on stderr (cli-progress), only on a terminal. Of
 * runs: the run (or group, or grid point), each tier's bandwidth and IOPS
 * over the last 100 ms, the time left of the run and, for a series of runs (a
 * sweep's grid), the time left of the whole series. Of a workload: what
 * ./workload_progress.ts shows.
 *
 * ```
 * file-read-1m-d4-j1 |████████░░░░░░░░| 52% · file 1.1 GiB/s 1,130 IOPS · 3s left · point 4/36, 3m 10s left in all
 * read memory+file |████░░░░░░░░░░░░| 26% · memory 9.9 GiB/s 10,140 IOPS, file 1.0 GiB/s 1,020 IOPS · 2s left
 * zero-infinity |████████░░░░░░░░| iteration 3/4 · local read 1.0 GiB/s write 812.0 MiB/s · 1.5 GiB moved · about 8s left
 * ```
 *
 * @module
 */

import cliProgress from "cli-progress";
import process from "node:process";
import type { RunProgress, StepProgress } from "../bench/runner.ts";
import type { WorkloadProgress } from "../bench/workload.ts";
import { formatRate } from "../core/units.ts";
import { formatBar, formatLeft } from "./_time_left.ts";
import { formatWorkloadLine, type WorkloadMark, workloadView } from "./workload_progress.ts";

export { formatLeft };

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
  const parts = [`${v.label} |${formatBar(f)}| ${Math.floor(f * 100)}%`];
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
 * tier each) or per workload; silent when stderr is not a terminal or when
 * quiet.
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
  /** The run or workload the bar is drawn for; another starts a new line. */
  #label = "";
  #text = "";
  /** Of runs: how far the run is, and each tier's last rate. */
  #fraction = 0;
  #tiers = new Map<string, { bwBytes: number; iops: number }>();
  /** Of a workload: the bytes of each path at the last report. */
  #mark: WorkloadMark | undefined;

  constructor(options: boolean | ProgressLineOptions = false) {
    const o = typeof options === "boolean" ? { quiet: options } : options;
    if (o.quiet) return;
    const stream = o.stream ?? (Deno.stderr.isTerminal() ? process.stderr : undefined);
    if (!stream || stream.isTTY !== true) return;
    this.#bar = new cliProgress.SingleBar({
      // cli-progress wants a Node stream; it calls write() and reads isTTY and columns
      stream: stream as unknown as NodeJS.WritableStream,
      format: () => this.#text,
      hideCursor: true,
      clearOnComplete: true,
      noTTYOutput: false,
    }, cliProgress.Presets.shades_classic);
  }

  /** Whether anything is drawn. */
  get enabled(): boolean {
    return this.#bar !== undefined;
  }

  /** Shows run progress `p`; `step` places the run in a series (a sweep's grid). */
  update(p: RunProgress, step?: StepProgress): void {
    if (!this.#bar) return;
    const same = this.#active && this.#label === p.name;
    if (!same) this.#tiers = new Map();
    this.#tiers.set(p.tier ?? "", { bwBytes: p.bwBytes, iops: p.iops });
    const previous = same ? this.#fraction : 0;
    // the members of a group report in turn: the line follows the one furthest on
    const fraction = p.tier === undefined ? p.fraction : Math.max(previous, p.fraction);
    this.#draw(
      p.name,
      fraction,
      formatProgressLine({
        label: p.name,
        phase: p.phase,
        fraction,
        tiers: [...this.#tiers].map(([tier, t]) => ({ tier, ...t })),
        leftMs: p.phase === "measure" && p.totalMs !== undefined
          ? Math.max(0, p.totalMs - p.elapsedMs)
          : undefined,
        step,
      }),
    );
  }

  /** Shows workload `name`'s progress `p`, each path rated since its last report. */
  updateWorkload(name: string, p: WorkloadProgress): void {
    if (!this.#bar) return;
    if (!(this.#active && this.#label === name)) this.#mark = undefined;
    const { view, mark, done } = workloadView(name, p, this.#mark);
    this.#mark = mark;
    this.#draw(name, p.iterations > 0 ? done / p.iterations : 0, formatWorkloadLine(view));
  }

  /** Draws `text` at `fraction` (0..1), on a new line when `label` is not the one drawn. */
  #draw(label: string, fraction: number, text: string): void {
    if (!this.#bar) return;
    this.#text = text;
    this.#fraction = fraction;
    if (!this.#active || this.#label !== label) {
      if (this.#active) this.#bar.stop();
      this.#bar.start(1000, 0);
      this.#active = true;
      this.#label = label;
    }
    this.#bar.update(Math.round(fraction * 1000));
  }

  /** Ends the line (cleared from the terminal). */
  stop(): void {
    if (this.#active) this.#bar?.stop();
    this.#active = false;
    this.#label = "";
  }
}
