/**
 * Prints the Markdown table of results' concurrency curves (`bench`,
 * `contention`): one row per tier, request size and process count, the
 * totals reading, writing, and reading while as many others write.
 *
 * ```sh
 * deno run --allow-read tools/bench/concurrency_table.ts results/contention.json
 * ```
 *
 * @module
 */

import { formatSize } from "../../core/units.ts";
import type { ConcurrencyResult } from "../../schema/concurrency.ts";

/** MiB/s, whole. */
function mib(bytes: number | undefined): string {
  return bytes === undefined ? "—" : `${Math.round(bytes / 2 ** 20)}`;
}

/**
 * The Markdown table of one result's curves: a row per tier and process
 * count, for each request size the totals reading, writing (each with its
 * ratio to 1 process) and reading / writing at once, MiB/s.
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
 * console.assert(t.includes("| file | 2 | 2048 (2.00×) | 512 (1.00×) | — |"), t);
 * ```
 */
export function concurrencyTable(c: ConcurrencyResult): string {
  const sizes = [...new Set(c.tiers.flatMap((t) => t.curves.map((x) => x.bs)))].sort((a, b) =>
    a - b
  );
  const depth = (bs: number) =>
    c.tiers.flatMap((t) => t.curves).find((x) => x.bs === bs)?.iodepth ?? 0;
  const head = sizes.flatMap((bs) => {
    const at = `${formatSize(bs)} × ${depth(bs)}`;
    return [`${at} read`, `${at} write`, `${at} mixed r / w`];
  });
  const rows = [
    `| tier | processes | ${head.join(" | ")} |`,
    `| --- | ---: | ${head.map(() => "---:").join(" | ")} |`,
  ];
  for (const t of c.tiers) {
    const counts = [...new Set(t.curves.flatMap((x) => x.points.map((p) => p.processes)))]
      .sort((a, b) => a - b);
    for (const n of counts) {
      const cells = sizes.flatMap((bs) => {
        const curve = t.curves.find((x) => x.bs === bs);
        const p = curve?.points.find((x) => x.processes === n);
        const one = curve?.points.find((x) => x.processes === 1);
        if (!p) return ["—", "—", "—"];
        const times = (x: number, base: number | undefined) =>
          base ? ` (${(x / base).toFixed(2)}×)` : "";
        const mixed = p.mixed_read_bw_bytes === undefined
          ? "—"
          : `${mib(p.mixed_read_bw_bytes)} / ${mib(p.mixed_write_bw_bytes)}`;
        return [
          `${mib(p.read_bw_bytes)}${times(p.read_bw_bytes, one?.read_bw_bytes)}`,
          `${mib(p.write_bw_bytes)}${times(p.write_bw_bytes, one?.write_bw_bytes)}`,
          mixed,
        ];
      });
      rows.push(`| ${t.label} | ${n} | ${cells.join(" | ")} |`);
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
