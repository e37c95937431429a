/**
 * What the progress line shows of a workload: iteration, the read and write
 * bandwidth of each path (`local`, `remote`, …) over the last interval, bytes
 * moved, and the time left at the pace of the iterations done. The line
 * itself is drawn by {@linkcode ProgressLine} (./progress.ts).
 *
 * ```
 * mlp-offload |██████░░░░░░░░░░| iteration 2/4 · local read 1.0 GiB/s write 812.0 MiB/s, remote read 24.0 MiB/s write 0 B/s · 1.2 GiB moved · about 12s left
 * ```
 *
 * @module
 */

import { formatBar, formatLeft } from "./_time_left.ts";
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
  const f = v.iterations > 0 ? (v.iteration - 1) / v.iterations : 0;
  const parts = [
    `${v.name} |${formatBar(f)}| iteration ${v.iteration}/${v.iterations}`,
    v.paths.map((p) =>
      `${p.name ? `${p.name} ` : ""}read ${formatRate(p.readBw)} write ${formatRate(p.writeBw)}`
    ).join(", "),
    `${formatRate(v.moved).replace("/s", "")} moved`,
  ];
  if (v.leftMs !== undefined) parts.push(`about ${formatLeft(v.leftMs)} left`);
  return parts.join(" · ");
}

/** Bytes each path had moved at the last report, to rate the next one against. */
export interface WorkloadMark {
  readonly elapsedMs: number;
  readonly paths: ReadonlyMap<string, readonly [read: number, written: number]>;
}

/**
 * The view of workload `name` at report `p`, each path rated over the time
 * since `last` (the start when undefined), and the mark to rate the next
 * report against.
 */
export function workloadView(
  name: string,
  p: WorkloadProgress,
  last: WorkloadMark | undefined,
): { view: WorkloadView; mark: WorkloadMark; done: number } {
  const paths = p.paths ?? [{ name: "", bytesRead: p.bytesRead, bytesWritten: p.bytesWritten }];
  const before = last ?? { elapsedMs: 0, paths: new Map<string, [number, number]>() };
  const dt = Math.max(1e-3, (p.elapsedMs - before.elapsedMs) / 1000);
  const now = new Map<string, [number, number]>();
  const rates = paths.map((x) => {
    const [r, w] = before.paths.get(x.name) ?? [0, 0];
    now.set(x.name, [x.bytesRead, x.bytesWritten]);
    return { name: x.name, readBw: (x.bytesRead - r) / dt, writeBw: (x.bytesWritten - w) / dt };
  });
  const done = Math.min(p.iterations, p.iteration);
  return {
    view: {
      name,
      iteration: Math.min(p.iterations, p.iteration + 1),
      iterations: p.iterations,
      paths: rates,
      moved: p.bytesRead + p.bytesWritten,
      leftMs: done > 0 ? (p.elapsedMs / done) * (p.iterations - done) : undefined,
    },
    mark: { elapsedMs: p.elapsedMs, paths: now },
    done,
  };
}
