/**
 * A user's own model as a list of its parameter tensors (`--model-tensors
 * FILE`): every parameter's name and shape in registration order, as
 * PyTorch's `named_parameters()` lists them. DeepSpeed's ZeRO-3 numbers the
 * parameters in that order (`ds_id`), partitions each one over the
 * data-parallel ranks and forms the optimizer subgroups from it, so the list
 * is all `zero-infinity` needs to lay out a model's swap files.
 *
 * The file is JSON: `{"model": "…", "dtype": "float32", "parameters":
 * [{"name": "inp.weight", "shape": [1024, 1024]}, …]}`; `numel`, when given,
 * must be the product of the shape. docs/workloads.md has the three lines of
 * PyTorch that write it.
 *
 * @module
 */

import { z } from "zod";
import { ConfigError } from "../core/errors.ts";
import { describeZodIssue } from "../core/zod_issue.ts";

/** One parameter tensor of the model. */
export interface ModelTensor {
  /** `blocks.0.qkv.weight`. */
  readonly name: string;
  /** Elements of the whole tensor (before ZeRO-3 partitions it). */
  readonly numel: number;
}

/** The model a `--model-tensors` file describes. */
export interface ModelTensors {
  /** What the file calls the model (its `model` field), or the file's name. */
  readonly label: string;
  /** The parameters' element size in bytes when the file says (`float32` 4, `float16` 2). */
  readonly elementBytes: number | undefined;
  /** The parameters in registration order. */
  readonly tensors: readonly ModelTensor[];
}

const DTYPE_BYTES: Record<string, number> = {
  float32: 4,
  float: 4,
  float16: 2,
  half: 2,
  bfloat16: 2,
  float64: 8,
};

const dim = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const schema = z.object({
  model: z.string().optional(),
  dtype: z.string().optional(),
  parameters: z.array(z.object({
    name: z.string().min(1),
    shape: z.array(dim),
    numel: dim.optional(),
  })).min(1),
});

/** Parameters at most in a list (a 1e15-parameter model has fewer tensors than this). */
const MAX_TENSORS = 10_000_000;

/**
 * The model `json` (a parsed `--model-tensors` file named `source`) describes.
 *
 * @throws {ConfigError} naming the file, the field at fault and what it must be.
 *
 * @example
 * ```ts
 * import { parseModelTensors } from "./model_tensors.ts";
 * const m = parseModelTensors({ parameters: [{ name: "w", shape: [4, 256] }] }, "m.json");
 * console.assert(m.tensors[0]!.numel === 1024 && m.label === "m.json");
 * ```
 */
export function parseModelTensors(json: unknown, source: string): ModelTensors {
  const fail = (where: string, problem: string): never => {
    throw new ConfigError("model-tensors", `${source}: ${where}${where ? ": " : ""}${problem}`);
  };
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const d = describeZodIssue(parsed.error.issues, { input: json });
    const use = d.allowed === undefined ? "" : ` (allowed: ${d.allowed})`;
    return fail(
      d.where,
      `${d.problem}${use}; the file lists {"parameters": [{"name": …, "shape": […]}, …]}`,
    );
  }
  const v = parsed.data;
  if (v.parameters.length > MAX_TENSORS) {
    fail("parameters", `${v.parameters.length} tensors, more than the ${MAX_TENSORS} modelled`);
  }
  let elementBytes: number | undefined;
  if (v.dtype !== undefined) {
    elementBytes = DTYPE_BYTES[v.dtype.replace(/^torch\./, "")];
    if (elementBytes === undefined) {
      fail("dtype", `"${v.dtype}" is not one of ${Object.keys(DTYPE_BYTES).join(", ")}`);
    }
  }
  const seen = new Set<string>();
  const tensors = v.parameters.map((p, i): ModelTensor => {
    const product = p.shape.reduce((a, b) => a * b, 1);
    if (!Number.isSafeInteger(product)) fail(`parameters[${i}].shape`, "has too many elements");
    if (p.numel !== undefined && p.numel !== product) {
      fail(`parameters[${i}].numel`, `${p.numel} is not the product of the shape (${product})`);
    }
    if (product === 0) fail(`parameters[${i}].shape`, "has no elements");
    if (seen.has(p.name)) fail(`parameters[${i}].name`, `"${p.name}" is listed twice`);
    seen.add(p.name);
    return { name: p.name, numel: product };
  });
  return { label: v.model ?? source.split("/").at(-1)!, elementBytes, tensors };
}
