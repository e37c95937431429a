/**
 * The training setup a workload models, and the scale factor that shrinks it.
 *
 * `scale` multiplies every byte count and every think time and nothing else:
 * the number of subgroups, layers, objects and ops, their order and the ratio
 * of compute to I/O stay those of the full-size model, so a 70B iteration
 * keeps its shape on a small machine. Scaled object sizes are rounded up to
 * 4 KiB (O_DIRECT's alignment), which the results state.
 *
 * @module
 */

import { z } from "zod";
import { ConfigError } from "../core/errors.ts";
import { describeZodIssue } from "../core/zod_issue.ts";
import {
  ffnOf,
  MODEL_NAMES,
  modelPreset,
  type ModelShape,
  parameterCount,
  qkvWidth,
} from "./model.ts";
import type { ModelTensor } from "./model_tensors.ts";

/** Scaled sizes are rounded up to this (O_DIRECT's alignment). */
export const SIZE_ALIGNMENT = 4096;

/** A resolved training setup. */
export interface TrainingSetup {
  readonly model: ModelShape;
  /** Parameters of the whole model. */
  readonly parameters: number;
  /** Ranks (GPUs) on the node, each a Worker. */
  readonly ranksPerNode: number;
  readonly dataParallel: number;
  readonly tensorParallel: number;
  readonly microBatch: number;
  /** Elements per optimizer subgroup (DeepSpeed's sub_group_size). */
  readonly subgroupElements: number;
  /** Bytes of each fp32 state per parameter (params, m, v, gradients). */
  readonly bytesPerState: number;
  /** Factor on every byte count and think time, in (0, 1]. */
  readonly scale: number;
  /** CPU Adam rate of one rank, parameters per second (sets the update think time). */
  readonly adamParamsPerSec: number;
  /** Effective GPU rate, TFLOP/s (sets forward/backward think time). */
  readonly gpuTflops: number;
  /** Iterations measured. */
  readonly iterations: number;
  /** Iterations run first and left out of the summary. */
  readonly warmupIterations: number;
  /**
   * A user's own model (`--model-tensors`): its parameter tensors as one
   * tensor-parallel rank holds them, in registration order. They replace the
   * preset's tensors; the preset still gives the sequence length.
   */
  readonly tensors?: { readonly label: string; readonly list: readonly ModelTensor[] };
}

/** The setup as a user gives it (CLI flags or a config file). */
export interface RawTrainingSetup {
  model?: string | undefined;
  parameters?: number | string | undefined;
  ranksPerNode?: number | string | undefined;
  dataParallel?: number | string | undefined;
  tensorParallel?: number | string | undefined;
  microBatch?: number | string | undefined;
  subgroupSize?: number | string | undefined;
  bytesPerState?: number | string | undefined;
  scale?: number | string | undefined;
  adamRate?: number | string | undefined;
  gpuTflops?: number | string | undefined;
  iterations?: number | string | undefined;
  warmup?: number | string | undefined;
  /** A user's own model's tensors (`--model-tensors`); `parameters` must then be absent. */
  tensors?: { readonly label: string; readonly list: readonly ModelTensor[] } | undefined;
}

/** Defaults: MLP-Offload's runs (4 GPUs per node, subgroups of 1e8 elements). */
export const SETUP_DEFAULTS = {
  model: "70b",
  ranksPerNode: 4,
  tensorParallel: 1,
  microBatch: 1,
  subgroupSize: 1e8,
  bytesPerState: 4,
  scale: 1,
  adamRate: 1e9,
  gpuTflops: 100,
  iterations: 3,
  warmup: 1,
} as const;

const num = z.union([z.number(), z.string().trim().min(1)]).transform((v, ctx) => {
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isFinite(n)) {
    ctx.addIssue({ code: "custom", message: "is not a number" });
    return z.NEVER;
  }
  return n;
});
const int = (min: number) => num.pipe(z.number().int().min(min).max(Number.MAX_SAFE_INTEGER));
/** Parameters at most: 1e15, thousands of times the largest model trained (280B presets). */
const MAX_PARAMETERS = 1e15;
/** Subgroups per rank at most (DeepSpeed's 1e8-element subgroups give 700 for 280B on 4 ranks). */
const MAX_SUBGROUPS = 100_000;

