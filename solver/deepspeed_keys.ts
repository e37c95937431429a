/**
 * The configuration keys the DeepSpeed runtime reads, per version, as data:
 * what solver/export.ts may write and what its tests check every exported key
 * against. Each set names the sources it was read from (repository, path,
 * commit, or a start-up log of that version). Where a fact could not be read
 * from a source the entry says so in `doubts`; export.ts then writes only keys
 * that are in the set.
 *
 * How DeepSpeed reads the two blocks (deepspeed/runtime/config_utils.py,
 * zero/offload_config.py, swap_tensor/aio_config.py):
 * - `zero_optimization` and its `offload_optimizer` / `offload_param` are
 *   pydantic models derived from `DeepSpeedConfigModel`, whose config says
 *   `extra = "forbid"`: an unknown key there stops the start-up. Pydantic
 *   coerces values ("true" becomes a bool, 1e8 an int).
 * - `aio` is a plain dict read with `get_scalar_param` (`dict.get`): unknown
 *   keys are ignored silently and values go unvalidated to the native aio
 *   handle, so a misspelt or retired key (`thread_count` on a release that
 *   reads `intra_op_parallelism`) is dropped without a word, and a string
 *   "false" is not the boolean false.
 *
 * @module
 */

/** The value type a key takes, as the runtime parses it. */
export type KeyType = "bool" | "int" | "float" | "string" | "device" | "object";

/** Where a key set was read. */
export interface KeySource {
  /** `owner/name` on GitHub, or a description where the repository is not known. */
  readonly repo: string;
  /** Path inside the repository. */
  readonly path: string;
  /** Commit the file was read at (40 hex digits), when known. */
  readonly commit?: string;
  /** What this source shows. */
  readonly shows: string;
}

/** The keys one DeepSpeed version reads in the blocks tierbench writes. */
export interface DeepSpeedKeySet {
  /** The version as `deepspeed.__version__` prints it. */
  readonly version: string;
  /** The aio key for the per-request I/O parallelism (threads) this version reads. */
  readonly threadKey: "thread_count" | "intra_op_parallelism";
  /**
   * Keys of `zero_optimization` that tierbench writes (a subset of the model's
   * fields, which are many more; all of these are fields of it).
   */
  readonly zeroOptimization: Readonly<Record<string, KeyType>>;
  /** Every field of `offload_optimizer` (the pydantic model accepts no other). */
  readonly offloadOptimizer: Readonly<Record<string, KeyType>>;
  /** Every key `get_aio_config` reads from `aio` (any other is ignored). */
  readonly aio: Readonly<Record<string, KeyType>>;
  readonly sources: readonly KeySource[];
  /** What the sources do not settle. */
  readonly doubts: readonly string[];
}

/** `zero_optimization` keys tierbench writes; fields of DeepSpeedZeroConfig in every version here. */
const ZERO_KEYS = {
  stage: "int",
  offload_optimizer: "object",
  offload_param: "object",
  sub_group_size: "int",
} as const satisfies Record<string, KeyType>;

/**
 * `offload_optimizer` fields from ZeRO-Offload++'s `ratio` (Twin-Flow,
 * microsoft/DeepSpeed#4636) on. `pipeline` is set by a validator, not read
 * from the config: writing it is refused as an extra field.
 */
const OFFLOAD_OPTIMIZER_KEYS = {
  device: "device",
  nvme_path: "string",
  buffer_count: "int",
  pin_memory: "bool",
  pipeline_read: "bool",
  pipeline_write: "bool",
  fast_init: "bool",
  ratio: "float",
} as const satisfies Record<string, KeyType>;

const LOG_70B =
  "logs/log-70B-tp1-dp4-l80-h8192-a64-sl2048-gbs4-mbs1-ratio1-subg100000000-pipelinerw1-opt_ratio3-cache1-skip_grads1-single_proc1-compress0-tmp-vast.log";

