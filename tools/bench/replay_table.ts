/**
 * Prints the Markdown table of replays (tools/bench/replay_rounds.sh): one row per
 * plan, its prediction × scale, each replay's measured update phase and error.
 *
 * ```sh
 * deno run --allow-read tools/bench/replay_table.ts results/replay-rounds/replay-*.json
 * ```
 *
 * @module
 */

import { basename } from "node:path";
import { median } from "../../core/stats.ts";
import type { PlanDocument } from "../../schema/plan.ts";
import type { ActivationReplay, ReplayResult } from "../../schema/replay.ts";

/** One replay as the table needs it. */
export interface ReplayRow {
  /** What the plan puts where, in words. */
  plan: string;
  predicted_s: number;
  measured_s: number | null;
  error: number | null;
}

/**
 * Says where a plan puts the state: subgroups per rank on each path, how many
 * of them are cached in host memory, and the host cache it was given.
 *
 * @example
 * ```ts
 * import { describePlan } from "./replay_table.ts";
 * import type { PlanDocument } from "../../schema/plan.ts";
import { median } from "../../core/stats.ts";
 * const plan = {
 *   setup: { model: "7b" },
 *   inputs: { host_cache_bytes: 2 ** 30 },
 *   placement: {
 *     host_subgroups: 0,
 *     paths: [
 *       { name: "local", tier: "file", subgroups: 12, cache_subgroups: 1 },
 *       { name: "remote", tier: "pfs", subgroups: 5, cache_subgroups: 0 },
 *     ],
 *   },
 * } as unknown as PlanDocument;
 * console.assert(
 *   describePlan(plan) === "7B, 1 GiB host cache: 12 subgroups per rank on file (1 cached), 5 on pfs",
 * );
 * ```
 */
export function describePlan(plan: PlanDocument): string {
  const gib = Number(plan.inputs.host_cache_bytes) / 2 ** 30;
  const parts: string[] = [];
  if (plan.placement.host_subgroups > 0) {
    parts.push(`${plan.placement.host_subgroups} in host memory`);
  }
  for (const p of plan.placement.paths) {
    if (p.subgroups === 0) continue;
    const cached = p.cache_subgroups > 0 ? ` (${p.cache_subgroups} cached)` : "";
    parts.push(
      `${p.subgroups}${parts.length === 0 ? " subgroups per rank" : ""} on ${p.tier}${cached}`,
    );
  }
  const cache = Number.isInteger(gib) ? `${gib} GiB` : `${gib.toFixed(2)} GiB`;
  return `${String(plan.setup.model).toUpperCase()}, ${cache} host cache: ${parts.join(", ")}`;
}

/** The signed percentage of an error, `−12.3 %`. */
function percent(error: number | null): string {
  if (error === null) return "—";
  const p = (error * 100).toFixed(1);
  return `${error < 0 ? "−" + p.slice(1) : "+" + p} %`;
}

/**
 * The Markdown table: replays of one plan on one row.
 *
 * @example
 * ```ts
 * import { replayTable } from "./replay_table.ts";
 * const t = replayTable([
 *   { plan: "7B", predicted_s: 2, measured_s: 1.9, error: -0.05 },
 *   { plan: "7B", predicted_s: 2, measured_s: 2.1, error: 0.05 },
 * ]);
 * console.assert(t.includes("| 7B | 2.000 s | 1.900, 2.100 s | −5.0 %, +5.0 % | +0.0 % |"));
 * ```
 */
export function replayTable(rows: readonly ReplayRow[]): string {
  const byPlan = new Map<string, ReplayRow[]>();
  for (const r of rows) byPlan.set(r.plan, [...(byPlan.get(r.plan) ?? []), r]);
  const lines = [
    "| plan | predicted × scale | measured (median of the iterations), each replay | error | median error |",
    "| --- | --- | --- | --- | --- |",
  ];
  for (const [plan, rs] of byPlan) {
    const measured = rs.map((r) => r.measured_s === null ? "—" : r.measured_s.toFixed(3));
    const errors = rs.flatMap((r) => r.error === null ? [] : [r.error]);
    lines.push(
      `| ${plan} | ${rs[0]!.predicted_s.toFixed(3)} s | ${measured.join(", ")} s | ${
        rs.map((r) => percent(r.error)).join(", ")
      } | ${errors.length === rs.length ? percent(median(errors)) : "—"} |`,
    );
  }
  return lines.join("\n");
}

/**
 * The rows of an activation replay: forward and backward of the activation
 * plan (when it offloads a layer) and of every layer offloaded.
 *
 * @example
 * ```ts
 * import { activationRows } from "./replay_table.ts";
 * const run = (offloaded: number) => ({
 *   offloaded,
 *   prefetch: 1,
 *   status: "ok" as const,
 *   predicted: { forward_s: 1, backward_s: 2 },
 *   measured: { forward_s: 0.9, backward_s: 2.2 },
 *   error: { forward: -0.1, backward: 0.1 },
 * });
 * const rows = activationRows({ layers: 32, plan: run(0), all: run(31) });
 * console.assert(rows.length === 2 && rows[1]!.plan.endsWith("backward") && rows[1]!.error === 0.1);
 * ```
 */
export function activationRows(a: ActivationReplay): ReplayRow[] {
  const rows: ReplayRow[] = [];
  const runs = [["the activation plan", a.plan], ["every layer offloaded", a.all]] as const;
  for (const [name, run] of runs) {
    if (run.offloaded === 0) continue;
    for (const phase of ["forward", "backward"] as const) {
      rows.push({
        plan: `activations, ${name} (${run.offloaded} of ${a.layers} layers, ssdtrain): ${phase}`,
        predicted_s: run.predicted[`${phase}_s`],
        measured_s: run.measured[`${phase}_s`],
        error: run.error[phase],
      });
    }
  }
  return rows;
}

if (import.meta.main) {
  const rows: ReplayRow[] = [];
  for (const file of Deno.args) {
    const doc = JSON.parse(await Deno.readTextFile(file)) as {
      replay?: ReplayResult;
      config?: { plan?: string };
    };
    const r = doc.replay, planFile = doc.config?.plan;
    if (!r || !planFile) throw new TypeError(`${file}: not a replay result (no "replay" section)`);
    const plan = JSON.parse(await Deno.readTextFile(planFile)) as PlanDocument;
    if (r.activations) {
      // a replay with --activations: its activation rows (its update phase is another replay)
      const from = basename(plan.profile.source);
      rows.push(
        ...activationRows(r.activations).map((row) => ({ ...row, plan: `${from}: ${row.plan}` })),
      );
      continue;
    }
    rows.push({
      plan: `${basename(plan.profile.source)}: ${describePlan(plan)}`,
      predicted_s: r.predicted.update_s_scaled,
      measured_s: r.measured.update_s,
      error: r.error,
    });
  }
  console.log(replayTable(rows));
}
