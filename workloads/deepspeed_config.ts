/**
 * A DeepSpeed config file (`--deepspeed-config ds_config.json`), read the way
 * DeepSpeed v0.14.5 reads it, reduced to what decides the I/O of ZeRO-3 with
 * NVMe offload: `zero_optimization` (sub_group_size, reduce_bucket_size,
 * offload_optimizer, offload_param), `aio`, the model's dtype (`fp16`,
 * `bf16`), the optimizer's type and the batch sizes.
 *
 * What DeepSpeed refuses is refused here, in one line naming the file, the
 * key and the DeepSpeed source line of the rule: `zero_optimization` and the
 * two `offload_*` blocks are pydantic models that forbid unknown keys
 * (runtime/config_utils.py L111), and `"auto"` stands for the default
 * (L54–55). Rules that need the model too (buffers the swappers run out of)
 * are checked when zero-infinity lays the model out (workloads/zero3.ts).
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";

/** The `aio` block (runtime/swap_tensor/aio_config.py L18–29). */
export interface AioConfig {
  readonly blockSize: number;
  readonly queueDepth: number;
  /** `thread_count` (0.14.5) or `intra_op_parallelism` (its name from 0.16.4 on). */
  readonly threadCount: number;
  readonly singleSubmit: boolean;
  readonly overlapEvents: boolean;
}

/** `zero_optimization.offload_param` with device nvme (zero/offload_config.py L19–47). */
export interface OffloadParamConfig {
  readonly bufferCount: number;
  /** Elements per buffer. */
  readonly bufferSize: number;
  /** Parameter elements kept in host memory. */
  readonly maxInCpu: number;
  /** Where the parameter swap files go (`{nvme_path}/zero_stage_3/float32params/rank{r}/`). */
  readonly nvmePath: string;
}

/** What a DeepSpeed config says about ZeRO-3's NVMe I/O, DeepSpeed's defaults filled in. */
export interface DeepSpeedConfig {
  /** The file, for messages. */
  readonly source: string;
  readonly subGroupSize: number;
  readonly reduceBucketSize: number;
  readonly reduceScatter: boolean;
  readonly contiguousGradients: boolean;
  /** `gradient_accumulation_steps`, when the file gives it. */
  readonly gradientAccumulationSteps: number | undefined;
  /** `train_batch_size`, when the file gives it. */
  readonly trainBatchSize: number | undefined;
  /** `train_micro_batch_size_per_gpu`, when the file gives it. */
  readonly microBatch: number | undefined;
  /** Bytes of a model parameter: 2 with fp16 or bf16 enabled, else 4. */
  readonly modelElementBytes: number;
  /** Optimizer states swapped per subgroup beside the fp32 params (`exp_avg`, `exp_avg_sq`). */
  readonly optimizerStates: readonly string[];
  readonly aio: AioConfig;
  readonly bufferCount: number;
  readonly pipelineRead: boolean;
  readonly pipelineWrite: boolean;
  readonly fastInit: boolean;
  /** Where the optimizer's swap files go (`{nvme_path}/zero_stage_3/optimizer/rank{r}/`). */
  readonly nvmePath: string;
  /** Parameter swapping to NVMe; undefined when parameters are not offloaded to nvme. */
  readonly offloadParam: OffloadParamConfig | undefined;
}

/** DeepSpeed v0.14.5's defaults (zero/config.py, zero/offload_config.py, swap_tensor/constants.py). */
export const DEEPSPEED_DEFAULTS = {
  subGroupSize: 1e9,
  reduceBucketSize: 5e8,
  blockSize: 1048576,
  queueDepth: 8,
  threadCount: 1,
  bufferCount: 4,
  paramBufferCount: 5,
  paramBufferSize: 1e8,
  maxInCpu: 1e9,
} as const;

/** Where the rules come from: DeepSpeed v0.14.5, tag commit eb07d41f. */
export const DEEPSPEED_VERSION = "DeepSpeed v0.14.5 (eb07d41f)";

