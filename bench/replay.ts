/**
 * Replay: a plan run as a workload on the real tiers, with the measured
 * update phase set beside the predicted one.
 *
 * The plan becomes `mlp-offload` with the plan's split (its remote share),
 * its cache per path, its node-wide limits and its request size and depth;
 * the setup is the plan's, shrunk by `--scale`. Every byte count and think
 * time scales by the same factor, so the prediction to compare with is the
 * plan's update phase × scale — which holds as long as the tiers move the
 * scaled requests at the bandwidths the profile measured. Objects smaller
 * than bs × iodepth are cut into smaller requests (docs/workloads.md), so a
 * scale that keeps a state object at bs × iodepth or more (`minScale`)
 * replays what the profile measured.
 *
 * @module
 */

import type { TierSpec } from "../core/config.ts";
import { ConfigError, InputError } from "../core/errors.ts";
import type { ResultDocument } from "../schema/result.ts";
import { mlpOffload } from "../workloads/mlp_offload.ts";
import { median, unionLength } from "../core/stats.ts";
import { runWorkload, type RunWorkloadOptions } from "./workload.ts";
import { resolveSetup, type TrainingSetup } from "../workloads/setup.ts";
import type { WorkloadOptions } from "../workloads/common.ts";
import { placementOptions, type PlanDocument } from "../schema/plan.ts";
import { ssdtrain } from "../workloads/ssdtrain.ts";
import type {
  ActivationReplay,
  ActivationRun,
  ReplayPath,
  ReplayResult,
} from "../schema/replay.ts";

type Span = readonly (string | number)[];

/**
 * The per-path comparison of a replay, from the plan, the workload's update
 * phases and its timeline.
 *
 * @example
 * ```ts ignore
 * const paths = replayPaths(plan, 0.02, updates, doc.workload.timeline);
 * ```
 */
export function replayPaths(
  plan: PlanDocument,
  scale: number,
  updates: readonly { io: Record<string, { bytes: number }> }[],
  timeline: { columns: readonly string[]; spans: readonly Span[] } | undefined,
): ReplayPath[] {
  const p = plan.predictions.plan;
  const med = (xs: number[]) => (xs.length === 0 ? 0 : median(xs));
  const col = (name: string) => timeline?.columns.indexOf(name) ?? -1;
  const [stream, start, end] = [col("stream"), col("start_ms"), col("end_ms")];
  const out: ReplayPath[] = [];
  for (const { name } of plan.placement.paths) {
    const readBytes = (p.bytes[`${name}:read`] ?? 0) * scale;
    const writeBytes = (p.bytes[`${name}:write`] ?? 0) * scale;
    if (readBytes === 0 && writeBytes === 0) continue;
    const spans = (timeline?.spans ?? []).filter((x) =>
      x[stream] === `${name}:read` || x[stream] === `${name}:write`
    ).map((x): [number, number] => [Number(x[start]), Number(x[end])]);
    const busy = unionLength(spans) / 1000;
    const predicted = p.path_s?.[name] === undefined ? null : p.path_s[name]! * scale;
    out.push({
      path: name,
      predicted: { read_bytes: readBytes, write_bytes: writeBytes, busy_s: predicted },
      measured: {
        read_bytes: med(updates.map((u) => u.io[`${name}:read`]?.bytes ?? 0)),
        write_bytes: med(updates.map((u) => u.io[`${name}:write`]?.bytes ?? 0)),
        busy_s: busy,
      },
      error: predicted && busy > 0 ? busy / predicted - 1 : null,
    });
  }
  return out;
}

/**
 * The plan's simulated timeline at `scale`, of the steady iteration whose
 * parity is `measured`'s (mlp-offload alternates its pass by iteration);
 * undefined when the plan has none.
 *
 * @example
 * ```ts ignore
 * const t = simulatedTimeline(plan, 0.02, doc.workload.timeline.iteration);
 * ```
 */
export function simulatedTimeline(
  plan: PlanDocument,
  scale: number,
  measured: number | undefined,
): ReplayResult["simulated_timeline"] {
  const t = plan.predictions.plan.timeline;
  if (!t || t.spans.length === 0) return undefined;
  const its = [...new Set(t.spans.map((x) => x[0]))];
  const iteration = its.find((i) => i % 2 === (measured ?? 0) % 2) ?? its[0]!;
  const ms = (x: number) => Math.round(x * scale * 1000) / 1000;
  return {
    iteration,
    columns: ["rank", "stream", "kind", "label", "bytes", "start_ms", "end_ms"],
    spans: t.spans.filter((x) => x[0] === iteration).map((
      [, rank, stream, kind, label, bytes, start, end],
    ) => [rank, stream, kind, label, Math.round(bytes * scale), ms(start), ms(end)]),
    cut: t.cut,
  };
}

