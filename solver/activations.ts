/**
 * The activation part of a plan: how many layers' activations to offload to
 * node-local storage and how far ahead to read them back, so that the I/O
 * hides under the GPU's compute (SSDTrain's pattern, workloads/ssdtrain.ts).
 *
 * Per rank, with L layers of A bytes each, forward time f per layer and
 * backward 2f, and the node-local tier's bandwidth shared by the ranks
 * (w = write bandwidth / ranks, r = read bandwidth / ranks):
 *
 * - forward writes the offloaded layers behind the compute of the layers
 *   after them: k layers hide when k·A/w ≤ (L−1)·f;
 * - backward reads them back ahead of their use: k·A/r ≤ (L−1)·2f;
 * - the last layer is used at once and never offloaded.
 *
 * The plan offloads the largest k that hides both ways (the first k layers,
 * the longest idle), reads d = ⌈(A/r) / 2f⌉ layers ahead (at least one),
 * and states the stall that offloading every layer would cost instead.
 *
 * @module
 */

import { activationBytesPerLayer, layerForwardFlops } from "../workloads/model.ts";
import type { TrainingSetup } from "../workloads/setup.ts";

/** The activation plan of one rank. */
export interface ActivationPlan {
  layers: number;
  /** Activation bytes of one layer of one rank (16-bit, no recomputation). */
  layer_bytes: number;
  /** GPU time of one layer, forward and backward, s. */
  forward_s: number;
  backward_s: number;
  /** Layers to offload, the first ones (0 … offloaded − 1). */
  offloaded: number;
  /** Layers read ahead in backward. */
  prefetch: number;
  /** GPU memory the offload frees per rank, bytes. */
  freed_bytes: number;
  /** Predicted stall per iteration with this plan, s (0 when it hides). */
  stall_s: number;
  /** Predicted stall when every layer but the last is offloaded, s. */
  stall_all_s: number;
  why: string;
}

/**
 * Plans activation offload for `setup` over a tier of `readBw` / `writeBw`
 * (node-wide, bytes/s).
 *
 * @example
 * ```ts
 * import { resolveSetup } from "../workloads/setup.ts";
 * import { planActivations } from "./activations.ts";
 * const a = planActivations(resolveSetup({ model: "7b" }), 20e9, 10e9);
 * console.assert(a.offloaded <= a.layers - 1 && a.prefetch >= 1);
 * ```
 */
export function planActivations(
  setup: TrainingSetup,
  readBw: number,
  writeBw: number,
): ActivationPlan {
  const m = setup.model;
  const L = m.layers;
  const A = activationBytesPerLayer(m, setup.microBatch, setup.tensorParallel);
  const f = layerForwardFlops(m, setup.microBatch, setup.tensorParallel) / (setup.gpuTflops * 1e12);
  const b = 2 * f;
  const w = writeBw / setup.ranksPerNode;
  const r = readBw / setup.ranksPerNode;
  const writeLayer = A / w, readLayer = A / r;
  const byWrite = Math.floor(((L - 1) * f) / writeLayer);
  const byRead = Math.floor(((L - 1) * b) / readLayer);
  const k = Math.max(0, Math.min(L - 1, byWrite, byRead));
  const stall = (n: number) =>
    Math.max(0, n * writeLayer - (L - 1) * f) + Math.max(0, n * readLayer - (L - 1) * b);
  const bound = byWrite <= byRead ? "writes in forward" : "reads in backward";
  const why = k === L - 1
    ? `every layer but the last hides: a layer writes in ${ms(writeLayer)} and reads in ${
      ms(readLayer)
    } against ${ms(f)} forward and ${ms(b)} backward`
    : `${k} of ${L - 1} layers hide; the ${bound} bind (a layer writes in ${
      ms(writeLayer)
    }, reads in ${ms(readLayer)}, computes ${ms(f)} forward, ${
      ms(b)
    } backward at ${setup.gpuTflops} TFLOP/s)`;
  return {
    layers: L,
    layer_bytes: A,
    forward_s: f,
    backward_s: b,
    offloaded: k,
    prefetch: Math.max(1, Math.ceil(readLayer / b)),
    freed_bytes: k * A,
    stall_s: stall(k),
    stall_all_s: stall(L - 1),
    why,
  };
}

function ms(s: number): string {
  return `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms`;
}
