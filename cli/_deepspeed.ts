/**
 * `--model-tensors FILE` and `--deepspeed-config FILE`: a user's own model and
 * DeepSpeed config driving `zero-infinity` and `deepspeed-checkpoint`. The
 * files are read here; workloads/model_tensors.ts and
 * workloads/deepspeed_config.ts read what is in them.
 *
 * A flag given beside the config (`--subgroup-size`, `--bs`, …) must agree
 * with it: two sources for one setting are refused rather than one silently
 * winning.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import type { WorkloadOptions } from "../workloads/common.ts";
import { type DeepSpeedConfig, parseDeepSpeedConfig } from "../workloads/deepspeed_config.ts";
import { parseModelTensors } from "../workloads/model_tensors.ts";
import type { RawTrainingSetup, TrainingSetup } from "../workloads/setup.ts";

/** The workloads these files drive. */
export const DEEPSPEED_WORKLOADS = ["zero-infinity", "deepspeed-checkpoint"] as const;

/** Reads a JSON file named by `--flag`, or says in one line why it cannot. */
export async function readJsonFile(flag: string, path: string): Promise<unknown> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound ? "no such file" : (e as Error).message;
    throw new ConfigError(flag, `${path}: ${why}`, undefined, { cause: e });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ConfigError(flag, `${path}: not JSON (${(e as Error).message})`, undefined, {
      cause: e,
    });
  }
}

/** What the two flags give, read and checked. */
export interface DeepSpeedInputs {
  readonly tensors: RawTrainingSetup["tensors"];
  readonly config: DeepSpeedConfig | undefined;
}

/**
 * Reads `--model-tensors` and `--deepspeed-config` when given, refusing them
 * for a workload they do not drive.
 */
export async function readDeepSpeedInputs(
  workload: string,
  files: { modelTensors?: string | undefined; deepspeedConfig?: string | undefined },
): Promise<DeepSpeedInputs> {
  for (
    const [flag, v] of [["model-tensors", files.modelTensors], [
      "deepspeed-config",
      files.deepspeedConfig,
    ]]
  ) {
    if (v !== undefined && !(DEEPSPEED_WORKLOADS as readonly string[]).includes(workload)) {
      throw new ConfigError(flag!, `drives ${DEEPSPEED_WORKLOADS.join(" and ")}, not ${workload}`);
    }
  }
  let tensors: RawTrainingSetup["tensors"];
  if (files.modelTensors !== undefined) {
    const m = parseModelTensors(
      await readJsonFile("model-tensors", files.modelTensors),
      files.modelTensors,
    );
    tensors = { label: m.label, list: m.tensors };
  }
  const config = files.deepspeedConfig === undefined ? undefined : parseDeepSpeedConfig(
    await readJsonFile("deepspeed-config", files.deepspeedConfig),
    files.deepspeedConfig,
  );
  return { tensors, config };
}

/** Where a flag's value came from: `cli` when the user gave it. */
export type FlagSource = (flag: string) => string | undefined;

/**
 * The setup with the config's sub_group_size and micro-batch and the
 * model's tensors: a flag the user gave must agree with the config.
 */
export function setupWithDeepSpeed(
  raw: RawTrainingSetup,
  inputs: DeepSpeedInputs,
  given: FlagSource,
): RawTrainingSetup {
  const c = inputs.config;
  const out: RawTrainingSetup = { ...raw, tensors: inputs.tensors };
  if (c === undefined) return out;
  agree(
    given,
    "subgroup-size",
    raw.subgroupSize,
    c.subGroupSize,
    "zero_optimization.sub_group_size",
    c,
  );
  out.subgroupSize = c.subGroupSize;
  if (c.microBatch !== undefined) {
    agree(given, "micro-batch", raw.microBatch, c.microBatch, "train_micro_batch_size_per_gpu", c);
    out.microBatch = c.microBatch;
  }
  return out;
}

/**
 * The options with the config, and gradient accumulation as DeepSpeed
 * derives it: train_batch_size = micro-batch × steps × data-parallel ranks
 * (runtime/config.py `_batch_assertion`).
 */
export function optionsWithDeepSpeed(
  options: WorkloadOptions,
  setup: TrainingSetup,
  inputs: DeepSpeedInputs,
  given: FlagSource,
): WorkloadOptions {
  const c = inputs.config;
  if (c === undefined) return options;
  agree(given, "bs", options.bs, c.aio.blockSize, "aio.block_size", c);
  agree(given, "iodepth", options.iodepth, c.aio.queueDepth, "aio.queue_depth", c);
  agree(given, "threads", options.threads, c.aio.threadCount, "aio.thread_count", c);
  agree(
    given,
    "buffer-count",
    options.bufferCount,
    c.bufferCount,
    "zero_optimization.offload_optimizer.buffer_count",
    c,
  );
  if (options.pipeline && !(c.pipelineRead && c.pipelineWrite)) {
    throw new ConfigError(
      "pipeline",
      `disagrees with ${c.source}'s pipeline_read/pipeline_write: give one`,
    );
  }
  const world = setup.dataParallel;
  let steps = c.gradientAccumulationSteps;
  if (c.trainBatchSize !== undefined) {
    const per = setup.microBatch * world;
    if (steps === undefined) {
      if (c.trainBatchSize % per !== 0) {
        throw new ConfigError(
          "deepspeed-config",
          `${c.source}: train_batch_size: ${c.trainBatchSize} is not a multiple of micro-batch ${setup.microBatch} × ${world} data-parallel ranks (DeepSpeed's _batch_assertion, runtime/config.py)`,
        );
      }
      steps = c.trainBatchSize / per;
    } else if (c.trainBatchSize !== per * steps) {
      throw new ConfigError(
        "deepspeed-config",
        `${c.source}: train_batch_size: ${c.trainBatchSize} is not micro-batch ${setup.microBatch} × gradient_accumulation_steps ${steps} × ${world} data-parallel ranks (DeepSpeed's _batch_assertion, runtime/config.py)`,
      );
    }
  }
  const { bs: _b, iodepth: _i, threads: _t, bufferCount: _c, pipeline: _p, ...rest } = options;
  return { ...rest, deepspeed: { ...c, gradientAccumulationSteps: steps ?? 1 } };
}

/** Refuses a flag the user gave that says otherwise than the config. */
function agree(
  given: FlagSource,
  flag: string,
  value: number | string | undefined,
  fromConfig: number,
  key: string,
  c: DeepSpeedConfig,
): void {
  if (given(flag) !== "cli" || value === undefined) return;
  if (Number(value) !== fromConfig) {
    throw new ConfigError(
      flag,
      `${value} disagrees with ${key} ${fromConfig} in ${c.source}: give one`,
    );
  }
}
