/**
 * `teraio`: lifetime-aware activation offload striped over several SSDs
 * (TERAIO). Like `ssdtrain`, activations go out in forward and come back in
 * reverse in backward, but per tensor and by plan: a tensor is offloaded only
 * when it is large and idle long enough to go out and come back, and each
 * offloaded tensor is striped over every node-local path.
 *
 * The tensors of a layer are those Korthikanti et al. count (16-bit, without
 * recomputation, split over the tensor-parallel degree; {@linkcode TERAIO_TENSORS}):
 * together s·b·h·34 + 5·a·s²·b bytes, the `activationBytesPerLayer` of
 * `ssdtrain`.
 *
 * The plan ({@linkcode teraioPlan}), on unscaled figures: a tensor of layer l
 * is idle from the end of its forward to the start of its backward, i.e.
 * (L−1−l) layers of forward and (L−1−l) of backward (backward = 2 × forward).
 * It is offloaded when it holds at least {@linkcode TERAIO_MIN_TENSOR_BYTES}
 * (smaller ones stay on the GPU) and its idle window covers writing and
 * reading it back at an assumed planning bandwidth,
 * {@linkcode TERAIO_PLAN_BYTES_PER_S} per path times the number of paths
 * (TERAIO profiles its SSDs; this is a fixed assumption). The last layer is
 * never idle, so it is never offloaded. Its reads start d layers ahead, when
 * the backward of layer l + d starts, with d = max(1, ⌈read time at the
 * planning bandwidth / backward time of a layer⌉); `options.prefetch`, when
 * given, replaces d for every tensor.
 *
 * Per rank and iteration:
 * - **forward**: a barrier, then each layer's forward (think time); after it,
 *   every offloaded tensor of the layer is written in equal shares, one per
 *   path (`layer{l}.{tensor}.s{k}` on stream `{path}:write`). Layer l's
 *   forward waits until the writes of layer l−2 are done
 *   ({@linkcode TERAIO_WRITE_BEHIND}), as in `ssdtrain`.
 * - **backward**: a barrier (it waits for the last writes), then the layers
 *   in reverse, each twice its forward, each after the reads of its tensors.
 *   A read waits for its write and starts when the backward of layer l + d
 *   starts (once that of l + d + 1 is done; at the phase start for the first
 *   layers). Reads on a path run in the order they may start.
 *
 * Requests are 4 MiB (KvikIO's task size, GDS as TERAIO) with 8 in flight per
 * stream unless `bs`/`iodepth` say otherwise.
 *
 * @module
 */

import { requirePath, storagePath, totalIterations } from "./common.ts";
import type { WorkloadDefinition, WorkloadOptions, WorkloadPaths } from "./common.ts";
import { layerForwardFlops, type ModelShape } from "./model.ts";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import { gpuMs, scaledBytes, type TrainingSetup } from "./setup.ts";
import { KVIKIO_DEFAULT_TASK_SIZE, prefetchLayers } from "./ssdtrain.ts";

/**
 * The activations a layer keeps for backward, in 16-bit: bytes are
 * `sbh`·s·b·h + `as2b`·a·s²·b, over the tensor-parallel degree.
 */
export const TERAIO_TENSORS: readonly { name: string; sbh: number; as2b: number }[] = [
  { name: "ln1_in", sbh: 2, as2b: 0 }, // LayerNorm 1 input
  { name: "qkv_in", sbh: 2, as2b: 0 }, // QKV projection input
  { name: "qk", sbh: 4, as2b: 0 }, // Q and K
  { name: "softmax_out", sbh: 0, as2b: 2 }, // softmax output
  { name: "softmax_mask", sbh: 0, as2b: 1 }, // dropout mask on the softmax
  { name: "attn_dropout_out", sbh: 0, as2b: 2 }, // dropout output (attention over V input)
  { name: "v", sbh: 2, as2b: 0 }, // V
  { name: "proj_in", sbh: 2, as2b: 0 }, // output projection input
  { name: "attn_mask", sbh: 1, as2b: 0 }, // dropout mask after attention
  { name: "ln2_in", sbh: 2, as2b: 0 }, // LayerNorm 2 input
  { name: "fc1_in", sbh: 2, as2b: 0 }, // MLP first linear input
  { name: "gelu_in", sbh: 8, as2b: 0 }, // GeLU input
  { name: "fc2_in", sbh: 8, as2b: 0 }, // MLP second linear input
  { name: "mlp_mask", sbh: 1, as2b: 0 }, // dropout mask after the MLP
];

/** Tensors below this many (unscaled) bytes stay on the GPU: 1 MiB. */
export const TERAIO_MIN_TENSOR_BYTES = 1 << 20;
/** Bandwidth the plan assumes per local path, bytes/s (for writing and for reading). */
export const TERAIO_PLAN_BYTES_PER_S = 2e9;
/** Forward of layer l waits for the writes of layer l − this. */
export const TERAIO_WRITE_BEHIND = 2;

