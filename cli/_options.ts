/**
 * The option groups several commands share, each defined once: where S3 is
 * (`--endpoint`, `--region`), where results go (`--output`, `--quiet`), the
 * training setup (`workload`, `plan`) and the fio-style job options of
 * `run`, `bench`, `contention` and `sweep`. A command adds a group with its
 * `add…Options()`, or one option of a group with its `…Option()` where the
 * command words it its own way (help texts stay as each command has them).
 *
 * @module
 */

import {
  type Command,
  InvalidArgumentError,
  Option,
  type OptionValues,
} from "@commander-js/extra-typings";
import type { RawTrainingSetup } from "../workloads/setup.ts";
import { ConfigError } from "../core/errors.ts";
import { withoutUserInfo } from "../core/secrets.ts";
import { OUTPUT_FORMATS, type OutputFormat } from "../schema/fio_json.ts";
import { SETUP_DEFAULTS } from "../workloads/setup.ts";
import { MODEL_NAMES } from "../workloads/model.ts";
import { CONCURRENCY_DEFAULTS } from "../bench/concurrency.ts";
import { DEFAULT_TIMEOUT_MS } from "../core/config.ts";

/**
 * An integer option's value `v`, at least `min`; else a ConfigError naming
 * `--flag`, with `allowed` as its hint.
 *
 * @example
 * ```ts
 * import { parseInteger } from "./_options.ts";
 * console.assert(parseInteger("threads", "4", 1) === 4);
 * try {
 *   parseInteger("threads", "0", 1);
 * } catch (e) {
 *   console.assert((e as Error).message === '--threads: "0" is not an integer ≥ 1');
 * }
 * ```
 */
export function parseInteger(flag: string, v: string, min: number, allowed?: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) {
    throw new ConfigError(flag, `"${v}" is not an integer ≥ ${min}`, allowed);
  }
  return n;
}

/** A default such as 1e8 as `--help` shows it ("1e8", not "100000000" or "1e+8"). */
export function exponent(n: number): string {
  return n.toExponential().replace("+", "");
}

// --- S3 ---------------------------------------------------------------------------------------

/** Help of `--endpoint` and `--region`. */
export interface S3Help {
  readonly endpoint: string;
  readonly region: string;
}

/** How most commands word the S3 options. */
export const S3_HELP: S3Help = {
  endpoint: "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, …)",
  region: "s3: region (default: $AWS_REGION, else us-east-1)",
};

/**
 * `--endpoint <url>`: the S3 endpoint, without user information from the
 * start (S3 signs with the AWS credentials; a `user:pass@` in the URL is
 * never used), so no result, log or message can hold it.
 */
export function endpointOption(help: string = S3_HELP.endpoint) {
  return new Option("--endpoint <url>", help).argParser(withoutUserInfo);
}

/** `--region <name>`: the region S3 requests are signed for. */
export function regionOption(help: string = S3_HELP.region) {
  return new Option("--region <name>", help);
}

/** Adds `--endpoint` and `--region`. */
export function addS3Options<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  help: S3Help = S3_HELP,
) {
  return cmd.addOption(endpointOption(help.endpoint)).addOption(regionOption(help.region));
}

// --- output -----------------------------------------------------------------------------------

/** How commands that write a result document word `--output`. */
export const RESULT_OUTPUT_HELP = "result JSON (default results/<host>-<run id>.json)";

/** `--output <file>`: where the document goes. */
export function outputOption(help: string = RESULT_OUTPUT_HELP) {
  return new Option("--output <file>", help);
}

/** `--quiet`: no progress line. */
export function quietOption() {
  return new Option("--quiet", "no progress line").default(false);
}

/** Adds `--output` and `--quiet`. */
export function addOutputOptions<
  A extends unknown[],
  O extends OptionValues,
  G extends OptionValues,
>(cmd: Command<A, O, G>, help: string = RESULT_OUTPUT_HELP) {
  return cmd.addOption(outputOption(help)).addOption(quietOption());
}

// --- timeout and verify ----------------------------------------------------------------------

/** How commands word `--timeout`. */
export const TIMEOUT_HELP =
  "fail the run when one request (an I/O, an S3 request with its retries) takes longer than " +
  "this; clean-up gives up after it too, naming what is left";

/** `--timeout <seconds>`: how long one request may take (default 30 s). */
export function timeoutOption(help: string = TIMEOUT_HELP) {
  return new Option("--timeout <seconds>", help).default(String(DEFAULT_TIMEOUT_MS / 1000));
}

/** `--verify`: what is written carries a pattern, what is read is checked against it. */
export function verifyOption(help: string) {
  return new Option("--verify", help).default(false);
}

/**
 * Adds `--timeout` and `--verify` (with `verifyHelp`): every command that
 * moves data has both.
 */
export function addCheckOptions<
  A extends unknown[],
  O extends OptionValues,
  G extends OptionValues,