const schema = z.object({
  model: z.string(),
  parameters: num.pipe(z.number().positive().max(MAX_PARAMETERS)).optional(),
  ranksPerNode: int(1).pipe(z.number().max(64)),
  dataParallel: int(1).optional(),
  tensorParallel: int(1),
  microBatch: int(1),
  subgroupSize: int(1),
  bytesPerState: num.pipe(z.union([z.literal(2), z.literal(4)])),
  scale: num.pipe(z.number().positive().max(1)),
  // bounded so every think time is finite (--adam-rate 4e-282 made the plan's LP unreadable)
  adamRate: num.pipe(z.number().min(1).max(1e15)),
  gpuTflops: num.pipe(z.number().min(0.001).max(1e6)),
  iterations: int(1),
  warmup: int(0),
});

/** Flag names as the CLI spells them, for error messages. */
const FLAG: Record<string, string> = {
  model: "model",
  parameters: "params",
  ranksPerNode: "ranks-per-node",
  dataParallel: "dp",
  tensorParallel: "tp",
  microBatch: "micro-batch",
  subgroupSize: "subgroup-size",
  bytesPerState: "bytes-per-state",
  scale: "scale",
  adamRate: "adam-rate",
  gpuTflops: "gpu-tflops",
  iterations: "iterations",
  warmup: "warmup",
};

/**
 * Validates a setup and fills in defaults.
 *
 * @throws {ConfigError} naming the field and what it accepts.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "./setup.ts";
 * const s = resolveSetup({ model: "70b", scale: 0.001 });
 * console.assert(s.ranksPerNode === 4 && s.dataParallel === 4);
 * ```
 */
export function resolveSetup(raw: RawTrainingSetup = {}): TrainingSetup {
  const { tensors, ...rest } = raw;
  if (tensors !== undefined && raw.parameters !== undefined) {
    throw new ConfigError("params", "and --model-tensors both give the parameters: give one");
  }
  const withDefaults = { ...SETUP_DEFAULTS, ...stripUndefined(rest) };
  const parsed = schema.safeParse(withDefaults);
  if (!parsed.success) {
    const { path, problem, allowed } = describeZodIssue(parsed.error.issues, {
      input: withDefaults,
      allowed: ([field]) => accepts(String(field)),
    });
    const field = String(path[0] ?? "setup");
    throw new ConfigError(FLAG[field] ?? field, problem, allowed);
  }
  const v = parsed.data;
  let model: ModelShape;
  try {
    model = modelPreset(v.model);
  } catch (e) {
    throw new ConfigError("model", (e as Error).message, undefined, { cause: e });
  }
  const tp = v.tensorParallel;
  if (v.ranksPerNode % tp !== 0) {
    throw new ConfigError(
      "tp",
      `${tp} does not divide --ranks-per-node ${v.ranksPerNode}: a node holds whole tensor-parallel groups`,
    );
  }
  const dp = v.dataParallel ?? v.ranksPerNode / tp;
  if (dp * tp < v.ranksPerNode) {
    throw new ConfigError(
      "dp",
      `${dp} × --tp ${tp} is fewer than the ${v.ranksPerNode} ranks of the node: use at least ${
        v.ranksPerNode / tp
      }`,
    );
  }
  // a tensor list is one tensor-parallel rank's: the model is tp times that
  const parameters = tensors === undefined
    ? v.parameters ?? parameterCount(model)
    : tensors.list.reduce((t, x) => t + x.numel, 0) * tp;
  const subgroups = Math.ceil(Math.ceil(parameters / (dp * tp)) / v.subgroupSize);
  if (subgroups > MAX_SUBGROUPS) {
    throw new ConfigError(
      "subgroup-size",
      `${v.subgroupSize} elements make ${subgroups} subgroups per rank, more than the ` +
        `${MAX_SUBGROUPS} this tool models: use a larger --subgroup-size, e.g. 1e8`,
    );
  }
  return {
    model,
    parameters,
    ranksPerNode: v.ranksPerNode,
    dataParallel: dp,
    tensorParallel: tp,
    microBatch: v.microBatch,
    subgroupElements: v.subgroupSize,
    bytesPerState: v.bytesPerState,
    scale: v.scale,
    adamParamsPerSec: v.adamRate,
    gpuTflops: v.gpuTflops,
    iterations: v.iterations,
    warmupIterations: v.warmup,
    ...(tensors === undefined ? {} : { tensors }),
  };
}

