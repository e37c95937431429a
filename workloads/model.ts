/**
 * Model presets, with the parameter count derived from the shape.
 *
 * Two architectures:
 *
 * - **GPT-style** (`7b` … `280b`): a decoder layer holds 12·h² weights
 *   (attention 4·h², MLP 8·h² with a 4·h inner size) and 13·h biases and
 *   LayerNorm weights; the model adds token embeddings V·h (tied with the
 *   output) and learned positions s·h, and a final LayerNorm 2·h. Each
 *   preset's shape is chosen so that count lands within 5 % of the nominal
 *   size its name states (the tests check it).
 * - **LLaMA-2** (`llama2-7b` … `llama2-120b`): SwiGLU MLP (h → 2·F fused
 *   gate and up, F → h), grouped-query attention (h → h + 2·kv·h/a fused
 *   query, key and value; h → h out), RMSNorm weights only, no biases,
 *   rotary positions (no position table) and an output layer untied from the
 *   embeddings: per layer h·(h + 2·kv·h/a) + h² + 3·h·F + 2·h, plus 2·V·h + h.
 *   The shapes are those MLP-Offload's artifact runs
 *   (mauryaavinash95/MLP-Offload `scripts/launch-expt.sh`, `set_model_size`,
 *   every size through Megatron-DeepSpeed with `--swiglu --normalization
 *   rmsnorm --disable-bias-linear --untie-embeddings-and-output-weights
 *   --num-key-value-heads 4`), with 4 key/value heads and the GPT-2
 *   vocabulary padded to 50304 as its logs show; the counts match the logs'
 *   "number of parameters" exactly where there is a log (the tests check it).
 *   The names are the script's sizes, not the counts (its "40B" has 48.2 G).
 *
 * @module
 */

/** The shape of a model. */
export interface ModelShape {
  /** Preset name: `70b`. */
  readonly name: string;
  /** Nominal parameter count, as the name says. */
  readonly nominal: number;
  readonly layers: number;
  readonly hidden: number;
  readonly heads: number;
  /** Sequence length in tokens. */
  readonly sequence: number;
  readonly vocabulary: number;
  /** `gpt` when absent; `llama`: the LLaMA-2 architecture (module doc). */
  readonly architecture?: "gpt" | "llama";
  /** LLaMA: the MLP's inner size F (SwiGLU: h → 2·F, F → h). */
  readonly ffnHidden?: number;
  /** LLaMA: key/value heads (grouped-query attention). */
  readonly kvHeads?: number;
}

/** GPT-2's tokenizer, used by the GPT-style configurations of ZeRO-Infinity and MLP-Offload. */
const VOCAB = 50257;
const SEQ = 2048;

/** The GPT-style presets, smallest first. */
export const MODEL_PRESETS: readonly ModelShape[] = [
  {
    name: "7b",
    nominal: 7e9,
    layers: 32,
    hidden: 4096,
    heads: 32,
    sequence: SEQ,
    vocabulary: VOCAB,
  },
  {
    name: "13b",
    nominal: 13e9,
    layers: 40,
    hidden: 5120,
    heads: 40,
    sequence: SEQ,
    vocabulary: VOCAB,
  },
  {
    name: "40b",
    nominal: 40e9,
    layers: 50,
    hidden: 8192,
    heads: 64,
    sequence: SEQ,
    vocabulary: VOCAB,
  },
  {
    name: "52b",
    nominal: 52e9,
    layers: 64,
    hidden: 8192,
    heads: 64,
    sequence: SEQ,
    vocabulary: VOCAB,
  },
  {
    name: "70b",
    nominal: 70e9,
    layers: 88,
    hidden: 8192,
    heads: 64,
    sequence: SEQ,
    vocabulary: VOCAB,
  },
  {
    name: "100b",
    nominal: 100e9,
    layers: 98,
    hidden: 9216,
    heads: 72,
    sequence: SEQ,
    vocabulary: VOCAB,
  },
  {
    name: "175b",
    nominal: 175e9,
    layers: 96,
    hidden: 12288,
    heads: 96,
    sequence: SEQ,
    vocabulary: VOCAB,
  },
  {
    name: "280b",
    nominal: 280e9,
    layers: 88,
    hidden: 16384,
    heads: 128,
    sequence: SEQ,
    vocabulary: VOCAB,
  },
];

/** The GPT-2 vocabulary padded to a multiple of 128, as MLP-Offload's logs state it (50304). */
const ARTIFACT_VOCAB = 50304;

/** A LLaMA-2 preset of MLP-Offload's run scripts: 4 key/value heads, sequence 2048. */
function llama(
  size: string,
  nominal: number,
  layers: number,
  hidden: number,
  ffnHidden: number,
  heads: number,
): ModelShape {
  return {
    name: `llama2-${size}`,
    nominal,
    layers,
    hidden,
    heads,
    sequence: SEQ,
    vocabulary: ARTIFACT_VOCAB,
    architecture: "llama",
    ffnHidden,
    kvHeads: 4,
  };
}