>(cmd: Command<A, O, G>, verifyHelp: string) {
  return cmd.addOption(timeoutOption()).addOption(verifyOption(verifyHelp));
}

// --- concurrency curves ---------------------------------------------------------------------

/**
 * Adds the concurrency curves' options of `bench` and `contention`:
 * `--ranks-per-node`, `--processes`, `--concurrency-bs` and `--no-concurrency`.
 */
export function addConcurrencyOptions<
  A extends unknown[],
  O extends OptionValues,
  G extends OptionValues,
>(cmd: Command<A, O, G>) {
  return cmd
    .option(
      "--ranks-per-node <n>",
      "R: the concurrency curves measure 1, 2, … R processes at once",
      CONCURRENCY_DEFAULTS.ranksPerNode,
    )
    .option("--processes <list>", "the curves' process counts instead, e.g. 1,2,4")
    .option(
      "--concurrency-bs <list>",
      "the curves' request sizes, each at depth 8 per process (1 MiB: ZeRO-Infinity's aio " +
        "block; 2 MiB: MLP-Offload's)",
      CONCURRENCY_DEFAULTS.bs,
    )
    .option(
      "--no-concurrency",
      "skip the curves (each tier read, written and both by 1 … R processes at once)",
    );
}

// --- fio-style job options --------------------------------------------------------------------

/** `--runtime <seconds>`: the measured time. */
export function runtimeOption(help: string) {
  return new Option("--runtime <seconds>", help);
}

/** `--ramp <seconds>`: the warm-up before measuring. */
export function rampOption(help: string) {
  return new Option("--ramp <seconds>", help);
}

/** `--size <size>`: each job's file. */
export function sizeOption(help: string) {
  return new Option("--size <size>", help);
}

/** `--bs <size>`: the block size. */
export function bsOption(help: string) {
  return new Option("--bs <size>", help);
}

/** `--iodepth <n>`: I/Os in flight per job. */
export function iodepthOption(help: string) {
  return new Option("--iodepth <n>", help);
}

/** Help and default of one option. */
export type Described = readonly [help: string, defaultValue: string];

/**
 * Adds `--runtime`, `--ramp` (and fio's `--ramp_time`) and `--size`, in that
 * order, each with its help and default; {@linkcode rampOf} reads the ramp.
 */
export function addMeasureOptions<
  A extends unknown[],
  O extends OptionValues,
  G extends OptionValues,
>(
  cmd: Command<A, O, G>,
  o: { readonly runtime: Described; readonly ramp: Described; readonly size: Described },
) {
  return cmd
    .addOption(runtimeOption(o.runtime[0]).default(o.runtime[1]))
    .addOption(rampOption(o.ramp[0]).default(o.ramp[1]))
    .addOption(rampTimeOption())
    .addOption(sizeOption(o.size[0]).default(o.size[1]));
}

// --- training setup ---------------------------------------------------------------------------

/** The training setup as the options parse it; `plan` leaves those it lacks undefined. */
export interface SetupFlags {
  model: string;
  params?: string | undefined;
  scale?: string | undefined;
  iterations?: string | undefined;
  warmup?: string | undefined;
  ranksPerNode: string;
  tp: string;
  dp?: string | undefined;
  microBatch?: string | undefined;
  subgroupSize: string;
  bytesPerState: string;
  adamRate?: string | undefined;
  gpuTflops?: string | undefined;
}

/** One setup option: its help and default, and how `plan` has it (`null`: not at all). */
interface SetupOption {
  readonly flags: string;
  readonly help: string;
  readonly default?: string;
  readonly plan?: { readonly help: string; readonly default?: string } | null;
}

/** The setup options in the order `--help` lists them. */
const SETUP_OPTIONS: readonly SetupOption[] = [
  {
    flags: "--model <name>",
    help: `model preset: ${MODEL_NAMES.join(", ")}`,
    default: SETUP_DEFAULTS.model,
  },
  { flags: "--params <n>", help: "parameter count instead of the preset's (e.g. 7e10)" },
  {
    flags: "--scale <f>",
    help: "factor on every byte count and think time, in (0, 1]",
    default: "0.001",
    plan: null,
  },
  {
    flags: "--iterations <n>",
    help: "measured iterations",
    default: String(SETUP_DEFAULTS.iterations),
    plan: null,
  },
  {
    flags: "--warmup <n>",
    help: "iterations run first, left out of the summary",
    default: String(SETUP_DEFAULTS.warmup),
    plan: null,
  },
  {
    flags: "--ranks-per-node <n>",
    help: "ranks (GPUs) on the node, one Worker each",
    default: String(SETUP_DEFAULTS.ranksPerNode),
    plan: { help: "ranks (GPUs) on the node", default: String(SETUP_DEFAULTS.ranksPerNode) },
  },
  {
    flags: "--tp <n>",
    help: "tensor-parallel degree",
    default: String(SETUP_DEFAULTS.tensorParallel),
  },
  { flags: "--dp <n>", help: "data-parallel degree (default: ranks per node / tp)" },
  {
    flags: "--micro-batch <n>",
    help: "micro-batch size",
    default: String(SETUP_DEFAULTS.microBatch),
    plan: null,
  },
  {
    flags: "--subgroup-size <n>",
    help: "elements per optimizer subgroup",
    default: exponent(SETUP_DEFAULTS.subgroupSize),
  },
  {
    flags: "--bytes-per-state <n>",
    help: "bytes of each optimizer state per parameter (2 or 4)",
    default: "4",
  },
  {
    flags: "--adam-rate <n>",
    help: "CPU Adam parameters per second per rank",
    default: exponent(SETUP_DEFAULTS.adamRate),
    plan: { help: "CPU Adam parameters per second per rank (default: the profile's, else 1e9)" },
  },
  {
    flags: "--gpu-tflops <n>",
    help: "effective GPU TFLOP/s (forward/backward think time)",
    default: String(SETUP_DEFAULTS.gpuTflops),
    plan: null,
  },
];

