/**
 * The summary `tierbench plan` prints: the placement, the predicted update
 * phase of the plan and of each baseline with the plan's speedup over each,
 * and why; and the table `tierbench replay` prints.
 *
 * @module
 */

import Table from "cli-table3";
import pc from "picocolors";
import type { PlanDocument, Prediction } from "../schema/plan.ts";
import type { ReplayResult } from "../schema/replay.ts";

function s(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

/**
 * Renders a plan for the terminal (colours only on a terminal).
 *
 * @example
 * ```ts ignore
 * console.log(formatPlan(plan));
 * ```
 */
export function formatPlan(doc: PlanDocument): string {
  const lines = [placementTable(doc), predictionTable(doc)];
  lines.push(...shareLines(doc));
  if (doc.nodes_sweep && doc.nodes_sweep.length > 0) lines.push(formatNodesSweep(doc));
  for (const p of Object.values(doc.predictions)) if (p.note) lines.push(pc.dim(`note: ${p.note}`));
  for (const w of doc.why) lines.push(`why: ${w}`);
  if (doc.activations) lines.push(activationsLine(doc.activations));
  for (const [who, e] of Object.entries(doc.exports)) {
    if (typeof e.error === "string") lines.push(pc.dim(`no ${who} export: ${e.error}`));
  }
  return lines.join("\n");
}

/** The placement: each path's tier, subgroups, share, cache, readers and writers, request size. */
function placementTable(doc: PlanDocument): string {
  const placement = new Table({
    head: [
      "path",
      "tier",
      "subgroups / rank",
      "share",
      "cached / rank",
      "readers×writers",
      "bs × depth",
    ]
      .map((h) => pc.bold(h)),
    style: { head: [], border: [] },
  });
  for (const p of doc.placement.paths) {
    placement.push([
      p.name,
      p.tier,
      String(p.subgroups),
      `${(p.ratio * 100).toFixed(0)} %`,
      String(p.cache_subgroups),
      `${p.readers ?? "∞"}×${p.writers ?? "∞"}`,
      `${p.bs / 1024} KiB × ${p.iodepth}`,
    ]);
  }
  return placement.toString();
}

/** The predicted update phase of the plan and of each baseline, with the plan's speedup over each. */
function predictionTable(doc: PlanDocument): string {
  const table = new Table({
    head: [
      "update phase",
      "predicted s",
      "read s",
      "write s",
      "compute s",
      "hidden s",
      "host memory",
      "plan is",
    ]
      .map((h) => pc.bold(h)),
    style: { head: [], border: [] },
  });
  const plan = doc.predictions.plan;
  const row = (name: string, p: Prediction) => [
    name,
    p.feasible ? s(p.update_s) : `${s(p.update_s)} (does not fit)`,
    s(p.read_s),
    s(p.write_s),
    s(p.compute_s),
    s(p.overlap_s),
    hostMemory(p),
    name === "plan" || !p.feasible ? "" : `${(p.update_s / plan.update_s).toFixed(2)}× faster`,
  ];
  table.push(row("plan", plan));
  const ranks = Number(doc.setup.ranks_per_node);
  table.push(
    row(
      `zero-infinity (all on local NVMe${
        Number.isInteger(ranks) && ranks > 0 ? `, ${ranks} ranks at once` : ""
      })`,
      doc.predictions.zero_infinity,
    ),
  );
  table.push(row("zero-offload (all in host memory)", doc.predictions.zero_offload));
  const mlp = doc.predictions.mlp_offload;
  if (mlp) table.push(row("mlp-offload (1 in 3 on remote, 1×1 per path)", mlp));
  return table.toString();
}

/** The activations line: which layers go out, the GPU memory freed and the predicted stall. */
function activationsLine(a: NonNullable<PlanDocument["activations"]>): string {
  return `activations: ${
    a.offloaded === 0 ? "offload no layer" : `offload layers 0–${a.offloaded - 1}`
  } of ${a.layers} (${
    (a.freed_bytes / 2 ** 30).toFixed(1)
  } GiB of GPU memory per rank), read ${a.prefetch} layer(s) ahead; predicted stall ${
    a.stall_s.toFixed(2)
  } s per iteration (${a.stall_all_s.toFixed(2)} s if every layer went out): ${a.why}`;
}

/**
 * A prediction's host memory: the total in GB and its parts (g: gradients,
 * s: optimizer state, b: pinned buffers), or a dash in plans written before.
 */
function hostMemory(p: Prediction): string {
  const m = p.host_memory;
  if (!m) return "–";
  const g = (x: number) => (x / 1e9).toFixed(1);
  const grads = m.gradients === "host" ? `g ${g(m.gradients_bytes)}` : "g swapped";
  return `${g(m.total_bytes)} GB${m.fits ? "" : " (too much)"}\n${grads}, s ${
    g(m.state_bytes)
  }, b ${g(m.buffer_bytes)}`;
}

function gbps(x: number): string {
  return `${(x / 1e9).toFixed(2)} GB/s`;
}

/**
 * The remote share the plan used: one line per remote tier when the plan is
 * for more than one node or the tier has a curve.
 */
function shareLines(doc: PlanDocument): string[] {
  const nodes = doc.nodes ?? 1;
  const out: string[] = [];
  for (const [tier, share] of Object.entries(doc.remote_share ?? {})) {
    if (nodes === 1 && share.basis === "single-node") continue;
    const how = share.basis === "single-node"
      ? "not measured across nodes: the single-node figure"
      : share.basis;
    out.push(
      `remote share at ${nodes} node${nodes === 1 ? "" : "s"}: ${tier} read ${
        gbps(share.read_bw_bytes)
      }, write ${gbps(share.write_bw_bytes)} per node (${how})`,
    );
    if (share.basis !== "measured") {
      for (const n of share.notes) out.push(pc.dim(`  ${n}`));
    }
  }
  return out;
}

/**
 * The `--nodes` sweep: per node count, the remote tier's share, the share
 * of optimizer state on each tier and the predicted update phases.
 *
 * @example
 * ```ts ignore
 * console.log(formatNodesSweep(plan));
 * ```
 */
export function formatNodesSweep(doc: PlanDocument): string {
  const sweep = doc.nodes_sweep ?? [];
  const tiers = [...new Set(sweep.flatMap((p) => Object.keys(p.fraction)))];
  const mlp = sweep.some((p) => p.update_s.mlp_offload !== undefined);
  const table = new Table({
    head: [
      "nodes",
      "remote per node (read / write)",
      ...tiers.map((t) => `on ${t}`),
      "cached",
      "zero-infinity s",
      "plan s",
      ...(mlp ? ["mlp-offload s"] : []),
    ].map((h) => pc.bold(h)),
    style: { head: [], border: [] },
  });
  const percent = (x: number | undefined) => `${((x ?? 0) * 100).toFixed(0)} %`;
  const sec = (x: number | undefined) => (x === undefined ? "" : s(x));
  for (const p of sweep) {
    const r = p.remote;
    table.push([
      String(p.nodes),
      r
        ? `${r.tier} ${(r.read_bw_bytes / 1e9).toFixed(2)} / ${
          (r.write_bw_bytes / 1e9).toFixed(2)
        } GB/s (${r.basis})`
        : "no remote tier",
      ...tiers.map((t) => percent(p.fraction[t])),
      percent(p.cached_fraction),
      sec(p.update_s.zero_infinity),
      sec(p.update_s.plan),
      ...(mlp ? [sec(p.update_s.mlp_offload)] : []),
    ]);
  }
  return `placement by node count (the plan above is for ${doc.nodes ?? 1} node${
    (doc.nodes ?? 1) === 1 ? "" : "s"
  }):\n${table.toString()}`;
}

function pct(e: number | null): string {
  return e === null ? "" : `${e >= 0 ? "+" : ""}${(e * 100).toFixed(1)} %`;
}

/**
 * Renders a replay for the terminal: the update phase predicted (× scale)
 * beside measured, then each path's bytes and busy time, which say where a
 * difference comes from.
 *
 * @example
 * ```ts ignore
 * console.log(formatReplay(doc.replay));
 * ```
 */
export function formatReplay(r: ReplayResult): string {
  const table = new Table({
    head: ["replay ×" + r.scale, "predicted", "measured", "error", "MB read / written (plan → run)"]
      .map((h) => pc.bold(h)),
    style: { head: [], border: [] },
  });
  const m = r.measured.update_s;
  table.push([
    "update phase",
    `${r.predicted.update_s_scaled.toFixed(3)} s`,
    m === null ? "did not finish" : `${m.toFixed(3)} s`,
    pct(r.error),
    "",
  ]);
  const mb = (b: number) => (b / 1e6).toFixed(0);
  for (const p of r.paths) {
    table.push([
      `${p.path} busy`,
      p.predicted.busy_s === null ? "" : `${p.predicted.busy_s.toFixed(3)} s`,
      `${p.measured.busy_s.toFixed(3)} s`,
      pct(p.error),
      `${mb(p.predicted.read_bytes)} / ${mb(p.predicted.write_bytes)} → ${
        mb(p.measured.read_bytes)
      } / ${mb(p.measured.write_bytes)}`,
    ]);
  }
  const a = r.activations;
  if (a) {
    const sec = (x: number | null) => (x === null ? "did not finish" : `${x.toFixed(3)} s`);
    for (const [name, run] of [["plan", a.plan], ["all", a.all]] as const) {
      const what = name === "plan"
        ? `activations: ${run.offloaded} of ${a.layers} layers out`
        : `every layer but the last out`;
      for (const phase of ["forward", "backward"] as const) {
        table.push([
          `${what}, ${phase}`,
          `${run.predicted[`${phase}_s`].toFixed(3)} s`,
          sec(run.measured[`${phase}_s`]),
          pct(run.error[phase]),
          phase === "forward" ? `read ${run.prefetch} layer(s) ahead` : "",
        ]);
      }
    }
  }
  const lines = [table.toString()];
  lines.push(
    pc.dim(
      `update: median of ${r.measured.per_iteration_s.length} iterations; busy: wall time with a ` +
        `request of the path in flight, in the last iteration`,
    ),
  );
  if (r.scale < r.min_scale) {
    lines.push(
      pc.dim(`below --scale ${r.min_scale.toFixed(3)} requests shrink (docs/workloads.md)`),
    );
  }
  return lines.join("\n");
}