/**
 * The LLaMA-2 presets: the sizes of MLP-Offload's `scripts/launch-expt.sh`
 * (`set_model_size`: m, N layers, H hidden, F ffn, L heads), smallest first.
 */
export const LLAMA_PRESETS: readonly ModelShape[] = [
  llama("7b", 7e9, 32, 4096, 11008, 32),
  llama("8.3b", 8.3e9, 72, 3072, 11008, 32),
  llama("10b", 10e9, 50, 4096, 12400, 32),
  llama("13b", 13e9, 40, 5120, 13824, 40),
  llama("20b", 20e9, 40, 5120, 20480, 64),
  llama("30b", 30e9, 60, 6656, 17920, 52),
  llama("40b", 40e9, 128, 5120, 20480, 40),
  llama("52b", 52e9, 64, 8192, 21824, 64),
  llama("66b", 66e9, 64, 9216, 36864, 72),
  llama("70b", 70e9, 80, 8192, 28672, 64),
  llama("100b", 100e9, 124, 8192, 28672, 64),
  llama("120b", 120e9, 96, 10240, 28672, 80),
];

/** Every preset: the GPT-style ones, then the LLaMA-2 ones. */
const ALL_PRESETS: readonly ModelShape[] = [...MODEL_PRESETS, ...LLAMA_PRESETS];

/** Names accepted by {@linkcode modelPreset}. */
export const MODEL_NAMES: readonly string[] = ALL_PRESETS.map((m) => m.name);

/**
 * Weights of one decoder layer's matrices (biases and norms left out): 12·h²
 * for GPT-style, h·(h + 2·kv·h/a) + h² + 3·h·F for LLaMA.
 */
export function layerMatrixWeights(m: ModelShape): number {
  const h = m.hidden;
  if (m.architecture !== "llama") return 12 * h * h;
  return h * qkvWidth(m) + h * h + 3 * h * ffnOf(m);
}

/** LLaMA: the fused query-key-value projection's output width, h + 2·kv·(h / a). */
export function qkvWidth(m: ModelShape): number {
  const kv = m.kvHeads ?? m.heads;
  return m.hidden + 2 * kv * (m.hidden / m.heads);
}

/** LLaMA: the MLP's inner size (4·h when the shape gives none). */
export function ffnOf(m: ModelShape): number {
  return m.ffnHidden ?? 4 * m.hidden;
}

/**
 * Parameters of a model of this shape.
 *
 * @example
 * ```ts
 * import { modelPreset, parameterCount } from "./model.ts";
 * const n = parameterCount(modelPreset("175b"));
 * console.assert(Math.abs(n / 175e9 - 1) < 0.05);
 * ```
 */
export function parameterCount(m: ModelShape): number {
  const h = m.hidden;
  if (m.architecture === "llama") {
    return m.layers * (layerMatrixWeights(m) + 2 * h) + 2 * m.vocabulary * h + h;
  }
  const perLayer = 12 * h * h + 13 * h;
  return m.layers * perLayer + m.vocabulary * h + m.sequence * h + 2 * h;
}

/**
 * The preset of this name (case-insensitive, `70b` or `70B`).
 *
 * @throws {RangeError} naming the presets when there is none of that name.
 */
export function modelPreset(name: string): ModelShape {
  const m = ALL_PRESETS.find((p) => p.name === name.toLowerCase());
  if (!m) {
    throw new RangeError(`model "${name}" is not a preset: use one of ${MODEL_NAMES.join(", ")}`);
  }
  return m;
}

/**
 * Bytes of one transformer layer's activations kept for backward, in 16-bit,
 * without recomputation (Korthikanti et al.): s·b·h·(34 + 5·a·s/h), split over
 * the tensor-parallel degree.
 */
export function activationBytesPerLayer(
  m: ModelShape,
  microBatch: number,
  tensorParallel: number,
): number {
  const { sequence: s, hidden: h, heads: a } = m;
  return (s * microBatch * h * (34 + (5 * a * s) / h)) / tensorParallel;
}

/**
 * Forward FLOPs of one transformer layer for one micro-batch: its matrix
 * multiplies (2·b·s per weight: 24·b·s·h² for GPT-style) and the two of
 * attention scores (4·b·s²·h), split over the tensor-parallel degree.
 * Backward is twice this.
 */
export function layerForwardFlops(
  m: ModelShape,
  microBatch: number,
  tensorParallel: number,
): number {
  const { sequence: s, hidden: h } = m;
  return (2 * microBatch * s * layerMatrixWeights(m) + 4 * microBatch * s * s * h) /
    tensorParallel;
}
