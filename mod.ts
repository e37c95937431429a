/**
 * tierbench: storage-tier I/O benchmark for LLM training that offloads state
 * out of GPU memory. The public API, by name.
 *
 * @example
 * ```ts
 * import { openTier, parseJobOptions, runJob } from "./mod.ts";
 * const job = parseJobOptions({ tier: "memory:", rw: "randread", bs: "4k", size: "8m", ioSize: "8m" });
 * await using tier = openTier(job.tier);
 * await tier.setup();
 * const result = await runJob(tier, job);
 * console.assert(result.read.io_bytes === 8 * 1024 * 1024);
 * ```
 *
 * @module
 */

export {
  DEFAULT_MEMORY_DIR,
  DEFAULTS,
  ENGINES,
  formatTierSpec,
  type JobOptions,
  parseJobOptions,
  parseTierSpec,
  type RawJobOptions,
  RW_MODES,
  type RwMode,
  TIER_KINDS,
  type TierKind,
  type TierSpec,
} from "./core/config.ts";
export {
  ConfigError,
  DirectIoUnsupportedError,
  InterruptedError,
  IoError,
  S3Error,
} from "./core/errors.ts";
export {
  type DeviceFacts,
  type HostFacts,
  hostFacts,
  type PathFacts,
  pathFacts,
} from "./core/host.ts";
export { profileJobs, type ProfileOptions, profileTiers } from "./bench/node_profile.ts";
export {
  CONTENTION_DIRECTIONS,
  CONTENTION_SCHEMA,
  type ContentionDirection,
  type ContentionGroup,
  type ContentionGroupDirection,
  contentionGroups,
  type ContentionOptions,
  type ContentionOutcome,
  type ContentionPattern,
  type ContentionResult,
  type ContentionTierPattern,
  type ContentionWindow,
  formatContentionTable,
  groupKey,
  mixedContentionGroups,
  runContention,
  runContentionSession,
  slowdown,
  slowdownKey,
  slowdownMatrix,
  tierLabels,
  windowOverlap,
} from "./bench/contention.ts";
export { type CleanOptions, type CleanReport, cleanScratch } from "./tiers/clean.ts";
export {
  decodeHistogram,
  encodeHistogram,
  type LatencyStats,
  latencyStats,
  newHistogram,
  PERCENTILES,
} from "./core/recorder.ts";
export {
  type DirectionResult,
  RESULT_SCHEMA,
  type ResultDocument,
  type RunResult,
  type RunStatus,
  writeResult,
} from "./schema/result.ts";
export { type RunHooks, runJob, type RunProgress } from "./bench/runner.ts";
export { runSession, type SessionOptions, type SessionOutcome } from "./bench/session.ts";
export { formatTable } from "./cli/run_table.ts";
export { formatRate, formatSize, parseDuration, parseSize } from "./core/units.ts";
export {
  FileTier,
  MemoryTier,
  NullTier,
  openTier,
  PfsTier,
  S3Tier,
  type Tier,
  type TierCapabilities,
  type TierFacts,
} from "./tiers/mod.ts";
export {
  activationBytesPerLayer,
  layerForwardFlops,
  MODEL_NAMES,
  MODEL_PRESETS,
  modelPreset,
  type ModelShape,
  parameterCount,
} from "./workloads/model.ts";
export {
  type RawTrainingSetup,
  resolveSetup,
  shardParameters,
  subgroupSizes,
  type TrainingSetup,
} from "./workloads/setup.ts";
export {
  type BarrierInput,
  bytesByPath,
  type Op,
  type OpInput,
  type OpKind,
  type PathPolicy,
  type PathRole,
  ProgramBuilder,
  type RankProgram,
  type WorkloadProgram,
} from "./workloads/ops.ts";
export type { WorkloadDefinition, WorkloadOptions, WorkloadPaths } from "./workloads/_common.ts";
export { WORKLOAD_NAMES, workloadByName, WORKLOADS } from "./workloads/registry.ts";
export {
  pathsOf,
  runWorkload,
  type RunWorkloadOptions,
  type WorkloadOutcome,
  type WorkloadProgress,
} from "./bench/workload.ts";
export type {
  IterationResult,
  PhaseResult,
  WorkloadResult,
  WorkloadSummary,
} from "./schema/workload.ts";
export { zeroInfinity } from "./workloads/zero_infinity.ts";
export { mlpOffload } from "./workloads/mlp_offload.ts";
export { deepOptimizerStates } from "./workloads/deep_optimizer_states.ts";
export { ssdtrain } from "./workloads/ssdtrain.ts";
export { teraio } from "./workloads/teraio.ts";
export { datastates } from "./workloads/datastates.ts";
export {
  loadProfile,
  lookupSlowdown,
  type Profile,
  PROFILE_SCHEMA,
  ProfileError,
  type ProfileTier,
  readProfile,
  slowdownLookup,
  slowdownOf,
  togetherOf,
} from "./solver/profile.ts";
export {
  placementOptions,
  PLAN_SCHEMA,
  type PlanDocument,
  type PlannedPath,
  type Prediction,
} from "./solver/plan.ts";
export { predictPhase } from "./solver/model.ts";
export { type RateOf, simulate, type SimulatedPhase, type Simulation } from "./solver/simulate.ts";
export { type Solution, solve, type SolveInput, type SolverTier } from "./solver/solve.ts";
export { makePlan, type PlanOptions } from "./solver/planner.ts";
export {
  DEEPSPEED_VERSIONS,
  deepspeedConfig,
  type DeepSpeedExport,
  type MlpOffloadExport,
  mlpOffloadSettings,
} from "./solver/export.ts";
export { formatPlan } from "./cli/plan_table.ts";
export {
  minScaleOf,
  optionsOfPlan,
  replayPlan,
  type ReplayResult,
  setupOfPlan,
} from "./bench/replay.ts";
export { type ActivationPlan, planActivations } from "./solver/activations.ts";
export {
  compareDocuments,
  type CompareFigure,
  type CompareInput,
  type CompareOptions,
  type CompareRow,
  type Comparison,
  formatComparison,
  MATCH_MODES,
  type MatchMode,
  NOISE_CRITERION,
  runCompare,
  type Verdict,
  verdict,
} from "./report/compare.ts";
export { buildReport, type ReportFiles, writeReport } from "./report/report.ts";
export { type ChartSource, type ChartSpec, reportCharts } from "./report/_charts.ts";
export { type ReportTable, reportTables } from "./report/tables.ts";
