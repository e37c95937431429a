/**
 * `ssdtrain`: activations offloaded to node-local SSDs in forward and read
 * back in backward (SSDTrain, K-Wu/FlashTrain), so that GPU memory holds a
 * layer or two of activations instead of all of them. (docs/workloads.md
 * cites the files and lines each rule comes from.)
 *
 * Per rank and iteration:
 * - **forward**: a barrier, then one think time per transformer layer
 *   (`layerForwardFlops` at the setup's GPU rate). After layer l's forward,
 *   each tensor it saved for backward ({@linkcode ACTIVATION_TENSORS}: 15
 *   tensors adding up to s·b·h·(34 + 5·a·s/h)/tp bytes in 16-bit without
 *   recomputation, `activationBytesPerLayer`) is written to the local path
 *   as one file, `layer{l}.{tensor}`, behind the compute (write-behind).
 *   The tensors go to a pool of {@linkcode SSDTRAIN_IO_THREADS} I/O threads
 *   per rank (KvikIO's threads), tensor j of the iteration on thread j mod 8
 *   (streams `{local}:write.t{k}`), each thread one request of at most
 *   {@linkcode SSDTRAIN_TASK_SIZE} (KvikIO's task size as SSDTrain sets it)
 *   at a time. The write-behind is bounded: layer l's forward waits until
 *   every write of layer l−2 is done ({@linkcode SSDTRAIN_WRITE_BEHIND}), so
 *   at most two layers await offload in GPU memory. The last layer's
 *   activations are used by backward at once: they stay on the GPU.
 * - **backward**: a barrier (it waits for the last forward writes), then the
 *   layers in reverse order, each a think time of twice its forward. Layer
 *   l's tensors are read back (streams `{local}:read.t{k}`, the same
 *   round-robin) before its backward; the reads run `prefetch` layers ahead
 *   ({@linkcode SSDTRAIN_PREFETCH}, `options.prefetch`): they may start when
 *   the backward of layer l + prefetch starts, i.e. once the backward of
 *   layer l + prefetch + 1 is done (at the phase start for the first
 *   layers), and a tensor never before its own write is done.
 *
 * With `offloadLayers` k, only layers 0 … k−1 go out (an activation plan
 * offloads the first layers: theirs wait longest for backward); the others
 * stay on the GPU like the last.
 *
 * The I/O hides when it fits under a layer's compute; what does not fit shows
 * as the compute stream's stall. The files are overwritten every iteration,
 * so nothing is laid out before the first op. Parameters stay on the GPU and
 * are not modelled. All ranks share the path with no node-wide limit.
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
/** Forward of layer l waits for the writes of layer l − this (layers of activations awaiting offload). */
export const SSDTRAIN_WRITE_BEHIND = 2;
/** I/O threads per rank: SSDTrain gives KvikIO 8 threads per adapter (configs.py). */
export const SSDTRAIN_IO_THREADS = 8;
/** The largest request unless `options.bs` says otherwise: the task size SSDTrain sets, 64 MiB. */
export const SSDTRAIN_TASK_SIZE = 64 << 20;
/** KvikIO's own default task size, 4 MiB (`teraio`'s request size). */
export const KVIKIO_DEFAULT_TASK_SIZE = 4 << 20;

/**
 * The tensors a transformer layer saves for backward in 16-bit without
 * recomputation (Korthikanti et al., the terms of s·b·h·(34 + 5·a·s/h)):
 * bytes = (`sbh` · s·b·h + `as2b` · a·s²·b) / tp. The `sbh` terms add up to
 * 34 and the `as2b` terms to 5.
 */
export const ACTIVATION_TENSORS: readonly { name: string; sbh: number; as2b: number }[] = [
  { name: "ln1.input", sbh: 2, as2b: 0 },
  { name: "qkv.input", sbh: 2, as2b: 0 },
  { name: "q", sbh: 2, as2b: 0 },
  { name: "k", sbh: 2, as2b: 0 },
  { name: "softmax.output", sbh: 0, as2b: 2 },
  { name: "attention.dropout.mask", sbh: 0, as2b: 1 },
  { name: "attention.dropout.output", sbh: 0, as2b: 2 },
  { name: "v", sbh: 2, as2b: 0 },
  { name: "proj.input", sbh: 2, as2b: 0 },
  { name: "proj.dropout.mask", sbh: 1, as2b: 0 },
  { name: "ln2.input", sbh: 2, as2b: 0 },
  { name: "fc1.input", sbh: 2, as2b: 0 },
  { name: "gelu.input", sbh: 8, as2b: 0 },
  { name: "fc2.input", sbh: 8, as2b: 0 },
  { name: "mlp.dropout.mask", sbh: 1, as2b: 0 },
];