/** Unscaled bytes of each tensor of one layer, in {@linkcode TERAIO_TENSORS}' order. */
export function teraioTensorBytes(
  m: ModelShape,
  microBatch: number,
  tensorParallel: number,
): { name: string; bytes: number }[] {
  const { sequence: s, hidden: h, heads: a } = m;
  return TERAIO_TENSORS.map((t) => ({
    name: t.name,
    bytes: (t.sbh * s * microBatch * h + t.as2b * a * s * s * microBatch) / tensorParallel,
  }));
}

/** One tensor of one layer in the plan. */
export interface TeraioTensorPlan {
  readonly name: string;
  /** Unscaled bytes. */
  readonly bytes: number;
  readonly offload: boolean;
  /** Layers its reads run ahead (meaningful when offloaded). */
  readonly distance: number;
}

/** The offload plan of every layer, from the setup and the number of paths. */
export interface TeraioPlan {
  /** Per layer, per tensor. */
  readonly layers: readonly (readonly TeraioTensorPlan[])[];
  /** Unscaled forward and backward time of one layer, ms. */
  readonly forwardMs: number;
  readonly backwardMs: number;
  /** The planning bandwidth over all paths, bytes/s. */
  readonly bytesPerS: number;
}

/**
 * Plans which tensors go out and how far ahead they come back.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "./setup.ts";
 * import { teraioPlan } from "./teraio.ts";
 * const plan = teraioPlan(resolveSetup({ model: "7b" }), 2);
 * console.assert(plan.layers.at(-1)!.every((t) => !t.offload));
 * ```
 */
export function teraioPlan(setup: TrainingSetup, paths: number, prefetch?: number): TeraioPlan {
  const { model, microBatch, tensorParallel } = setup;
  const forwardMs = (layerForwardFlops(model, microBatch, tensorParallel) /
    (setup.gpuTflops * 1e12)) * 1000;
  const backwardMs = 2 * forwardMs;
  const bytesPerS = TERAIO_PLAN_BYTES_PER_S * paths;
  const tensors = teraioTensorBytes(model, microBatch, tensorParallel);
  const layers: TeraioTensorPlan[][] = [];
  for (let l = 0; l < model.layers; l++) {
    const idleMs = (model.layers - 1 - l) * (forwardMs + backwardMs);
    layers.push(tensors.map(({ name, bytes }) => {
      const readMs = (bytes / bytesPerS) * 1000;
      return {
        name,
        bytes,
        offload: bytes >= TERAIO_MIN_TENSOR_BYTES && idleMs >= 2 * readMs,
        distance: prefetch ?? Math.max(1, Math.ceil(readMs / backwardMs)),
      };
    }));
  }
  return { layers, forwardMs, backwardMs, bytesPerS };
}

/**
 * Builds the teraio programs.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "./setup.ts";
 * import { teraio } from "./teraio.ts";
 * const p = teraio.build(resolveSetup({ model: "7b", scale: 0.001 }), { local: ["local", "local2"] });
 * console.assert(p.ranks.length === 4 && p.paths.length === 2);
 * ```
 */
export const teraio: WorkloadDefinition = {
  name: "teraio",
  summary: "TERAIO: activations offloaded per tensor by lifetime, striped over every local SSD",
  needs: ["local"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    requirePath("teraio", "local", paths);
    const locals = paths.local;
    const prefetch = options.prefetch === undefined ? undefined : prefetchLayers(options, 1);
    const plan = teraioPlan(setup, locals.length, prefetch);
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, locals, plan));
    }
    const all = plan.layers.flat();
    const out = all.filter((t) => t.offload);
    const sum = (ts: readonly TeraioTensorPlan[]) => ts.reduce((a, t) => a + t.bytes, 0);
    const perPath = out.reduce((a, t) => a + scaledBytes(setup, t.bytes / locals.length), 0);
    const distances = out.map((t) => t.distance);
    return {
      workload: "teraio",
      paths: locals.map((p) => storagePath(p, "local", options, { bs: KVIKIO_DEFAULT_TASK_SIZE })),
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: {
        layers: plan.layers.length,
        paths: locals.length,
        tensors_per_layer: TERAIO_TENSORS.length,
        activation_bytes_per_layer_unscaled: sum(plan.layers[0]!),
        tensors_offloaded: out.length,
        tensors_kept: all.length - out.length,
        offloaded_bytes_unscaled: sum(out),
        kept_bytes_unscaled: sum(all) - sum(out),
        offloaded_per_layer: plan.layers.map((ts) => ts.filter((t) => t.offload).length).join(","),
        write_bytes_per_path_per_rank: perPath,
        read_bytes_per_path_per_rank: perPath,
        forward_ms_per_layer: gpuMs(
          setup,
          layerForwardFlops(setup.model, setup.microBatch, setup.tensorParallel),
        ),
        planning_bytes_per_s_per_path: TERAIO_PLAN_BYTES_PER_S,
        min_tensor_bytes: TERAIO_MIN_TENSOR_BYTES,
        prefetch: prefetch === undefined ? "plan" : "option",
        prefetch_min_layers: distances.length > 0 ? Math.min(...distances) : 0,
        prefetch_max_layers: distances.length > 0 ? Math.max(...distances) : 0,
      },
      notes: [
        `the plan assumes ${TERAIO_PLAN_BYTES_PER_S / 1e9} GB/s per local path for writes ` +
        `and for reads (${locals.length} path${locals.length === 1 ? "" : "s"}), ` +
        "not the measured bandwidth",
        "each tensor is planned alone against that bandwidth: tensors going out or coming back " +
        "at the same time share it",
        `tensors under ${TERAIO_MIN_TENSOR_BYTES} B (unscaled) and the last layer stay on the GPU`,
        "a tensor goes out when its layer's forward ends, not when it was last used",
        "each offloaded tensor is split in equal shares, one per path, each rounded up to 4 KiB",
      ],
    };
  },
};

