/**
 * The live progress line of a workload on stderr (cli-progress): iteration,
 * the read and write bandwidth of each path (`local`, `remote`, …) over the
 * last interval, bytes moved, and the time left at the pace of the
 * iterations done; silent when stderr is not a terminal or when quiet.
 *
 * ```
 * mlp-offload |██████░░░░░░░░░░| iteration 2/4 · local read 1.0 GiB/s write 812.0 MiB/s, remote read 24.0 MiB/s write 0 B/s · 1.2 GiB moved · about 12s left
 * ```
 *
 * @module
 */

import cliProgress from "cli-progress";
import process from "node:process";
import { formatLeft, type ProgressStream } from "./progress.ts";
import { formatRate } from "../core/units.ts";
import type { WorkloadProgress } from "../bench/workload.ts";

/** What one workload progress line shows. */
export interface WorkloadView {
  readonly name: string;
  /** The iteration under way, from 1 (warm-up included). */
  readonly iteration: number;
  readonly iterations: number;
  /** Read and write bandwidth of each path (B/s); one `""` entry when paths are not known. */
  readonly paths: readonly { name: string; readBw: number; writeBw: number }[];
  readonly moved: number;
  /** Time left at the pace of the iterations done, ms; undefined before one is done. */
  readonly leftMs: number | undefined;
}

const BAR = 16;

/**
 * The text of a workload progress line.
 *
 * @example
 * ```ts
 * import { formatWorkloadLine } from "./workload_progress.ts";
 * const line = formatWorkloadLine({ name: "zero-infinity", iteration: 2, iterations: 4, moved: 1 << 30,
 *   leftMs: 12_000, paths: [{ name: "local", readBw: 1 << 30, writeBw: 1 << 29 }] });
 * console.assert(line.includes("iteration 2/4 · local read 1.0 GiB/s write 512.0 MiB/s · 1.0 GiB moved · about 12s left"));
 * ```
 */
export function formatWorkloadLine(v: WorkloadView): string {
  const f = v.iterations > 0 ? Math.min(1, Math.max(0, (v.iteration - 1) / v.iterations)) : 0;
  const full = Math.round(f * BAR);
  const parts = [
    `${v.name} |${"█".repeat(full)}${
      "░".repeat(BAR - full)
    }| iteration ${v.iteration}/${v.iterations}`,
    v.paths.map((p) =>
      `${p.name ? `${p.name} ` : ""}read ${formatRate(p.readBw)} write ${formatRate(p.writeBw)}`
    ).join(", "),
    `${formatRate(v.moved).replace("/s", "")} moved`,
  ];
  if (v.leftMs !== undefined) parts.push(`about ${formatLeft(v.leftMs)} left`);
  return parts.join(" · ");
}

/** One bar over the iterations of a workload. */
export class WorkloadProgressLine {
  readonly #bar: cliProgress.SingleBar | undefined;
  readonly #name: string;
  #active = false;
  #last: { t: number; paths: Map<string, [number, number]> } | undefined;
  #view: WorkloadView | undefined;

  /** `stream` (default stderr, only when a terminal) is drawn on when its `isTTY` is true. */
  constructor(quiet: boolean, name: string, stream?: ProgressStream) {
    this.#name = name;
    if (quiet) return;
    const out = stream ?? (Deno.stderr.isTerminal() ? process.stderr : undefined);
    if (!out || out.isTTY !== true) return;
    this.#bar = new cliProgress.SingleBar({
      // cli-progress wants a Node stream; it calls write() and reads isTTY and columns
      stream: out as unknown as NodeJS.WritableStream,
      format: () => (this.#view ? formatWorkloadLine(this.#view) : ""),
      hideCursor: true,
      clearOnComplete: true,
    }, cliProgress.Presets.shades_classic);
  }

  /** Whether anything is drawn. */
  get enabled(): boolean {
    return this.#bar !== undefined;
  }

  update(p: WorkloadProgress): void {
    if (!this.#bar) return;
    const paths = p.paths ?? [{ name: "", bytesRead: p.bytesRead, bytesWritten: p.bytesWritten }];
    const last = this.#last ?? { t: 0, paths: new Map<string, [number, number]>() };
    const dt = Math.max(1e-3, (p.elapsedMs - last.t) / 1000);
    const now = new Map<string, [number, number]>();
    const rates = paths.map((x) => {
      const [r, w] = last.paths.get(x.name) ?? [0, 0];
      now.set(x.name, [x.bytesRead, x.bytesWritten]);
      return { name: x.name, readBw: (x.bytesRead - r) / dt, writeBw: (x.bytesWritten - w) / dt };
    });
    this.#last = { t: p.elapsedMs, paths: now };
    const done = Math.min(p.iterations, p.iteration);
    this.#view = {
      name: this.#name,
      iteration: Math.min(p.iterations, p.iteration + 1),
      iterations: p.iterations,
      paths: rates,
      moved: p.bytesRead + p.bytesWritten,
      leftMs: done > 0 ? (p.elapsedMs / done) * (p.iterations - done) : undefined,
    };
    if (!this.#active) {
      this.#bar.start(p.iterations, 0);
      this.#active = true;
    }
    this.#bar.update(done);
  }

  stop(): void {
    if (this.#active) this.#bar?.stop();
    this.#active = false;
  }
}
