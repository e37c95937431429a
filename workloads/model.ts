/**
 * GPT-style model presets, with the parameter count derived from the shape.
 *
 * A decoder layer holds 12·h² weights (attention 4·h², MLP 8·h² with a 4·h
 * inner size) and 13·h biases and LayerNorm weights; the model adds token
 * embeddings V·h (tied with the output) and learned positions s·h, and a final
 * LayerNorm 2·h. Each preset's shape is chosen so that count lands within 5 %
 * of the nominal size its name states (the tests check it).
 *
 * @module
 */

/** The shape of a GPT-style model. */
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
}

/** GPT-2's tokenizer, used by the GPT-style configurations of ZeRO-Infinity and MLP-Offload. */
const VOCAB = 50257;
const SEQ = 2048;

/** The presets, smallest first. */
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

/** Names accepted by {@linkcode modelPreset}. */
export const MODEL_NAMES: readonly string[] = MODEL_PRESETS.map((m) => m.name);

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
  const perLayer = 12 * h * h + 13 * h;
  return m.layers * perLayer + m.vocabulary * h + m.sequence * h + 2 * h;
}

/**
 * The preset of this name (case-insensitive, `70b` or `70B`).
 *
 * @throws {RangeError} naming the presets when there is none of that name.
 */
export function modelPreset(name: string): ModelShape {
  const m = MODEL_PRESETS.find((p) => p.name === name.toLowerCase());
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
 * Forward FLOPs of one transformer layer for one micro-batch: the four
 * matrix multiplies of width h (24·b·s·h²) and the two of attention scores
 * (4·b·s²·h), split over the tensor-parallel degree. Backward is twice this.
 */
export function layerForwardFlops(
  m: ModelShape,
  microBatch: number,
  tensorParallel: number,
): number {
  const { sequence: s, hidden: h } = m;
  return (24 * microBatch * s * h * h + 4 * microBatch * s * s * h) / tensorParallel;
}
