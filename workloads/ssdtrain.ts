/**
 * `ssdtrain`: activations offloaded to node-local SSDs in forward and read
 * back in backward (SSDTrain), so that GPU memory holds a layer or two of
 * activations instead of all of them.
 *
 * Per rank and iteration:
 * - **forward**: a barrier, then one think time per transformer layer
 *   (`layerForwardFlops` at the setup's GPU rate). After layer l's forward,
 *   its activations — s·b·h·(34 + 5·a·s/h)/tp bytes in 16-bit without
 *   recomputation (`activationBytesPerLayer`) — are written to the local path
 *   as one object, `layer{l}.act`, behind the compute (write-behind). The
 *   write-behind is bounded: layer l's forward waits until the write of layer
 *   l−2 is done ({@linkcode SSDTRAIN_WRITE_BEHIND}), so at most two layers
 *   await offload in GPU memory (the one being written, the one being made).
 *   The last layer's activations are used by backward at once: they stay on
 *   the GPU and are never written or read.
 * - **backward**: a barrier (it waits for the last forward writes), then the
 *   layers in reverse order, each a think time of twice its forward. Layer l's
 *   activations are read back before its backward; the read runs
 *   `prefetch` layers ahead ({@linkcode SSDTRAIN_PREFETCH}, `options.prefetch`):
 *   it may start when the backward of layer l + prefetch starts, i.e. once
 *   the backward of layer l + prefetch + 1 is done (at the phase start for the
 *   first layers), and never before its own write is done.
 *
 * With `offloadLayers` k, only layers 0 … k−1 go out (an activation plan
 * offloads the first layers: theirs wait longest for backward); the others
 * stay on the GPU like the last.
 *
 * The I/O hides when it fits under a layer's compute; what does not fit shows
 * as the compute stream's stall. The objects are overwritten every iteration,
 * so nothing is laid out before the first op. Small tensors (LayerNorm
 * statistics, parameters) stay on the GPU and are not modelled.
 *
 * Requests are 4 MiB ({@linkcode SSDTRAIN_BS}, KvikIO's default task size:
 * SSDTrain writes tensors through KvikIO/GDS) with 8 in flight per stream
 * (DeepSpeed aio's depth, as the other workloads), unless `bs`/`iodepth` say
 * otherwise. All ranks share the path with no node-wide limit.
 *
 * @module
 */

import { requirePath, storagePath, totalIterations } from "./common.ts";
import type { WorkloadDefinition, WorkloadOptions, WorkloadPaths } from "./common.ts";
import { activationBytesPerLayer, layerForwardFlops } from "./model.ts";
import { ProgramBuilder, type RankProgram, type WorkloadProgram } from "./ops.ts";
import { gpuMs, scaledBytes, type TrainingSetup } from "./setup.ts";

/** Layers read ahead in backward unless `options.prefetch` says otherwise. */
export const SSDTRAIN_PREFETCH = 1;
/** Forward of layer l waits for the write of layer l − this (layers of activations awaiting offload). */
export const SSDTRAIN_WRITE_BEHIND = 2;
/** Request size unless `options.bs` says otherwise: KvikIO's default task size, 4 MiB. */
export const SSDTRAIN_BS = 4 << 20;

/** What one rank does per layer, from the setup. */
export interface SsdtrainLayers {
  readonly layers: number;
  /** Activations of one layer, unscaled bytes. */
  readonly activationBytes: number;
  /** Activations of one layer as written and read, scaled bytes. */
  readonly scaledActivationBytes: number;
  /** Forward think time of one layer, scaled ms. */
  readonly forwardMs: number;
  /** Backward think time of one layer, scaled ms (twice the forward). */
  readonly backwardMs: number;
}

/** Per-layer sizes and think times of a setup. */
export function ssdtrainLayers(setup: TrainingSetup): SsdtrainLayers {
  const { model, microBatch, tensorParallel } = setup;
  const activationBytes = activationBytesPerLayer(model, microBatch, tensorParallel);
  const forwardMs = gpuMs(setup, layerForwardFlops(model, microBatch, tensorParallel));
  return {
    layers: model.layers,
    activationBytes,
    scaledActivationBytes: scaledBytes(setup, activationBytes),
    forwardMs,
    backwardMs: 2 * forwardMs,
  };
}

/** `options.prefetch`, or the default; a RangeError unless it is an integer ≥ 1. */
export function prefetchLayers(options: WorkloadOptions, fallback: number): number {
  const p = options.prefetch ?? fallback;
  if (!Number.isInteger(p) || p < 1) {
    throw new RangeError(`prefetch ${p} is not an integer ≥ 1 (layers read ahead in backward)`);
  }
  return p;
}

/** `options.offloadLayers`, or every layer but the last; a RangeError unless in [0, layers − 1]. */
export function offloadedLayers(options: WorkloadOptions, layers: number): number {
  const k = options.offloadLayers ?? layers - 1;
  if (!Number.isInteger(k) || k < 0 || k > layers - 1) {
    const most = layers - 1; // the last layer stays on the GPU
    throw new RangeError(`offloadLayers ${k} is not an integer in [0, ${most}] (layers offloaded)`);
  }
  return k;
}