/** The sources shared by both versions: how the models and the aio dict are read. */
const COMMON_SOURCES: readonly KeySource[] = [
  {
    repo: "microsoft/DeepSpeed",
    path: "deepspeed/runtime/config_utils.py",
    commit: "0bb3516d154d27c1c5730742ca73a9b00680c184",
    shows:
      'DeepSpeedConfigModel: extra = "forbid"; get_scalar_param is dict.get (aio keys are not validated)',
  },
];

/**
 * DeepSpeed 0.13.3: `aio.thread_count`, no `use_gds`. MLP-Offload's fork
 * (DataStates/DeepSpeed, branch dist_nvme_opt) is based on it.
 */
export const DEEPSPEED_0_13_3: DeepSpeedKeySet = {
  version: "0.13.3",
  threadKey: "thread_count",
  zeroOptimization: ZERO_KEYS,
  offloadOptimizer: OFFLOAD_OPTIMIZER_KEYS,
  aio: {
    block_size: "int",
    queue_depth: "int",
    thread_count: "int",
    single_submit: "bool",
    overlap_events: "bool",
  },
  sources: [
    ...COMMON_SOURCES,
    {
      repo: "microsoft/DeepSpeed",
      path: "deepspeed/runtime/swap_tensor/aio_config.py",
      commit: "bf15ed84b1c44731086305e5e1b375e9222fea86",
      shows:
        "get_aio_config reads block_size, queue_depth, thread_count, single_submit, overlap_events",
    },
    {
      repo: "microsoft/DeepSpeed",
      path: "deepspeed/runtime/zero/offload_config.py",
      commit: "0510cb40294fe47b2770f1defe9856826828e1cd",
      shows:
        "DeepSpeedZeroOffloadOptimizerConfig (pydantic_v1): device, nvme_path, buffer_count, pin_memory, pipeline_read, pipeline_write, fast_init, ratio",
    },
    {
      repo: "mauryaavinash95/MLP-Offload",
      path: LOG_70B,
      commit: "5975234d6966cb0dddccda170bdcdf9411ca307b",
      shows:
        "a 0.13.3 runtime's own print: 'DeepSpeed info: version=0.13.3+5486420c', aio_config {'block_size', 'queue_depth', 'thread_count', 'single_submit', 'overlap_events'}, swap_config device nvme_path buffer_count pin_memory pipeline pipeline_read pipeline_write fast_init ratio (+ the fork's dist_opt_*)",
    },
  ],
  doubts: [
    "the runtime print comes from MLP-Offload's fork of 0.13.3 (git 5486420c), not from the PyPI wheel; the upstream files read agree with it",
    "the upstream files were read at commits whose release tags the sources do not give",
  ],
};

