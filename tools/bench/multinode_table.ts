/**
 * The Markdown summary of `deno task bench:multinode` (tools/bench/multinode_rounds.sh): each run
 * across processes (its aggregate, each process, the coordination), the scaling curve of the
 * shared tiers, and how `plan --nodes` shifts the placement.
 *
 * ```sh
 * deno run --allow-read tools/bench/multinode_table.ts results/multinode
 * ```
 *
 * @module
 */

import { join } from "node:path";
import { formatRate } from "../../core/units.ts";
import type { PlanDocument } from "../../schema/plan.ts";
import type { ResultDocument } from "../../schema/result.ts";

function read<T>(path: string): T {
  return JSON.parse(Deno.readTextFileSync(path)) as T;
}

/** One row per run document `run-<launcher>-<tier>-<rw>.json` in `dir`. */
export function runTable(dir: string): string[] {
  const rows = [
    "| launcher (transport) | tier | rw | aggregate, common window | each process | last-done | first-done | p99 lat (merged) | root's wait at barrier / gather, ms (incl. the slowest layout) |",
    "|---|---|---|---|---|---|---|---|---|",
  ];
  const names = [...Deno.readDirSync(dir)].map((e) => e.name)
    .filter((n) => /^run-.*\.json$/.test(n)).sort();
  for (const name of names) {
    const doc = read<ResultDocument>(join(dir, name));
    const [, launcher, tier, rw] = name.replace(/\.json$/, "").split("-");
    const c = doc.cluster;
    if (!c || doc.status !== "ok") {
      rows.push(`| ${launcher} | ${tier} | ${rw} | ${doc.status}: ${doc.error ?? ""} | | | | | |`);
      continue;
    }
    const dirn = rw === "read" ? "read" : "write";
    const r = c.runs[0]!;
    const each = r.per_process.map((p) => formatRate(p[`${dirn}_bw_bytes`])).join(" + ");
    const p99 = (r[dirn].lat_ns.percentile["99.000000"] ?? 0) / 1e6;
    const co = c.coordination;
    rows.push(
      `| ${launcher} (${c.transport}) | ${tier} | ${rw} | ${
        formatRate(r[dirn].common_bw_bytes)
      } | ` +
        `${each} | ${formatRate(r[dirn].last_done.bw_bytes)} | ` +
        `${formatRate(r[dirn].first_done.bw_bytes)} | ${p99.toFixed(1)} ms | ` +
        `${(co.barrier_ms ?? []).map((x) => x.toFixed(1)).join() || "–"} / ${
          (co.gather_ms ?? []).map((x) => x.toFixed(1)).join() || "–"
        } |`,
    );
  }
  return rows;
}

/** The scaling curve of `bench.json` in `dir`. */
export function scalingTable(dir: string): string[] {
  const doc = read<ResultDocument>(join(dir, "bench.json"));
  const rows = [
    "| tier | nodes | write, all | write per node | read, all | read per node |",
    "|---|---|---|---|---|---|",
  ];
  for (const t of doc.scaling?.tiers ?? []) {
    for (const p of t.points) {
      rows.push(
        `| ${t.label} | ${p.nodes} | ${formatRate(p.write.bw_bytes)} | ` +
          `${formatRate(p.write.bw_bytes_per_node)} | ${formatRate(p.read.bw_bytes)} | ` +
          `${formatRate(p.read.bw_bytes_per_node)} |`,
      );
    }
  }
  if (doc.scaling?.status && doc.scaling.status !== "ok") {
    rows.push(`(the curve ended ${doc.scaling.status}: ${doc.scaling.error ?? ""})`);
  }
  return rows;
}

/** How the plan of `plan.json` in `dir` shifts over its node counts. */
export function planTable(dir: string): string[] {
  const plan = read<PlanDocument>(join(dir, "plan.json"));
  const rows = [
    "| nodes | remote share per node (read / write) | basis | state on each tier | update s: plan / zero-infinity / mlp-offload |",
    "|---|---|---|---|---|",
  ];
  for (const p of plan.nodes_sweep ?? []) {
    const share = p.remote
      ? `${p.remote.tier}: ${formatRate(p.remote.read_bw_bytes)} / ${
        formatRate(p.remote.write_bw_bytes)
      }`
      : "no remote tier";
    const fraction = Object.entries(p.fraction)
      .map(([t, f]) => `${t} ${(f * 100).toFixed(0)} %`).join(", ");
    const u = p.update_s;
    const s = (x: number | undefined) => x === undefined ? "–" : x.toFixed(2);
    rows.push(
      `| ${p.nodes} | ${share} | ${p.remote?.basis ?? ""} | ${fraction} | ` +
        `${s(u.plan)} / ${s(u.zero_infinity)} / ${s(u.mlp_offload)} |`,
    );
  }
  return rows;
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? "results/multinode";
  console.log(
    [
      "### Runs across 3 processes",
      "",
      ...runTable(dir),
      "",
      "### Scaling curve (bench under mpirun -np 3)",
      "",
      ...scalingTable(dir),
      "",
      "### plan --nodes on that profile",
      "",
      ...planTable(dir),
    ].join("\n"),
  );
}