/** What both phases of one rank's program need. */
interface RankContext {
  readonly b: ProgramBuilder;
  readonly plan: TeraioPlan;
  readonly locals: readonly string[];
  /** Forward milliseconds of one layer. */
  readonly fwdMs: number;
  /** One path's share of a tensor of `bytes` (unscaled), scaled. */
  share(bytes: number): number;
  /** Per backward layer, the reads its start releases (layer l last first). */
  readonly released: readonly (readonly { l: number; t: TeraioTensorPlan }[])[];
}

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  locals: readonly string[],
  plan: TeraioPlan,
): RankProgram {
  const c: RankContext = {
    b: new ProgramBuilder(rank),
    plan,
    locals,
    fwdMs: gpuMs(setup, layerForwardFlops(setup.model, setup.microBatch, setup.tensorParallel)),
    share: (bytes: number) => scaledBytes(setup, bytes / locals.length),
    released: releasedReads(plan),
  };
  // each phase's barrier waits for the last op of every stream so far
  for (let it = 0; it < totalIterations(setup); it++) {
    const writes = forwardOps(c, it);
    backwardOps(c, it, writes);
  }
  return c.b.build();
}

/** Reads grouped by the backward layer whose start releases them, layer l last first. */
function releasedReads(plan: TeraioPlan): { l: number; t: TeraioTensorPlan }[][] {
  const n = plan.layers.length;
  const released: { l: number; t: TeraioTensorPlan }[][] = Array.from({ length: n }, () => []);
  for (let l = n - 1; l >= 0; l--) {
    for (const t of plan.layers[l]!) {
      if (t.offload) released[Math.min(l + t.distance, n - 1)]!.push({ l, t });
    }
  }
  return released;
}

/**
 * Forward: each layer's offloaded tensors written behind it, striped over the
 * paths; returns the write of each object.
 */
function forwardOps(c: RankContext, it: number): Map<string, number> {
  const { b, plan, locals } = c;
  const phase = "forward";
  const open = b.barrier({ iteration: it, phase });
  const writes = new Map<string, number>();
  const writtenBy: number[][] = []; // per layer: the last write of every path so far
  for (let l = 0; l < plan.layers.length; l++) {
    const fwd = b.add({
      kind: "compute",
      stream: "compute",
      iteration: it,
      phase,
      ms: c.fwdMs,
      label: `layer${l}.forward`,
      after: [open, ...(writtenBy[l - TERAIO_WRITE_BEHIND] ?? [])],
    });
    for (const t of plan.layers[l]!) {
      if (!t.offload) continue;
      for (const [k, path] of locals.entries()) {
        const object = `layer${l}.${t.name}.s${k}`;
        writes.set(
          object,
          b.add({
            kind: "write",
            stream: `${path}:write`,
            iteration: it,
            phase,
            path,
            object,
            bytes: c.share(t.bytes),
            label: `layer${l}.${t.name}`,
            after: [fwd],
          }),
        );
      }
    }
    writtenBy.push(locals.flatMap((p) => b.lastHeldOn(`${p}:write`) ?? []));
  }
  return writes;
}

/** Backward: last layer first; reads released d layers ahead of their layer. */
function backwardOps(c: RankContext, it: number, writes: ReadonlyMap<string, number>): void {
  const { b, locals } = c;
  const n = c.plan.layers.length;
  const phase = "backward";
  const start = b.barrier({ iteration: it, phase });
  const bwd: number[] = [];
  const reads: number[][] = Array.from({ length: n }, () => []);
  for (let j = n - 1; j >= 0; j--) {
    for (const { l, t } of c.released[j]!) {
      for (const [k, path] of locals.entries()) {
        const object = `layer${l}.${t.name}.s${k}`;
        reads[l]!.push(b.add({
          kind: "read",
          stream: `${path}:read`,
          iteration: it,
          phase,
          path,
          object,
          bytes: c.share(t.bytes),
          label: `layer${l}.${t.name}`,
          after: [start, writes.get(object), bwd[j + 1]],
        }));
      }
    }
    bwd[j] = b.add({
      kind: "compute",
      stream: "compute",
      iteration: it,
      phase,
      ms: 2 * c.fwdMs,
      label: `layer${j}.backward`,
      after: reads[j]!,
    });
  }
}