/** DeepSpeed 0.16.9: `aio.intra_op_parallelism` and `aio.use_gds`. */
export const DEEPSPEED_0_16_9: DeepSpeedKeySet = {
  version: "0.16.9",
  threadKey: "intra_op_parallelism",
  zeroOptimization: ZERO_KEYS,
  offloadOptimizer: OFFLOAD_OPTIMIZER_KEYS,
  aio: {
    block_size: "int",
    queue_depth: "int",
    intra_op_parallelism: "int",
    single_submit: "bool",
    overlap_events: "bool",
    use_gds: "bool",
  },
  sources: [
    ...COMMON_SOURCES,
    {
      repo: "(a public file quoting a LLaMA-Factory run; search index file id 56025705611)",
      path: "(start-up log, 2026-01-27)",
      shows:
        "a 0.16.9 runtime's own print: 'DeepSpeed info: version=0.16.9', aio_config {'block_size', 'queue_depth', 'intra_op_parallelism', 'single_submit', 'overlap_events', 'use_gds'}",
    },
    {
      repo: "deepspeedai/DeepSpeed",
      path: "deepspeed/runtime/swap_tensor/pipelined_optimizer_swapper.py",
      commit: "1c701d7c61b170eea81dcc637379500a7586b9b2",
      shows:
        "the optimizer swapper builds its aio handles from aio_config[AIO_INTRA_OP_PARALLELISM]",
    },
    {
      repo: "microsoft/DeepSpeed",
      path: "deepspeed/runtime/swap_tensor/aio_config.py",
      commit: "68213f2e9486dd7ccfaa9bf849e6d2ff1257bbb1",
      shows: "use_gds is read by get_aio_config (added with DeepNVMe GDS, #5852)",
    },
    {
      repo: "deepspeedai/DeepSpeed",
      path: "pull/7056",
      shows:
        "'Rename aio_thread_count to intra_op_parallelism', opened 2025-02-19; 0.16.4 was released 2025-02-20 (#7063), 0.16.5 on 2025-03-27 (#7180)",
    },
    {
      repo: "deepspeedai/DeepSpeed",
      path: "deepspeed/runtime/zero/offload_config.py",
      commit: "1978617c691b2c992a17902975187ef8d61176fa",
      shows:
        "a later DeepSpeedZeroOffloadOptimizerConfig (pydantic v2) still has every field of the 0.13.3 set (and adds super_offload, convert_grad_on_cpu, cpuadam_cores_perc)",
    },
  ],
  doubts: [
    "0.16.9's aio_config.py itself is not in the sources: that it reads intra_op_parallelism (and not thread_count) from the user's aio block rests on its printed aio dict and on the swapper reading aio_config['intra_op_parallelism']",
    "0.16.9's offload_optimizer fields are bracketed, not read: the fields of 0.13.3 that a later master still has; fields added in between (if any) are left out",
    "which release first reads intra_op_parallelism (0.16.4 or 0.16.5) is not settled: #7056's merge date is not in the sources",
    "io_backend (and thread_count as an alias) appear only in a contributor's fork (xylian86/DeepSpeed), in no release the sources show: not written",
  ],
};

/** A version as [major, minor, patch]. */
type Triple = readonly [number, number, number];

function before(v: Triple, w: Triple): boolean {
  return v[0] !== w[0] ? v[0] < w[0] : v[1] !== w[1] ? v[1] < w[1] : v[2] < w[2];
}

/** The first release whose `offload_optimizer` has `ratio` (ZeRO-Offload++ Twin-Flow, #4636). */
export const RATIO_FROM: Triple = [0, 12, 4];
/** The first release whose `aio` reads `use_gds` (DeepNVMe GDS, #5852). */
export const USE_GDS_FROM: Triple = [0, 15, 0];
/** The first release whose `aio` reads `intra_op_parallelism` in place of `thread_count` (#7056). */
export const INTRA_OP_FROM: Triple = [0, 16, 4];

/**
 * The key set of any DeepSpeed release `x.y.z`, by what its runtime parses:
 * `offload_optimizer.ratio` from {@linkcode RATIO_FROM}, `aio.use_gds` from
 * {@linkcode USE_GDS_FROM}, `aio.intra_op_parallelism` in place of
 * `thread_count` from {@linkcode INTRA_OP_FROM}.
 *
 * @example
 * ```ts
 * import { keySetForVersion } from "./deepspeed_keys.ts";
 * console.assert(keySetForVersion([0, 12, 3]).offloadOptimizer.ratio === undefined);
 * console.assert(keySetForVersion([0, 16, 4]).threadKey === "intra_op_parallelism");
 * ```
 */