/**
 * Builds the ssdtrain programs.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "./setup.ts";
 * import { ssdtrain } from "./ssdtrain.ts";
 * const p = ssdtrain.build(resolveSetup({ model: "7b", scale: 0.001 }), { local: ["local"] });
 * console.assert(p.ranks.length === 4 && p.derived.offloaded_layers === 31);
 * ```
 */
export const ssdtrain: WorkloadDefinition = {
  name: "ssdtrain",
  summary:
    "SSDTrain: each layer's activations written to SSD in forward, read back in reverse in backward",
  needs: ["local"],
  build(
    setup: TrainingSetup,
    paths: WorkloadPaths,
    options: WorkloadOptions = {},
  ): WorkloadProgram {
    const local = requirePath("ssdtrain", "local", paths);
    const prefetch = prefetchLayers(options, SSDTRAIN_PREFETCH);
    const policy = storagePath(local, "local", options, { bs: SSDTRAIN_BS });
    const L = ssdtrainLayers(setup);
    const offloaded = offloadedLayers(options, L.layers);
    const ranks: RankProgram[] = [];
    for (let r = 0; r < setup.ranksPerNode; r++) {
      ranks.push(rankProgram(r, setup, local, prefetch, offloaded));
    }
    const moved = offloaded * L.scaledActivationBytes;
    // bandwidth per rank that hides the writes under forward (reads get twice the time)
    const hide = L.activationBytes / (L.forwardMs / setup.scale / 1000);
    return {
      workload: "ssdtrain",
      paths: [policy],
      ranks,
      warmupIterations: setup.warmupIterations,
      iterations: setup.iterations,
      derived: {
        layers: L.layers,
        offloaded_layers: offloaded,
        activation_bytes_per_layer_unscaled: L.activationBytes,
        activation_bytes_per_layer: L.scaledActivationBytes,
        write_bytes_per_rank: moved,
        read_bytes_per_rank: moved,
        forward_ms_per_layer: L.forwardMs,
        backward_ms_per_layer: L.backwardMs,
        prefetch_layers: prefetch,
        write_behind_layers: SSDTRAIN_WRITE_BEHIND,
        forward_write_bytes_per_s_to_hide_per_rank: hide,
        forward_write_bytes_per_s_to_hide_per_node: hide * setup.ranksPerNode,
      },
      notes: [
        "one object per layer of s·b·h·(34 + 5·a·s/h)/tp bytes (16-bit, no recomputation, " +
        "attention scores kept): SSDTrain offloads per tensor, which adds up to the same bytes",
        offloaded === L.layers - 1
          ? "the last layer's activations stay on the GPU (neither written nor read)"
          : `layers ${offloaded}–${L.layers - 1} stay on the GPU (neither written nor read)`,
        `forward of layer l waits for the write of layer l−${SSDTRAIN_WRITE_BEHIND}`,
        "the barrier before backward waits for the last forward writes: " +
        "that drain counts as barrier time, not stall",
      ],
    };
  },
};

function rankProgram(
  rank: number,
  setup: TrainingSetup,
  local: string,
  prefetch: number,
  offloaded: number,
): RankProgram {
  const b = new ProgramBuilder(rank);
  const L = ssdtrainLayers(setup);
  const n = L.layers;
  const readStream = `${local}:read`;
  const writeStream = `${local}:write`;
  // each phase's barrier waits for the last op of every stream so far
  for (let it = 0; it < totalIterations(setup); it++) {
    // forward: layer after layer, each layer's activations written behind it
    let phase = "forward";
    const open = b.barrier({ iteration: it, phase });
    const writes: number[] = [];
    for (let l = 0; l < n; l++) {
      const fwd = b.add({
        kind: "compute",
        stream: "compute",
        iteration: it,
        phase,
        ms: L.forwardMs,
        label: `layer${l}.forward`,
        after: [open, writes[l - SSDTRAIN_WRITE_BEHIND]],
      });
      if (l >= offloaded) continue; // stays on the GPU (always the last layer)
      writes.push(b.add({
        kind: "write",
        stream: writeStream,
        iteration: it,
        phase,
        path: local,
        object: `layer${l}.act`,
        bytes: L.scaledActivationBytes,
        label: `layer${l}.act`,
        after: [fwd],
      }));
    }
    // backward: last layer first, each read `prefetch` layers ahead
    phase = "backward";
    const start = b.barrier({ iteration: it, phase });
    const bwd: number[] = [];
    for (let l = n - 1; l >= 0; l--) {
      const read = l >= offloaded ? undefined : b.add({
        kind: "read",
        stream: readStream,
        iteration: it,
        phase,
        path: local,
        object: `layer${l}.act`,
        bytes: L.scaledActivationBytes,
        label: `layer${l}.act`,
        after: [start, writes[l], bwd[l + prefetch + 1]],
      });
      bwd[l] = b.add({
        kind: "compute",
        stream: "compute",
        iteration: it,
        phase,
        ms: L.backwardMs,
        label: `layer${l}.backward`,
        after: [read],
      });
    }
  }
  return b.build();
}