function stripUndefined(raw: Omit<RawTrainingSetup, "tensors">): Record<string, unknown> {
  return Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined));
}

/** What the option `field` accepts, in words. */
function accepts(field: string): string {
  const allowed: Record<string, string> = {
    model: `one of ${MODEL_NAMES.join(", ")}`,
    bytesPerState: "2 or 4",
    scale: "a number in (0, 1], e.g. 0.001",
    ranksPerNode: "an integer from 1 to 64",
    parameters: "a parameter count from 1 to 1e15, e.g. 7e10",
    adamRate: "parameters per second from 1 to 1e15, e.g. 1e9",
    gpuTflops: "TFLOP/s from 0.001 to 1e6, e.g. 100",
  };
  return allowed[field] ?? (field === "warmup" ? "an integer ≥ 0" : "a positive number");
}

/** Parameters each rank owns (its ZeRO-3 shard): the model over dp × tp. */
export function shardParameters(s: TrainingSetup): number {
  return Math.ceil(s.parameters / (s.dataParallel * s.tensorParallel));
}

/** Element counts of a rank's subgroups, in order (the last may be smaller). */
export function subgroupSizes(s: TrainingSetup): number[] {
  const shard = shardParameters(s);
  const out: number[] = [];
  for (let left = shard; left > 0; left -= s.subgroupElements) {
    out.push(Math.min(left, s.subgroupElements));
  }
  return out;
}

/** A byte count after scaling, rounded up to {@linkcode SIZE_ALIGNMENT} (0 stays 0). */
export function scaledBytes(s: TrainingSetup, bytes: number): number {
  if (bytes <= 0) return 0;
  return Math.ceil((bytes * s.scale) / SIZE_ALIGNMENT) * SIZE_ALIGNMENT;
}

/** A think time after scaling, ms. */
export function scaledMs(s: TrainingSetup, ms: number): number {
  return ms * s.scale;
}

/** CPU Adam time of a subgroup of `elements`, scaled, ms. */
export function adamMs(s: TrainingSetup, elements: number): number {
  return scaledMs(s, (elements / s.adamParamsPerSec) * 1000);
}

/** GPU time for `flops`, scaled, ms. */
export function gpuMs(s: TrainingSetup, flops: number): number {
  return scaledMs(s, (flops / (s.gpuTflops * 1e12)) * 1000);
}

/** What a setup resolved to, for the results. */
export function describeSetup(s: TrainingSetup): Record<string, number | string> {
  // a user's tensor list has no layers or hidden size of its own
  const shape = s.tensors === undefined
    ? {
      model: s.model.name,
      layers: s.model.layers,
      hidden: s.model.hidden,
      heads: s.model.heads,
      sequence: s.model.sequence,
      vocabulary: s.model.vocabulary,
      ...(s.model.architecture === "llama"
        ? { architecture: "llama", ffn_hidden: ffnOf(s.model), kv_heads: s.model.kvHeads ?? 0 }
        : {}),
    }
    : { model: s.tensors.label, model_tensors: s.tensors.list.length, sequence: s.model.sequence };
  return {
    ...shape,
    parameters: s.parameters,
    ranks_per_node: s.ranksPerNode,
    data_parallel: s.dataParallel,
    tensor_parallel: s.tensorParallel,
    micro_batch: s.microBatch,
    subgroup_elements: s.subgroupElements,
    bytes_per_state: s.bytesPerState,
    scale: s.scale,
    adam_params_per_s: s.adamParamsPerSec,
    gpu_tflops: s.gpuTflops,
    iterations: s.iterations,
    warmup_iterations: s.warmupIterations,
  };
}