export function keySetForVersion(v: Triple): DeepSpeedKeySet {
  const offloadOptimizer: Record<string, KeyType> = { ...OFFLOAD_OPTIMIZER_KEYS };
  if (before(v, RATIO_FROM)) delete offloadOptimizer.ratio;
  const threadKey = before(v, INTRA_OP_FROM) ? "thread_count" : "intra_op_parallelism";
  const aio: Record<string, KeyType> = {
    block_size: "int",
    queue_depth: "int",
    [threadKey]: "int",
    single_submit: "bool",
    overlap_events: "bool",
  };
  if (!before(v, USE_GDS_FROM)) aio.use_gds = "bool";
  const near = before(v, INTRA_OP_FROM) ? DEEPSPEED_0_13_3 : DEEPSPEED_0_16_9;
  return {
    version: v.join("."),
    threadKey,
    zeroOptimization: ZERO_KEYS,
    offloadOptimizer,
    aio,
    sources: near.sources,
    doubts: [
      `the key set of ${
        v.join(".")
      } is derived from the version boundaries (ratio from 0.12.4, use_gds from 0.15.0, intra_op_parallelism from 0.16.4; docs/exports.md), with the sources of ${near.version}`,
      ...near.doubts,
    ],
  };
}

/** The key sets by version, oldest first. */
export const DEEPSPEED_KEY_SETS: Readonly<Record<string, DeepSpeedKeySet>> = {
  "0.13.3": DEEPSPEED_0_13_3,
  "0.16.9": DEEPSPEED_0_16_9,
};

/**
 * MLP-Offload's fork: DataStates/DeepSpeed (branch dist_nvme_opt, a submodule
 * of mauryaavinash95/MLP-Offload), 0.13.3+5486420c. Its `offload_optimizer`
 * takes the 0.13.3 fields and two of its own, `dist_cpu_caching` (float) and
 * `dist_opt_ratio` (int), and refuses any other (issue 18, from the public
 * fork's offload config; ../shared/notes/anchors.md). The artifact's configs
 * and logs also show `dist_opt_enable_caching`, `dist_opt_grad_skip`,
 * `dist_opt_one_at_time` and `dist_opt_compress`: keys of the snapshot its
 * runs used, which the public fork refuses (docs/exports.md).
 */
export const MLP_OFFLOAD_FORK = {
  version: "0.13.3+5486420c",
  repo: "DataStates/DeepSpeed",
  branch: "dist_nvme_opt",
  offloadOptimizer: {
    ...OFFLOAD_OPTIMIZER_KEYS,
    dist_cpu_caching: "float",
    dist_opt_ratio: "int",
  } as Readonly<Record<string, KeyType>>,
  aio: DEEPSPEED_0_13_3.aio,
  zeroOptimization: ZERO_KEYS as Readonly<Record<string, KeyType>>,
  sources: [
    {
      repo: "mauryaavinash95/MLP-Offload",
      path: "scripts/config-n-run.sh",
      commit: "aeb1ac4b9d0d178ac48d3124f31ac4a5e7ee5172",
      shows:
        "the ds_config its runs write: nvme_path (';'-joined paths), buffer_count, pipeline_read/write, pin_memory, dist_opt_enable_caching, dist_opt_grad_skip, dist_opt_ratio, dist_opt_one_at_time, sub_group_size; aio block_size 2097152, thread_count 4, single_submit false, overlap_events true",
    },
    {
      repo: "mauryaavinash95/MLP-Offload",
      path: "scripts/launch-expt.sh",
      commit: "690be37fd9721d9596535e8e6fd5fc1ab3c3372d",
      shows:
        "its runs: -P 1 (pipelined read/write), -O 3 with 'NVME;PFS' paths ('Node-local NVMe to PFS offloading ratio'), -E 1, -g 1, -s 1, -b 32; the baseline -O 0 with the NVMe path alone",
    },
    {
      repo: "mauryaavinash95/MLP-Offload",
      path: LOG_70B,
      commit: "5975234d6966cb0dddccda170bdcdf9411ca307b",
      shows:
        "swap_config as parsed: dist_opt_enable_caching=True dist_opt_grad_skip=True dist_opt_one_at_time=1 dist_opt_ratio=3 dist_opt_compress=0; aio_config queue_depth 8 (the default); one swapper per path",
    },
  ] as readonly KeySource[],
} as const;
