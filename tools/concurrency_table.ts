/**
 * Prints the Markdown table of results' concurrency curves (`bench`,
 * `contention`): one row per tier, request size and process count, the
 * totals reading, writing, and reading while as many others write.
 *
 * ```sh
 * deno run --allow-read tools/concurrency_table.ts results/contention.json
 * ```
 *
 * @module
 */

import { formatSize } from "../core/units.ts";
import type { ConcurrencyResult } from "../schema/concurrency.ts";

/** MiB/s, whole. */
function mib(bytes: number | undefined): string {
  return bytes === undefined ? "—" : `${Math.round(bytes / 2 ** 20)}`;
}

/**
 * The Markdown table of one result's curves; `speedup` columns give each
 * point's read and write total over the same curve's 1-process figure.
 *
 * @example
 * ```ts
 * import { concurrencyTable } from "./concurrency_table.ts";
 * const t = concurrencyTable({
 *   status: "ok", processes: [1, 2], runtime_ms: 2000, ramp_ms: 500, size: 2 ** 28, layout: "",
 *   tiers: [{ label: "file", tier: "file:/d", engine: "libaio", direct: true, curves: [{
 *     bs: 1048576, iodepth: 8, points: [
 *       { processes: 1, read_bw_bytes: 2 ** 30, write_bw_bytes: 2 ** 29, runs: [] },
 *       { processes: 2, read_bw_bytes: 2 ** 31, write_bw_bytes: 2 ** 29, runs: [] },
 *     ],
 *   }] }],
 * });
 * console.assert(t.includes("| file | 1m × 8 | 2 | 2048 (2.00×) | 512 (1.00×) | — | — |"));
 * ```
 */
export function concurrencyTable(c: ConcurrencyResult): string {
  const rows = [
    "| tier | bs × depth | processes | read MiB/s (× 1 process) | write MiB/s (× 1 process) | " +
    "mixed read MiB/s | mixed write MiB/s |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const t of c.tiers) {
    for (const curve of t.curves) {
      const one = curve.points.find((p) => p.processes === 1);
      const times = (x: number, base: number | undefined) =>
        base ? ` (${(x / base).toFixed(2)}×)` : "";
      for (const p of curve.points) {
        rows.push(
          `| ${t.label} | ${formatSize(curve.bs)} × ${curve.iodepth} | ${p.processes} | ` +
            `${mib(p.read_bw_bytes)}${times(p.read_bw_bytes, one?.read_bw_bytes)} | ` +
            `${mib(p.write_bw_bytes)}${times(p.write_bw_bytes, one?.write_bw_bytes)} | ` +
            `${mib(p.mixed_read_bw_bytes)} | ${mib(p.mixed_write_bw_bytes)} |`,
        );
      }
    }
  }
  return rows.join("\n");
}

if (import.meta.main) {
  for (const path of Deno.args) {
    const doc = JSON.parse(await Deno.readTextFile(path)) as { concurrency?: ConcurrencyResult };
    if (!doc.concurrency) {
      console.error(`${path}: no concurrency section`);
      Deno.exitCode = 1;
      continue;
    }
    const c = doc.concurrency;
    const direct = c.tiers.map((t) => `${t.label} ${t.direct ? "O_DIRECT" : "buffered"}`);
    console.log(
      `${path}: ${c.status}, ${c.ramp_ms / 1000} s ramp + ${c.runtime_ms / 1000} s per point, ` +
        `${formatSize(c.size)} file per process; ${direct.join(", ")}\n`,
    );
    console.log(concurrencyTable(c));
    console.log();
  }
}