/**
 * Adds the training setup's options: all of them for `workload`; for `plan`,
 * those of the model, its parallelism and the optimizer (no scale,
 * iterations, micro-batch or GPU, and the Adam rate from the profile).
 */
export function addSetupOptions<
  A extends unknown[],
  O extends OptionValues,
  G extends OptionValues,
>(cmd: Command<A, O, G>, use: "workload" | "plan"): Command<A, O & SetupFlags, G> {
  for (const s of SETUP_OPTIONS) {
    const as = use === "plan" && s.plan !== undefined ? s.plan : s;
    if (as === null) continue;
    const option = new Option(s.flags, as.help);
    cmd.addOption(as.default === undefined ? option : option.default(as.default));
  }
  // the table above gives SetupFlags' options; commander infers types only along a chain
  return cmd as unknown as Command<A, O & SetupFlags, G>;
}

/** The setup the options give, for resolveSetup(). */
export function setupOf(o: SetupFlags): RawTrainingSetup {
  return {
    model: o.model,
    parameters: o.params,
    scale: o.scale,
    iterations: o.iterations,
    warmup: o.warmup,
    ranksPerNode: o.ranksPerNode,
    tensorParallel: o.tp,
    dataParallel: o.dp,
    microBatch: o.microBatch,
    subgroupSize: o.subgroupSize,
    bytesPerState: o.bytesPerState,
    adamRate: o.adamRate,
    gpuTflops: o.gpuTflops,
  };
}

// --- fio's spellings ----------------------------------------------------------------------------

/**
 * `flags` as fio spells an option tierbench names `of` (`--ramp_time` for
 * `--ramp`): the same option under fio's name, said so in `--help`. The two
 * conflict when both are given.
 */
export function fioAlias<F extends string>(flags: F, of: string) {
  return new Option(flags, `fio's name for ${of}`);
}

/**
 * `--direct [0|1]`: O_DIRECT; the bare flag, or fio's `--direct=1` and
 * `--direct=0`.
 */
export function directOption(help: string) {
  return new Option("--direct [0|1]", help).argParser((v: string): boolean => {
    if (v === "1" || v === "true") return true;
    if (v === "0" || v === "false") return false;
    throw new InvalidArgumentError(`"${v}" is not 1 or 0 (fio's --direct=1, --direct=0)`);
  });
}

/** `--ramp_time <seconds>`: fio's name for `--ramp`, refused beside it. */
export function rampTimeOption() {
  return fioAlias("--ramp_time <seconds>", "--ramp").conflicts("ramp");
}

/** The ramp given as `--ramp_time` or `--ramp` (its default when neither). */
export function rampOf(o: { readonly ramp: string; readonly ramp_time?: string | undefined }) {
  return o.ramp_time ?? o.ramp;
}

/** `--ioengine <name>`: fio's name for `--engine`, with its choices, refused beside it. */
export function ioengineOption<const C extends readonly string[]>(choices: C) {
  return fioAlias("--ioengine <name>", "--engine").choices(choices).conflicts("engine");
}

/** How `--help` words `--output-format`. */
export const OUTPUT_FORMAT_HELP =
  "json: tierbench's document; fio-json: fio's --output-format=json layout; json+: " +
  "fio-json with clat_ns bins; normal: the table alone (to stdout unless --output)";

/** `--output-format normal|json|fio-json|json+` (default json). */
export function outputFormatOption(help: string = OUTPUT_FORMAT_HELP) {
  return new Option("--output-format <format>", help).choices(OUTPUT_FORMATS)
    .default("json" as const);
}

/**
 * Refuses `--output -` with `--output-format normal` (the table goes to
 * stdout already).
 *
 * @throws {ConfigError} for that pair.
 */
export function checkOutputTarget(
  o: { readonly output?: string | undefined; readonly outputFormat: OutputFormat },
): void {
  if (o.output === "-" && o.outputFormat === "normal") {
    throw new ConfigError("output", "- with --output-format normal: normal goes to stdout already");
  }
}