/** Keys of DeepSpeedZeroConfig (zero/config.py L83–310), aliases included. */
const ZERO_KEYS = [
  "stage",
  "contiguous_gradients",
  "reduce_scatter",
  "reduce_bucket_size",
  "use_multi_rank_bucket_allreduce",
  "allgather_partitions",
  "allgather_bucket_size",
  "overlap_comm",
  "load_from_fp32_weights",
  "elastic_checkpoint",
  "offload_param",
  "offload_optimizer",
  "sub_group_size",
  "cpu_offload_param",
  "cpu_offload_use_pin_memory",
  "cpu_offload",
  "prefetch_bucket_size",
  "stage3_prefetch_bucket_size",
  "param_persistence_threshold",
  "stage3_param_persistence_threshold",
  "model_persistence_threshold",
  "stage3_model_persistence_threshold",
  "max_live_parameters",
  "stage3_max_live_parameters",
  "max_reuse_distance",
  "stage3_max_reuse_distance",
  "gather_16bit_weights_on_model_save",
  "stage3_gather_16bit_weights_on_model_save",
  "use_all_reduce_for_fetch_params",
  "stage3_use_all_reduce_for_fetch_params",
  "stage3_gather_fp16_weights_on_model_save",
  "ignore_unused_parameters",
  "legacy_stage1",
  "round_robin_gradients",
  "zero_hpz_partition_size",
  "zero_quantized_weights",
  "zero_quantized_nontrainable_weights",
  "zero_quantized_gradients",
  "mics_shard_size",
  "mics_hierarchical_params_gather",
  "memory_efficient_linear",
  "pipeline_loading_checkpoint",
  "override_module_apply",
];
const OFFLOAD_PARAM_KEYS = [
  "device",
  "nvme_path",
  "buffer_count",
  "buffer_size",
  "max_in_cpu",
  "pin_memory",
];
const OFFLOAD_OPTIMIZER_KEYS = [
  "device",
  "nvme_path",
  "buffer_count",
  "pin_memory",
  "pipeline_read",
  "pipeline_write",
  "fast_init",
  "ratio",
];
/** Optimizers whose CPU implementation ZeRO-Offload uses, and the states they swap. */
const OPTIMIZER_STATES: Record<string, readonly string[]> = {
  adam: ["exp_avg", "exp_avg_sq"],
  adamw: ["exp_avg", "exp_avg_sq"],
  adagrad: ["exp_avg_sq"],
};

type Obj = Record<string, unknown>;

/** Reads one config file's values, failing in its words. */
class Reader {
  constructor(readonly source: string) {}

  fail(key: string, problem: string): never {
    throw new ConfigError("deepspeed-config", `${this.source}: ${key}: ${problem}`);
  }

  object(parent: Obj, key: string, at: string, keys?: readonly string[]): Obj | undefined {
    const v = parent[key];
    if (v === undefined || v === null) return undefined;
    const where = at ? `${at}.${key}` : key;
    if (typeof v !== "object" || Array.isArray(v)) this.fail(where, "is not an object");
    if (keys) {
      const extra = Object.keys(v as Obj).find((k) => !keys.includes(k));
      if (extra !== undefined) {
        this.fail(
          `${where}.${extra}`,
          "unknown key: DeepSpeed refuses it (extra fields not permitted, runtime/config_utils.py L111)",
        );
      }
    }
    return v as Obj;
  }

  /** An integer ≥ min; `"auto"` and absence give `fallback`. */
  int(o: Obj | undefined, key: string, at: string, fallback: number, min = 0): number {
    const v = o?.[key];
    if (v === undefined || v === null || v === "auto") return fallback;
    const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
    if (typeof n !== "number" || !Number.isFinite(n) || !Number.isInteger(n) || n < min) {
      this.fail(`${at}.${key}`, `${JSON.stringify(v)} is not an integer ≥ ${min}`);
    }
    return n as number;
  }

  bool(o: Obj | undefined, key: string, at: string, fallback: boolean): boolean {
    const v = o?.[key];
    if (v === undefined || v === null || v === "auto") return fallback;
    if (typeof v !== "boolean") {
      this.fail(`${at}.${key}`, `${JSON.stringify(v)} is not true or false`);
    }
    return v as boolean;
  }
}

/**
 * The I/O-relevant part of a parsed DeepSpeed config (`json`, from the file
 * `source`), DeepSpeed v0.14.5's defaults filled in.
 *
 * @throws {ConfigError} naming the file, the key and why DeepSpeed (or this
 * model of it) refuses it.
 *
 * @example
 * ```ts
 * import { parseDeepSpeedConfig } from "./deepspeed_config.ts";
 * const c = parseDeepSpeedConfig({
 *   zero_optimization: { stage: 3, offload_optimizer: { device: "nvme", nvme_path: "/x" } },
 * }, "ds.json");
 * console.assert(c.subGroupSize === 1e9 && c.aio.queueDepth === 8 && c.bufferCount === 4);
 * ```
 */