/** One parameter tensor of the model, as ZeRO-3 partitions it over the data-parallel ranks. */
export interface ParameterPartition {
  /** `embed.word`, `layer3.qkv.weight`, `final_ln.bias`. */
  readonly name: string;
  /** Elements of this rank's partition: ⌈elements / tp / dp⌉ (DeepSpeed pads each partition). */
  readonly elements: number;
  /** Elements of the tensor as its tensor-parallel rank holds it, before ZeRO-3 partitions it. */
  readonly numel: number;
}

/** One optimizer subgroup of a rank: whole parameter partitions, in model order. */
export interface PartitionedSubgroup {
  /** Elements of the subgroup: the sum of its partitions. */
  readonly elements: number;
  readonly partitions: readonly ParameterPartition[];
}

/**
 * The model's parameter tensors, in the order Megatron-style GPT code builds
 * them (word and position embeddings; per layer input LayerNorm, fused QKV,
 * attention output, post-attention LayerNorm, MLP in, MLP out, each weight
 * then bias; the final LayerNorm) — for a LLaMA-2 preset the order of
 * Megatron-DeepSpeed's `named_parameters()` (word embeddings; per layer
 * input RMSNorm, fused QKV, attention output, post-attention RMSNorm, MLP in
 * of 2·F, MLP out, weights only; the final RMSNorm, the untied output
 * layer) — each as one rank's ZeRO-3 partition:
 * ⌈elements / tp⌉ split over dp ranks and rounded up, as DeepSpeed pads each
 * parameter's partition (`partition_numel`). Their unpartitioned sum is
 * {@linkcode parameterCount}; with `--params` given, every tensor is scaled
 * by params / parameterCount (at least 1 element). With a user's tensor list
 * (`setup.tensors`), those tensors, each ⌈numel / dp⌉ per rank.
 *
 * @example
 * ```ts
 * import { parameterPartitions, resolveSetup } from "./setup.ts";
 * const s = resolveSetup({ model: "7b", ranksPerNode: 1 });
 * const p = parameterPartitions(s);
 * console.assert(p.length === 2 + 12 * 32 + 2 && p[0]!.elements === 50257 * 4096);
 * ```
 */
export function parameterPartitions(s: TrainingSetup): ParameterPartition[] {
  if (s.tensors !== undefined) {
    return s.tensors.list.map((t) => ({
      name: t.name,
      elements: Math.ceil(t.numel / s.dataParallel),
      numel: t.numel,
    }));
  }
  const { hidden: h, layers, vocabulary: V, sequence: seq } = s.model;
  const factor = s.parameters / parameterCount(s.model);
  const out: ParameterPartition[] = [];
  const add = (name: string, n: number) => {
    const whole = factor === 1 ? n : Math.max(1, Math.round(n * factor));
    const numel = Math.ceil(whole / s.tensorParallel);
    out.push({ name, elements: Math.ceil(numel / s.dataParallel), numel });
  };
  if (s.model.architecture === "llama") {
    llamaTensors(s.model, add);
    return out;
  }
  add("embed.word", V * h);
  add("embed.position", seq * h);
  for (let l = 0; l < layers; l++) {
    const p = `layer${l}`;
    add(`${p}.input_ln.weight`, h);
    add(`${p}.input_ln.bias`, h);
    add(`${p}.qkv.weight`, 3 * h * h);
    add(`${p}.qkv.bias`, 3 * h);
    add(`${p}.attn_out.weight`, h * h);
    add(`${p}.attn_out.bias`, h);
    add(`${p}.post_ln.weight`, h);
    add(`${p}.post_ln.bias`, h);
    add(`${p}.mlp_in.weight`, 4 * h * h);
    add(`${p}.mlp_in.bias`, 4 * h);
    add(`${p}.mlp_out.weight`, 4 * h * h);
    add(`${p}.mlp_out.bias`, h);
  }
  add("final_ln.weight", h);
  add("final_ln.bias", h);
  return out;
}

