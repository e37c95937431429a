/**
 * The activation part of a plan: how many layers' activations to offload to
 * node-local storage and how far ahead to read them back, so that the I/O
 * hides under the GPU's compute — SSDTrain's pattern, run exactly as
 * workloads/ssdtrain.ts runs it, so that `tierbench replay` can check it.
 *
 * Per rank, with L layers of A bytes each, forward time f per layer and
 * backward 2f, and the node-local tier's bandwidth shared by the ranks
 * (a layer writes in A / (write bandwidth / ranks), reads in A / (read
 * bandwidth / ranks)), the first k layers offloaded and reads d layers ahead:
 *
 * - forward: layer l's compute waits for the write of layer l − 2 (two layers
 *   of activations await offload in GPU memory at most); writes run one after
 *   another behind the compute; the phase ends when the last write is done;
 * - backward, last layer first: layer l's read starts once the backward of
 *   layer l + d + 1 is done (at the phase start for the last layers), reads
 *   run one after another, and layer l's backward waits for its read.
 *
 * {@linkcode simulateActivations} steps through those rules layer by layer.
 * The plan offloads the largest k whose phases take no longer than the
 * compute alone (the first layers: theirs wait longest for backward), with
 * the smallest d that reaches the least stall, and states the stall that
 * offloading every layer but the last would cost instead.
 *
 * @module
 */

import { activationBytesPerLayer, layerForwardFlops } from "../workloads/model.ts";
import type { TrainingSetup } from "../workloads/setup.ts";
import type { ActivationPlan, ActivationTimes } from "../schema/plan.ts";

/** Layers whose writes may be outstanding in forward (as workloads/ssdtrain.ts runs it). */
const WRITE_BEHIND = 2;

/** What one rank's layers cost, as {@linkcode simulateActivations} takes it. */
export interface ActivationLayers {
  layers: number;
  /** Forward compute of a layer, s (backward is twice). */
  forwardS: number;
  /** One layer's write and read, s, at the rank's share of the bandwidth. */
  writeS: number;
  readS: number;
}

/**
 * Phase times when the first `offloaded` layers go out and reads run
 * `prefetch` layers ahead.
 *
 * @example
 * ```ts
 * import { simulateActivations } from "./activations.ts";
 * const layers = { layers: 4, forwardS: 1, writeS: 0.5, readS: 0.5 };
 * const t = simulateActivations(layers, 3, 1);
 * console.assert(t.forward_s === 4 && t.backward_s === 8 && t.stall_s === 0);
 * // writes slower than compute throttle forward once two layers await offload
 * console.assert(simulateActivations({ ...layers, writeS: 3 }, 3, 1).forward_s > 4);
 * ```
 */
export function simulateActivations(
  x: ActivationLayers,
  offloaded: number,
  prefetch: number,
): ActivationTimes {
  const L = x.layers, f = x.forwardS, b = 2 * x.forwardS;
  const writeEnd: number[] = [];
  let compute = 0, writes = 0;
  for (let l = 0; l < L; l++) {
    const gate = l - WRITE_BEHIND >= 0 && l - WRITE_BEHIND < offloaded
      ? writeEnd[l - WRITE_BEHIND]!
      : 0;
    compute = Math.max(compute, gate) + f;
    if (l < offloaded) writes = writeEnd[l] = Math.max(writes, compute) + x.writeS;
  }
  const forward = Math.max(compute, writes);
  const backwardEnd: number[] = [];
  compute = 0;
  let reads = 0;
  for (let l = L - 1; l >= 0; l--) {
    let ready = 0;
    if (l < offloaded) {
      const gate = l + prefetch + 1 <= L - 1 ? backwardEnd[l + prefetch + 1]! : 0;
      ready = reads = Math.max(reads, gate) + x.readS;
    }
    compute = backwardEnd[l] = Math.max(compute, ready) + b;
  }
  const backward = compute;
  return {
    forward_s: forward,
    backward_s: backward,
    stall_s: Math.max(0, forward + backward - L * (f + b)),
  };
}

/** The read-ahead with the least stall for `offloaded` layers (the smallest such), and its times. */
function bestPrefetch(
  x: ActivationLayers,
  offloaded: number,
): { prefetch: number; times: ActivationTimes } {
  const b = 2 * x.forwardS;
  // beyond one read's worth of backward layers (and a spare), reading further ahead cannot help
  const most = Math.max(1, Math.min(x.layers - 1, Math.ceil(x.readS / b) + 1));
  let best = { prefetch: 1, times: simulateActivations(x, offloaded, 1) };
  for (let d = 2; d <= most; d++) {
    const times = simulateActivations(x, offloaded, d);
    if (times.stall_s < best.times.stall_s - 1e-12) best = { prefetch: d, times };
  }
  return best;
}

/** The per-layer costs of `setup` over a tier of `readBw` / `writeBw` (node-wide, bytes/s). */
export function activationLayers(
  setup: TrainingSetup,
  readBw: number,
  writeBw: number,
): ActivationLayers & { bytes: number } {
  const m = setup.model;
  const A = activationBytesPerLayer(m, setup.microBatch, setup.tensorParallel);
  return {
    layers: m.layers,
    bytes: A,
    forwardS: layerForwardFlops(m, setup.microBatch, setup.tensorParallel) /
      (setup.gpuTflops * 1e12),
    writeS: A / (writeBw / setup.ranksPerNode),
    readS: A / (readBw / setup.ranksPerNode),
  };
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
  const x = activationLayers(setup, readBw, writeBw);
  const L = x.layers, f = x.forwardS, b = 2 * f;
  const hides = (t: ActivationTimes) => t.stall_s <= 1e-9 * L * (f + b);
  let k = 0;
  let plan = bestPrefetch(x, 0);
  for (let n = 1; n <= L - 1; n++) {
    const p = bestPrefetch(x, n);
    if (!hides(p.times)) break;
    k = n;
    plan = p;
  }
  const all = bestPrefetch(x, L - 1);
  // which phase stalls first once one more layer goes out
  const next = k < L - 1 ? bestPrefetch(x, k + 1).times : undefined;
  const bound = next && next.forward_s - L * f > next.backward_s - L * b
    ? "writes in forward"
    : "reads in backward";
  const costs = `a layer writes in ${ms(x.writeS)} and reads in ${ms(x.readS)} against ${
    ms(f)
  } forward and ${
    ms(b)
  } backward at ${setup.gpuTflops} TFLOP/s, ${WRITE_BEHIND} layers awaiting offload at most`;
  const why = k === L - 1
    ? `every layer but the last hides: ${costs}`
    : `${k} of ${L - 1} layers hide; the ${bound} bind (${costs})`;
  return {
    layers: L,
    layer_bytes: x.bytes,
    forward_s: f,
    backward_s: b,
    offloaded: k,
    prefetch: plan.prefetch,
    freed_bytes: k * x.bytes,
    stall_s: plan.times.stall_s,
    stall_all_s: all.times.stall_s,
    prefetch_all: all.prefetch,
    phases: { plan: plan.times, all: all.times },
    why,
  };
}

function ms(s: number): string {
  return `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)} ms`;
}