/** The plan's setup field behind each option of the training setup. */
const PLAN_SETUP_FIELDS: Readonly<Record<string, string>> = {
  model: "model",
  params: "parameters",
  "ranks-per-node": "ranks_per_node",
  dp: "data_parallel",
  tp: "tensor_parallel",
  "micro-batch": "micro_batch",
  "subgroup-size": "subgroup_elements",
  "bytes-per-state": "bytes_per_state",
  "adam-rate": "adam_params_per_s",
  "gpu-tflops": "gpu_tflops",
};

/**
 * The setup a plan was made for, at `scale`. A setup field the plan holds
 * that is out of range is refused naming the plan (`source`) and the field
 * (`plan.json: setup.micro_batch: …`), not the option it would be on the
 * command line.
 *
 * @throws {InputError} for a field of the plan; {@linkcode ConfigError} for `scale`, `iterations` or `warmup`.
 */
export function setupOfPlan(
  plan: PlanDocument,
  scale: number,
  iterations: number,
  warmup: number,
  source = "plan",
): TrainingSetup {
  try {
    return resolvePlanSetup(plan, scale, iterations, warmup);
  } catch (e) {
    const field = e instanceof ConfigError ? PLAN_SETUP_FIELDS[e.field] : undefined;
    if (field === undefined) throw e;
    const problem = (e as ConfigError).message.replace(`--${(e as ConfigError).field}: `, "")
      .replaceAll(`--${(e as ConfigError).field}`, `setup.${field}`);
    throw new InputError(source, `setup.${field}: ${problem}`, undefined, { cause: e });
  }
}

function resolvePlanSetup(
  plan: PlanDocument,
  scale: number,
  iterations: number,
  warmup: number,
): TrainingSetup {
  const s = plan.setup;
  const num = (k: string) => (typeof s[k] === "number" ? s[k] as number : undefined);
  return resolveSetup({
    model: String(s.model),
    parameters: num("parameters"),
    ranksPerNode: num("ranks_per_node"),
    dataParallel: num("data_parallel"),
    tensorParallel: num("tensor_parallel"),
    microBatch: num("micro_batch"),
    subgroupSize: num("subgroup_elements"),
    bytesPerState: num("bytes_per_state"),
    adamRate: num("adam_params_per_s"),
    gpuTflops: num("gpu_tflops"),
    scale,
    iterations,
    warmup,
  });
}

/**
 * The mlp-offload options that run the plan's placement, with the gradients
 * swapped to the paths when the plan swaps them (they did not fit in host
 * memory), so the replay moves the bytes the plan predicts.
 */
export function optionsOfPlan(plan: PlanDocument): WorkloadOptions {
  const swapped = plan.predictions.plan.host_memory?.gradients === "swapped";
  return { ...placementOptions(plan.placement.paths), ...(swapped ? { swapGradients: true } : {}) };
}

/** The smallest scale at which one subgroup's state object is at least bs × iodepth. */
export function minScaleOf(plan: PlanDocument): number {
  const local = plan.placement.paths.find((p) => p.name === "local");
  const elements = Number(plan.setup.subgroup_elements);
  const bytes = Number(plan.setup.bytes_per_state) * elements;
  if (!local || !(bytes > 0)) return 1;
  return Math.min(1, (local.bs * local.iodepth) / bytes);
}

/**
 * Runs `plan` on the tiers `specs` at `scale` and compares.
 *
 * @example
 * ```ts ignore
 * const { doc } = await replayPlan(plan, [parseTierSpec("file:/mnt/nvme")], { scale: 0.02 });
 * console.log(doc.replay?.error);
 * ```
 */