/**
 * A LLaMA-2 model's weights in the order of Megatron-DeepSpeed's
 * `named_parameters()` (megatron/model/transformer.py, language_model.py of
 * MLP-Offload's pinned commit 6acc370a): all in one optimizer group, as its
 * logs' subgroup counts show (82 at 70B: no separate group of norms).
 */
function llamaTensors(m: ModelShape, add: (name: string, n: number) => void): void {
  const h = m.hidden;
  add("embed.word", m.vocabulary * h);
  for (let l = 0; l < m.layers; l++) {
    const p = `layer${l}`;
    add(`${p}.input_norm.weight`, h);
    add(`${p}.qkv.weight`, h * qkvWidth(m));
    add(`${p}.attn_out.weight`, h * h);
    add(`${p}.post_norm.weight`, h);
    add(`${p}.mlp_in.weight`, h * 2 * ffnOf(m));
    add(`${p}.mlp_out.weight`, ffnOf(m) * h);
  }
  add("final_norm.weight", h);
  add("output.weight", m.vocabulary * h);
}

/**
 * A rank's optimizer subgroups as DeepSpeed's stage 3 forms them
 * (`_create_fp16_sub_groups`, deepspeed/runtime/zero/stage3.py): whole
 * parameter partitions taken in order and accumulated until the subgroup
 * holds at least `subgroupElements`, the last taking what is left; one
 * subgroup when the shard is no larger than that. Sizes vary: a subgroup
 * ends with the partition that crosses the threshold. One optimizer
 * parameter group (the weight-decay split, if any, is not modelled).
 *
 * @example
 * ```ts
 * import { partitionedSubgroups, resolveSetup } from "./setup.ts";
 * const s = resolveSetup({ model: "70b" });
 * const g = partitionedSubgroups(s);
 * console.assert(g.every((x, i) => i === g.length - 1 || x.elements >= 1e8));
 * ```
 */
export function partitionedSubgroups(s: TrainingSetup): PartitionedSubgroup[] {
  const parts = parameterPartitions(s);
  const total = parts.reduce((t, p) => t + p.elements, 0);
  if (s.subgroupElements >= total) return [{ elements: total, partitions: parts }];
  const out: PartitionedSubgroup[] = [];
  let group: ParameterPartition[] = [];
  let size = 0;
  for (const [i, p] of parts.entries()) {
    group.push(p);
    size += p.elements;
    if (size >= s.subgroupElements || i === parts.length - 1) {
      out.push({ elements: size, partitions: group });
      group = [];
      size = 0;
    }
  }
  return out;
}

/** DeepSpeed's swap alignment: AIO_ALIGNED_BYTES (swap_tensor/utils.py). */
export const AIO_ALIGNED_BYTES = 1024;
/** DeepSpeed's smallest swapped tensor: MIN_AIO_BYTES, 1 MiB (swap_tensor/utils.py). */
export const MIN_AIO_BYTES = 1 << 20;

/**
 * Elements of a swap after DeepSpeed pads it (`_io_aligned_numel`,
 * swap_tensor/optimizer_utils.py): rounded up to a multiple of
 * AIO_ALIGNED_BYTES × intra_op_parallelism / element size — 256 elements of
 * fp32 with one thread.
 */
export function alignedElements(elements: number, bytesPerState: number, threads = 1): number {
  const align = (AIO_ALIGNED_BYTES * threads) / bytesPerState;
  return Math.ceil(elements / align) * align;
}

/**
 * Whether DeepSpeed swaps a tensor of `elements` to storage
 * (`is_swappable_tensor`): only when its bytes reach max(MIN_AIO_BYTES,
 * block_size); smaller ones stay in host memory. Judged at full size, before
 * `--scale`.
 */
export function swappable(elements: number, bytesPerState: number, blockSize: number): boolean {
  return elements * bytesPerState >= Math.max(MIN_AIO_BYTES, blockSize);
}