/** One saved tensor of a layer. */
export interface ActivationTensor {
  readonly name: string;
  /** Bytes, unscaled. */
  readonly bytes: number;
  /** Bytes as written and read, scaled (a multiple of 4 KiB). */
  readonly scaledBytes: number;
}

/** The tensors one layer of one rank saves for backward, from the setup. */
export function activationTensors(setup: TrainingSetup): ActivationTensor[] {
  const { sequence: s, hidden: h, heads: a } = setup.model;
  const b = setup.microBatch, tp = setup.tensorParallel;
  return ACTIVATION_TENSORS.map((t) => {
    const bytes = (t.sbh * s * b * h + t.as2b * a * s * s * b) / tp;
    return { name: t.name, bytes, scaledBytes: scaledBytes(setup, bytes) };
  });
}

/** What one rank does per layer, from the setup. */
export interface SsdtrainLayers {
  readonly layers: number;
  /** Activations of one layer, unscaled bytes. */
  readonly activationBytes: number;
  /** Activations of one layer as written and read (its tensors), scaled bytes. */
  readonly scaledActivationBytes: number;
  /** The tensors of one layer, one file each. */
  readonly tensors: readonly ActivationTensor[];
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
  const tensors = activationTensors(setup);
  return {
    layers: model.layers,
    activationBytes,
    scaledActivationBytes: tensors.reduce((t, x) => t + x.scaledBytes, 0),
    tensors,
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
 * console.assert(p.derived.io_threads_per_rank === 8);
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
    const L = ssdtrainLayers(setup);
    // one request at a time per thread, of at most the task size: buffers no larger than
    // the largest tensor, which no request exceeds anyway
    const largest = Math.max(...L.tensors.map((t) => t.scaledBytes));
    const policy = storagePath(local, "local", options, {
      bs: Math.min(SSDTRAIN_TASK_SIZE, largest),
      iodepth: 1,
    });
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
        tensors_per_layer: L.tensors.length,
        io_threads_per_rank: SSDTRAIN_IO_THREADS,
        task_size: SSDTRAIN_TASK_SIZE,
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
        `one file per saved tensor, ${L.tensors.length} per layer adding up to ` +
        "s·b·h·(34 + 5·a·s/h)/tp bytes (16-bit, no recomputation, attention scores kept)",
        `${SSDTRAIN_IO_THREADS} I/O threads per rank, tensors dealt to them in turn, ` +
        "one request of at most the task size at a time per thread",
        offloaded === L.layers - 1
          ? "the last layer's activations stay on the GPU (neither written nor read)"
          : `layers ${offloaded}–${L.layers - 1} stay on the GPU (neither written nor read)`,
        `forward of layer l waits for the writes of layer l−${SSDTRAIN_WRITE_BEHIND}`,
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
  const thread = (j: number) => `t${j % SSDTRAIN_IO_THREADS}`;
  // each phase's barrier waits for the last op of every stream so far
  for (let it = 0; it < totalIterations(setup); it++) {
    // forward: layer after layer, each layer's tensors written behind it
    let phase = "forward";
    const open = b.barrier({ iteration: it, phase });
    const writes: number[][] = [];
    let j = 0;
    // one tensor of layer l to or from the local path, on the next I/O thread's stream
    const io = (
      kind: "read" | "write",
      l: number,
      t: ActivationTensor,
      after: (number | undefined)[],
    ) =>
      b.add({
        kind,
        stream: `${local}:${kind}.${thread(j++)}`,
        iteration: it,
        phase,
        path: local,
        object: `layer${l}.${t.name}`,
        bytes: t.scaledBytes,
        label: `layer${l}.${t.name}`,
        after,
      });
    for (let l = 0; l < n; l++) {
      const fwd = b.add({
        kind: "compute",
        stream: "compute",
        iteration: it,
        phase,
        ms: L.forwardMs,
        label: `layer${l}.forward`,
        after: [open, ...(writes[l - SSDTRAIN_WRITE_BEHIND] ?? [])],
      });
      if (l >= offloaded) continue; // stays on the GPU (always the last layer)
      writes.push(L.tensors.map((t) => io("write", l, t, [fwd])));
    }
    // backward: last layer first, each layer's tensors read `prefetch` layers ahead
    phase = "backward";
    const start = b.barrier({ iteration: it, phase });
    const bwd: number[] = [];
    j = 0;
    for (let l = n - 1; l >= 0; l--) {
      const reads = l >= offloaded
        ? []
        : L.tensors.map((t, i) => io("read", l, t, [start, writes[l]![i], bwd[l + prefetch + 1]]));
      bwd[l] = b.add({
        kind: "compute",
        stream: "compute",
        iteration: it,
        phase,
        ms: L.backwardMs,
        label: `layer${l}.backward`,
        after: reads,
      });
    }
  }
  return b.build();
}