export async function replayPlan(
  plan: PlanDocument,
  specs: readonly TierSpec[],
  o: ReplayOptions,
): Promise<{ doc: ResultDocument; error?: unknown }> {
  const setup = setupOfPlan(plan, o.scale, o.iterations ?? 3, o.warmup ?? 1, o.source);
  const options = optionsOfPlan(plan);
  const out = await runWorkload(mlpOffload, setup, specs, options, o);
  const replay = replayOf(plan, options, out.doc, o.scale);
  out.doc.replay = replay;
  if (!o.activations || out.doc.status !== "ok" || o.signal?.aborted) return out;
  const a = plan.activations;
  if (!a?.phases) {
    throw new TypeError("the plan has no activation phases: write it again with `tierbench plan`");
  }
  const local = specs.filter((x) => x.kind === "file");
  const run = (
    offloaded: number,
    prefetch: number,
    predicted: { forward_s: number; backward_s: number },
  ) => activationRun(out.doc, setup, local, o, { offloaded, prefetch, predicted });
  const first = await run(a.offloaded, a.prefetch, a.phases.plan);
  const activations: ActivationReplay = { layers: a.layers, plan: first.run, all: first.run };
  replay.activations = activations;
  if (first.error !== undefined || out.doc.status !== "ok") {
    return { doc: out.doc, error: first.error };
  }
  const all = await run(a.layers - 1, a.prefetch_all ?? a.prefetch, a.phases.all);
  activations.all = all.run;
  return all.error === undefined ? out : { doc: out.doc, error: all.error };
}

/** Options of {@linkcode replayPlan}. */
export type ReplayOptions = {
  scale: number;
  iterations?: number;
  warmup?: number;
  /** Also run the activation plan (ssdtrain) and every layer offloaded. */
  activations?: boolean;
  /** The plan file as the user named it, for messages. */
  source?: string;
} & RunWorkloadOptions;

/**
 * The replay record of `plan` run with `options` at `scale` (`doc`: the
 * run's result): predicted against measured update phases, per path, and
 * the simulated timeline beside the measured one.
 */
function replayOf(
  plan: PlanDocument,
  options: WorkloadOptions,
  doc: ResultDocument,
  scale: number,
): ReplayResult {
  const w = doc.workload;
  const updates = (w?.iterations ?? []).filter((it) => !it.warmup && it.phases.update)
    .map((it) => it.phases.update!);
  const per = updates.map((u) => u.time_s);
  const measured = doc.status === "ok" && per.length > 0 ? median(per) : null;
  const predicted = plan.predictions.plan.update_s;
  const replay: ReplayResult = {
    plan: { source: plan.profile.source, created: plan.created },
    scale,
    options,
    min_scale: minScaleOf(plan),
    predicted: { update_s: predicted, update_s_scaled: predicted * scale },
    measured: { update_s: measured, per_iteration_s: per },
    error: measured === null ? null : measured / (predicted * scale) - 1,
    paths: replayPaths(plan, scale, updates, w?.timeline),
  };
  const simulated = simulatedTimeline(plan, scale, w?.timeline.iteration);
  if (simulated) replay.simulated_timeline = simulated;
  return replay;
}

/**
 * One activation run (ssdtrain) on the `local` tiers with `offloaded`
 * layers out and `prefetch` read ahead, its forward and backward phases
 * against the `predicted` ones at `o.scale`; a failed run's status and
 * error go onto `doc`.
 */
async function activationRun(
  doc: ResultDocument,
  setup: TrainingSetup,
  local: readonly TierSpec[],
  o: ReplayOptions,
  at: {
    offloaded: number;
    prefetch: number;
    predicted: { forward_s: number; backward_s: number };
  },
): Promise<{ run: ActivationRun; error?: unknown }> {
  const { offloaded, prefetch, predicted } = at;
  const r = await runWorkload(ssdtrain, setup, local, { offloadLayers: offloaded, prefetch }, o);
  if (r.doc.status !== "ok") {
    doc.status = r.doc.status;
    if (r.doc.error !== undefined) doc.error = r.doc.error;
  }
  const its = (r.doc.workload?.iterations ?? []).filter((it) => !it.warmup);
  const phase = (name: string) => {
    const xs = its.map((it) => it.phases[name]?.time_s).filter((x): x is number => x !== undefined);
    return r.doc.status === "ok" && xs.length > 0 ? median(xs) : null;
  };
  const scaled = {
    forward_s: predicted.forward_s * o.scale,
    backward_s: predicted.backward_s * o.scale,
  };
  const fwd = phase("forward"), bwd = phase("backward");
  const result: ActivationRun = {
    offloaded,
    prefetch,
    status: r.doc.status,
    predicted: scaled,
    measured: { forward_s: fwd, backward_s: bwd },
    error: {
      forward: fwd === null ? null : fwd / scaled.forward_s - 1,
      backward: bwd === null ? null : bwd / scaled.backward_s - 1,
    },
  };
  return r.error === undefined ? { run: result } : { run: result, error: r.error };
}