export function parseDeepSpeedConfig(json: unknown, source: string): DeepSpeedConfig {
  const r = new Reader(source);
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    r.fail("(top)", "is not a JSON object");
  }
  const top = json as Obj;
  const zero = r.object(top, "zero_optimization", "", ZERO_KEYS) ??
    r.fail("zero_optimization", "is missing: zero-infinity models ZeRO stage 3 with NVMe offload");
  const stage = r.int(zero, "stage", "zero_optimization", 0);
  if (stage !== 3) {
    r.fail(
      "zero_optimization.stage",
      `${stage}: NVMe offload of parameters and swapped optimizer subgroups is ZeRO stage 3`,
    );
  }
  const zo = "zero_optimization";
  const opt = r.object(zero, "offload_optimizer", zo, OFFLOAD_OPTIMIZER_KEYS);
  if (opt?.device !== "nvme") {
    r.fail(
      `${zo}.offload_optimizer.device`,
      `${
        JSON.stringify(opt?.device ?? "none")
      }: zero-infinity models the optimizer swapped to "nvme"`,
    );
  }
  const oo = `${zo}.offload_optimizer`;
  if (typeof opt!.nvme_path !== "string") {
    r.fail(`${oo}.nvme_path`, "is missing (DeepSpeed needs it for nvme)");
  }
  return {
    source,
    subGroupSize: r.int(zero, "sub_group_size", zo, DEEPSPEED_DEFAULTS.subGroupSize),
    reduceBucketSize: r.int(zero, "reduce_bucket_size", zo, DEEPSPEED_DEFAULTS.reduceBucketSize),
    reduceScatter: r.bool(zero, "reduce_scatter", zo, true),
    contiguousGradients: r.bool(zero, "contiguous_gradients", zo, true),
    ...batchSizes(r, top),
    modelElementBytes: modelBytes(r, top),
    optimizerStates: optimizerStates(r, top),
    aio: aioConfig(r, top),
    bufferCount: r.int(opt, "buffer_count", oo, DEEPSPEED_DEFAULTS.bufferCount),
    pipelineRead: r.bool(opt, "pipeline_read", oo, false),
    pipelineWrite: r.bool(opt, "pipeline_write", oo, false),
    fastInit: r.bool(opt, "fast_init", oo, false),
    nvmePath: opt!.nvme_path as string,
    offloadParam: offloadParam(r, zero),
  };
}

function batchSizes(r: Reader, top: Obj) {
  return {
    gradientAccumulationSteps: top.gradient_accumulation_steps === undefined
      ? undefined
      : r.int(top, "gradient_accumulation_steps", "", 1, 1),
    trainBatchSize: top.train_batch_size === undefined
      ? undefined
      : r.int(top, "train_batch_size", "", 1, 1),
    microBatch: top.train_micro_batch_size_per_gpu === undefined
      ? undefined
      : r.int(top, "train_micro_batch_size_per_gpu", "", 1, 1),
  };
}

function modelBytes(r: Reader, top: Obj): number {
  const fp16 = r.bool(r.object(top, "fp16", ""), "enabled", "fp16", false);
  const bf16 = r.bool(
    r.object(top, "bf16", "") ?? r.object(top, "bfloat16", ""),
    "enabled",
    "bf16",
    false,
  );
  if (fp16 && bf16) {
    r.fail("bf16.enabled", "and fp16.enabled are both true: DeepSpeed refuses that");
  }
  return fp16 || bf16 ? 2 : 4;
}

function optimizerStates(r: Reader, top: Obj): readonly string[] {
  const o = r.object(top, "optimizer", "");
  // without an optimizer block the client passes its own; ZeRO-Offload's is CPU Adam
  if (o === undefined || o.type === undefined) return OPTIMIZER_STATES.adam!;
  const type = String(o.type).toLowerCase();
  return OPTIMIZER_STATES[type] ??
    r.fail("optimizer.type", `"${String(o.type)}" is not modelled (allowed: Adam, AdamW, Adagrad)`);
}

function aioConfig(r: Reader, top: Obj): AioConfig {
  const a = r.object(top, "aio", "");
  const threads = r.int(a, "thread_count", "aio", 0, 1);
  const intra = r.int(a, "intra_op_parallelism", "aio", 0, 1);
  if (threads > 0 && intra > 0 && threads !== intra) {
    r.fail("aio.intra_op_parallelism", `${intra} and thread_count ${threads} disagree: give one`);
  }
  return {
    blockSize: r.int(a, "block_size", "aio", DEEPSPEED_DEFAULTS.blockSize, 1),
    queueDepth: r.int(a, "queue_depth", "aio", DEEPSPEED_DEFAULTS.queueDepth, 1),
    threadCount: threads || intra || DEEPSPEED_DEFAULTS.threadCount,
    singleSubmit: r.bool(a, "single_submit", "aio", false),
    overlapEvents: r.bool(a, "overlap_events", "aio", true),
  };
}

function offloadParam(r: Reader, zero: Obj): OffloadParamConfig | undefined {
  const at = "zero_optimization.offload_param";
  const p = r.object(zero, "offload_param", "zero_optimization", OFFLOAD_PARAM_KEYS);
  if (p === undefined || p.device === undefined || p.device === "none" || p.device === "cpu") {
    return undefined;
  }
  if (p.device !== "nvme") {
    r.fail(`${at}.device`, `${JSON.stringify(p.device)} is not none, cpu or nvme`);
  }
  if (typeof p.nvme_path !== "string") {
    r.fail(`${at}.nvme_path`, "is missing (DeepSpeed needs it for nvme)");
  }
  return {
    bufferCount: r.int(p, "buffer_count", at, DEEPSPEED_DEFAULTS.paramBufferCount),
    bufferSize: r.int(p, "buffer_size", at, DEEPSPEED_DEFAULTS.paramBufferSize),
    maxInCpu: r.int(p, "max_in_cpu", at, DEEPSPEED_DEFAULTS.maxInCpu),
    nvmePath: p.nvme_path as string,
  };
}
