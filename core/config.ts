/**
 * Job options in fio's vocabulary, validated once at the edge.
 *
 * Text from the command line (or a config file) goes through
 * {@linkcode parseJobOptions}; everything after that works on a
 * {@linkcode JobOptions} whose every value has been checked, so errors name
 * the field and its allowed values before any I/O happens.
 *
 * @module
 */

import { z } from "zod";
import { ConfigError } from "./errors.ts";
import { withoutUserInfo } from "./secrets.ts";
import { MIN_VERIFY_BS } from "./verify.ts";
import { badSize, formatSize, parseDuration, parseSize } from "./units.ts";
import { describeZodIssue, type ZodIssue } from "./zod_issue.ts";
import { RATE_PROCESSES, type RateOptions } from "./rate.ts";
import type { FioJobExtras } from "./fio_job.ts";
import { type CpuAffinity, CPUS_POLICIES, cpusOfMask, parseCpuList } from "./cpu_affinity.ts";

/** Access patterns, named as fio names them. */
export const RW_MODES = ["read", "write", "randread", "randwrite", "rw", "randrw"] as const;
/** One of {@linkcode RW_MODES}. */
export type RwMode = typeof RW_MODES[number];

/** I/O engines for file-backed tiers, named as fio names them. */
export const ENGINES = ["psync", "libaio", "io_uring"] as const;
/** One of {@linkcode ENGINES}. */
export type Engine = typeof ENGINES[number];

/** The io_uring engine's options, as fio names them. */
export interface IoUringOptions {
  /** fio's fixedbufs: the slots' buffers are registered (READ_FIXED/WRITE_FIXED). */
  readonly fixedbufs: boolean;
  /** fio's registerfiles: the job's files are registered (IOSQE_FIXED_FILE). */
  readonly registerfiles: boolean;
  /** fio's sqthread_poll: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL). */
  readonly sqthreadPoll: boolean;
}

/**
 * The engine a job got when `--iodepth` was above 1 on a file-backed tier
 * and no `--engine` was named: io_uring where the kernel allows it, else
 * libaio, and why.
 */
export interface EngineChoice {
  readonly chosen: "io_uring" | "libaio";
  /** One line: the iodepth and what the kernel said, e.g. "--iodepth 8 without --engine: io_uring is available". */
  readonly why: string;
}

/** Tier kinds this build knows. */
export const TIER_KINDS = ["null", "memory", "file", "pfs", "s3"] as const;
/** One of {@linkcode TIER_KINDS}. */
export type TierKind = typeof TIER_KINDS[number];

/** Where a run does its I/O: `file:DIR`, `memory:DIR`, `pfs:DIR`, `s3://BUCKET/PREFIX` or `null:`. */
export interface TierSpec {
  readonly kind: TierKind;
  /**
   * The directory under which a scratch directory is made; for s3,
   * `BUCKET/PREFIX` under which a scratch prefix is made; `""` for null.
   */
  readonly path: string;
}

/** The default directory of the memory tier. */
export const DEFAULT_MEMORY_DIR = "/dev/shm";

const TIER_FORMS =
  "null:, memory:[DIR] (default /dev/shm), file:DIR, pfs:DIR, s3://BUCKET[/PREFIX]";

/**
 * Parses `--tier` text: `file:DIR`, `memory:DIR`, `memory:` or `null:`.
 *
 * @example
 * ```ts
 * import { parseTierSpec } from "./config.ts";
 * console.assert(parseTierSpec("memory:").path === "/dev/shm");
 * console.assert(parseTierSpec("file:/data").kind === "file");
 * ```
 */
export function parseTierSpec(text: string): TierSpec {
  if (text.startsWith("s3://")) {
    const path = text.slice(5).replace(/\/+$/, "");
    if (!path || path.startsWith("/")) {
      throw new ConfigError("tier", `"${text}" names no bucket`, TIER_FORMS);
    }
    return { kind: "s3", path };
  }
  const colon = text.indexOf(":");
  const kind = colon < 0 ? text : text.slice(0, colon);
  const path = colon < 0 ? "" : text.slice(colon + 1);
  switch (kind) {
    case "null":
      return { kind, path: "" };
    case "memory":
      return { kind, path: path || DEFAULT_MEMORY_DIR };
    case "file":
    case "pfs":
      if (!path) throw new ConfigError("tier", `"${text}" names no directory`, TIER_FORMS);
      return { kind, path };
    default:
      throw new ConfigError("tier", `unknown tier "${text}"`, TIER_FORMS);
  }
}

/** Formats a {@linkcode TierSpec} back into `--tier` text. */
export function formatTierSpec(spec: TierSpec): string {
  return spec.kind === "s3" ? `s3://${spec.path}` : `${spec.kind}:${spec.path}`;
}

/** A fully resolved, validated job: what one run does on one tier. */
export interface JobOptions {
  /** A label for tables and results. */
  readonly name: string;
  readonly tier: TierSpec;
  readonly rw: RwMode;
  /** Percentage of reads for `randrw` (fio's rwmixread). */
  readonly rwmixread: number;
  /** Block size in bytes. */
  readonly bs: number;
  /** Size of each job's file in bytes (a multiple of bs). */
  readonly size: number;
  /** Bytes each job moves when the run is not time-based (fio's io_size). */
  readonly ioSize: number;
  /** Measured time in ms; when set, jobs loop over their file until it ends (time_based). */
  readonly runtimeMs: number | undefined;
  /** Warm-up in ms before measurement starts; excluded from the results. */
  readonly rampMs: number;
  /** I/Os in flight per job. */
  readonly iodepth: number;
  /** Parallel jobs, one Worker each, one file each. */
  readonly numjobs: number;
  /** Open files with O_DIRECT. */
  readonly direct: boolean;
  readonly engine: Engine;
  /** How `engine` was chosen when none was named (`--iodepth` above 1); absent when named or psync. */
  readonly engineChoice?: EngineChoice;
  /** The io_uring engine's options (--fixedbufs, --registerfiles, --sqthread-poll); io_uring only. */
  readonly ioUring?: IoUringOptions;
  /** Seed for random offsets and the read/write mix. */
  readonly seed: number;
  /** Interval of the bandwidth time series in ms (fio's log_avg_msec). */
  readonly logAvgMsec: number;
  /** Files each job spreads its blocks over, round-robin (fio's nrfiles). */
  readonly nrfiles: number;
  /** One file set per job, or one file shared by all jobs with a region each. */
  readonly fileLayout: FileLayout;
  /** fsync every file when a job ends (fio's end_fsync); on by default for pfs. */
  readonly endFsync: boolean;
  /** Options of the s3 tier; undefined for other tiers. */
  readonly s3: S3Options | undefined;
  /**
   * An existing file that read jobs share instead of laying out their own
   * (fio's filename); never written, never deleted. Undefined normally.
   */
  readonly filename: string | undefined;
  /**
   * `filename` may be a block device (read only, never written): fio's raw
   * device reads, refused unless asked for. Absent means false.
   */
  readonly allowDevice?: boolean;
  /**
   * How long one request (an I/O, an S3 request) may take before the run
   * fails as timed out; undefined means {@linkcode DEFAULT_TIMEOUT_MS}.
   */
  readonly timeoutMs?: number;
  /**
   * Verify mode: every block written carries a header and a checksum, every
   * block read is checked (bench/verify.ts). Absent means false.
   */
  readonly verify?: boolean;
  /**
   * Open-loop rate (--rate or --rate-iops, --rate-process; core/rate.ts):
   * each job issues on a schedule and lat runs from intended starts. Absent:
   * closed loop (the next request goes when one completes).
   */
  readonly rate?: RateOptions;
  /**
   * A job from a fio job file: its files, each numjobs clone's I/O pattern
   * and the fio options that change how it runs (core/fio_job.ts). Absent
   * for a job given by options.
   */
  readonly fio?: FioJobExtras;
  /** The CPUs the job's clones run on (fio's cpus_allowed, cpumask); absent: where the OS puts them. */
  readonly affinity?: CpuAffinity;
}

/** The per-request timeout when `--timeout` is not given: 30 s. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** The shortest `--timeout` taken: below it, ordinary requests would time out. */
const MIN_TIMEOUT_MS = 100;

/**
 * `--timeout` text (seconds, or a number with ms, s, m or h) as ms; the
 * default when absent.
 *
 * @throws {ConfigError} naming --timeout: not a duration, or below 100 ms.
 *
 * @example
 * ```ts
 * import { parseTimeout } from "./config.ts";
 * console.assert(parseTimeout("2.5") === 2500 && parseTimeout(undefined) === 30_000);
 * ```
 */
export function parseTimeout(text: string | undefined): number {
  if (text === undefined) return DEFAULT_TIMEOUT_MS;
  const ms = parseDuration(text);
  if (ms === undefined) {
    throw new ConfigError(
      "timeout",
      `"${text}" is not a duration (seconds, or a number with ms, s, m or h)`,
    );
  }
  if (ms < MIN_TIMEOUT_MS) {
    throw new ConfigError("timeout", `${text} is below 100ms`, "e.g. 5, 30s, 2m");
  }
  return ms;
}

/** How jobs share files: their own (`files`), or one file with a region each (`shared`). */
export const FILE_LAYOUTS = ["files", "shared"] as const;
/** One of {@linkcode FILE_LAYOUTS}. */
export type FileLayout = typeof FILE_LAYOUTS[number];

/** Options of the s3 tier. */
export interface S3Options {
  /** Endpoint URL; undefined means from the environment (TIERBENCH_S3_ENDPOINT, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL) or AWS. */
  readonly endpoint: string | undefined;
  /** Region; undefined means from the environment (AWS_REGION) or us-east-1. */
  readonly region: string | undefined;
  /** Size of each object that read jobs GET from (ranged GETs of bs when larger than bs). */
  readonly objectSize: number;
  /** Part size of multipart uploads. */
  readonly partSize: number;
  /** Objects larger than this are written by multipart upload. */
  readonly multipartThreshold: number;
}

/** Option text as it comes from the command line; absent means default. */
export interface RawJobOptions {
  name?: string | undefined;
  tier?: string | undefined;
  rw?: string | undefined;
  rwmixread?: string | undefined;
  bs?: string | undefined;
  size?: string | undefined;
  ioSize?: string | undefined;
  runtime?: string | undefined;
  ramp?: string | undefined;
  iodepth?: string | undefined;
  numjobs?: string | undefined;
  direct?: boolean | undefined;
  engine?: string | undefined;
  fixedbufs?: boolean | undefined;
  registerfiles?: boolean | undefined;
  sqthreadPoll?: boolean | undefined;
  seed?: string | undefined;
  logAvgMsec?: string | undefined;
  nrfiles?: string | undefined;
  fileLayout?: string | undefined;
  endFsync?: boolean | undefined;
  endpoint?: string | undefined;
  region?: string | undefined;
  objectSize?: string | undefined;
  partSize?: string | undefined;
  multipartThreshold?: string | undefined;
  filename?: string | undefined;
  allowDevice?: boolean | undefined;
  timeout?: string | undefined;
  verify?: boolean | undefined;
  rate?: string | undefined;
  rateIops?: string | undefined;
  rateProcess?: string | undefined;
  /** fio's cpus_allowed: the CPUs the job's threads run on (`0,5,8-15`). */
  cpusAllowed?: string | undefined;
  /** fio's cpumask (a job file's, read already): CPUs 0-31 as bits. */
  cpumask?: number | undefined;
  /** fio's cpus_allowed_policy: shared (default) or split. */
  cpusAllowedPolicy?: string | undefined;
  /** fio's thread_number of the job's first clone (a job file's; split hands CPUs out by it); 1. */
  threadNumber?: number | undefined;
}

/** Defaults, as fio's where fio has one. */
export const DEFAULTS = {
  rw: "read",
  rwmixread: "50",
  bs: "4k",
  size: "256m",
  ramp: "0",
  iodepth: "1",
  numjobs: "1",
  engine: "psync",
  seed: "1",
  logAvgMsec: "1000",
  nrfiles: "1",
  fileLayout: "files",
  partSize: "16m",
  multipartThreshold: "64m",
  rateProcess: "linear",
  cpusAllowedPolicy: "shared",
} as const;

/** Field names as the CLI spells them, for messages. */
const FLAG: Record<string, string> = {
  ioSize: "io-size",
  logAvgMsec: "log-avg-msec",
  fileLayout: "file-layout",
  objectSize: "object-size",
  partSize: "part-size",
  multipartThreshold: "multipart-threshold",
  runtimeMs: "runtime",
  rampMs: "ramp",
  rateIops: "rate-iops",
  rateProcess: "rate-process",
  cpusAllowedPolicy: "cpus-allowed-policy",
};

const MAX_BS = 256 * 1024 ** 2;
/** S3's smallest part of a multipart upload (all parts but the last). */
const MIN_PART_SIZE = 5 * 1024 ** 2;

/** A field's issue: the value as given, what it is not. */
function badField(ctx: z.RefinementCtx, name: string, message: string): never {
  ctx.addIssue({ code: "custom", message, path: [name] });
  return z.NEVER;
}

/** A size: text with an optional suffix, or a number of bytes already read (a job file's). */
const sizeField = (name: string) =>
  z.union([z.string(), z.number()]).transform((v, ctx) => {
    const n = typeof v === "number" ? v : parseSize(v);
    if (n === undefined || !Number.isSafeInteger(n) || n <= 0) {
      return badField(
        ctx,
        name,
        badSize(v, "a size (use a number with an optional k, m, g or t suffix)"),
      );
    }
    return n;
  });

/** A duration: text (seconds, or with a unit), or a number of ms already read (a job file's). */
const durationField = (name: string) =>
  z.union([z.string(), z.number()]).transform((v, ctx) => {
    const n = typeof v === "number" ? v : parseDuration(v);
    if (n === undefined || !(n >= 0 && n <= Number.MAX_SAFE_INTEGER)) {
      const as = typeof v === "number" ? `${v}ms` : v;
      return badField(
        ctx,
        name,
        `"${as}" is not a duration (seconds, or a number with ms, s, m or h)`,
      );
    }
    return n;
  });

/** An integer from `min` to `max`: text of digits, or a number already read (a job file's). */
const intField = (name: string, min: number, max: number) =>
  z.union([z.string(), z.number()]).transform((v, ctx) => {
    const n = Number(v);
    const whole = typeof v === "number" ? Number.isInteger(n) && n >= 0 : /^\d+$/.test(v.trim());
    if (!whole || n < min || n > max) {
      return badField(ctx, name, `"${v}" is not an integer from ${min} to ${max}`);
    }
    return n;
  });

const SCHEMA = z.object({
  rw: z.enum(RW_MODES),
  rwmixread: intField("rwmixread", 0, 100),
  bs: sizeField("bs"),
  size: sizeField("size"),
  ioSize: sizeField("ioSize").optional(),
  runtime: durationField("runtime").optional(),
  ramp: durationField("ramp"),
  iodepth: intField("iodepth", 1, 4096),
  numjobs: intField("numjobs", 1, 1024),
  engine: z.enum(ENGINES),
  seed: intField("seed", 0, 2 ** 32 - 1),
  logAvgMsec: intField("logAvgMsec", 10, 3_600_000),
  nrfiles: intField("nrfiles", 1, 4096),
  fileLayout: z.enum(FILE_LAYOUTS),
  objectSize: sizeField("objectSize").optional(),
  partSize: sizeField("partSize"),
  multipartThreshold: sizeField("multipartThreshold"),
  timeout: durationField("timeout").optional(),
  rate: sizeField("rate").optional(),
  rateIops: intField("rateIops", 1, 100_000_000).optional(),
  rateProcess: z.enum(RATE_PROCESSES),
  cpusAllowedPolicy: z.enum(CPUS_POLICIES),
});

/** The first issue as a ConfigError (the custom issues quote the value themselves). */
function toConfigError(issues: readonly ZodIssue[]): ConfigError {
  const { path, problem, allowed } = describeZodIssue(issues);
  const key = String(path[0] ?? "config");
  return new ConfigError(FLAG[key] ?? key, problem, allowed);
}

/**
 * Validates option text and resolves defaults into a {@linkcode JobOptions}.
 *
 * With `chooseEngine`, a job on a file-backed tier with `iodepth` above 1
 * and no `engine` gets the engine it picks (engines/engine_choice.ts asks
 * the kernel), recorded as `engineChoice`; without it such a job is refused,
 * psync being synchronous. `iodepth` 1 without `engine` stays psync.
 *
 * @throws {ConfigError} naming the first field at fault and its allowed values.
 *
 * @example
 * ```ts
 * import { parseJobOptions } from "./config.ts";
 * const job = parseJobOptions({ tier: "memory:", rw: "randread", bs: "4k", size: "64m" });
 * console.assert(job.bs === 4096 && job.size === 64 * 1024 * 1024);
 * ```
 */
export function parseJobOptions(
  raw: RawJobOptions,
  chooseEngine?: (iodepth: number) => EngineChoice,
): JobOptions {
  return jobOptionsOf(raw, chooseEngine);
}

/** {@linkcode RawJobOptions}' fields that hold a number: bytes, ms, counts. */
type NumericField =
  | "rwmixread"
  | "bs"
  | "size"
  | "ioSize"
  | "runtime"
  | "ramp"
  | "iodepth"
  | "numjobs"
  | "seed"
  | "logAvgMsec"
  | "nrfiles"
  | "objectSize"
  | "partSize"
  | "multipartThreshold"
  | "rate"
  | "rateIops";

/**
 * Job options whose numbers may be values already read instead of text:
 * sizes in bytes, durations in ms, counts (a job file's, read as fio reads
 * them); text is read as {@linkcode parseJobOptions} reads it.
 */
export type JobValues =
  & Omit<RawJobOptions, NumericField>
  & { [K in NumericField]?: string | number | undefined };

/**
 * {@linkcode parseJobOptions} for options whose numbers may have been read
 * already: checks them and resolves defaults into a {@linkcode JobOptions},
 * with the same refusals.
 *
 * @throws {ConfigError} naming the first field at fault and its allowed values.
 *
 * @example
 * ```ts
 * import { jobOptionsOf } from "./config.ts";
 * const job = jobOptionsOf({ tier: "memory:", bs: 8192, size: "1m", ramp: 500 });
 * console.assert(job.bs === 8192 && job.size === 1024 * 1024 && job.rampMs === 500);
 * ```
 */
export function jobOptionsOf(
  raw: JobValues,
  chooseEngine?: (iodepth: number) => EngineChoice,
): JobOptions {
  if (raw.tier === undefined) {
    throw new ConfigError("tier", "is required", TIER_FORMS);
  }
  const tier = parseTierSpec(raw.tier);
  const o = readFields(raw);
  checkSizes(raw, o);
  const fileTier = tier.kind === "memory" || tier.kind === "file" || tier.kind === "pfs";
  const { engine, engineChoice } = engineFor(raw, o, fileTier, chooseEngine);
  checkFiles(raw, o, tier, fileTier);
  if (raw.verify) checkVerify(tier, { ...o, engine });
  checkRate(tier, raw);
  checkS3(raw, o, tier);
  checkBuffers(o);
  return assembleJob(raw, o, tier, engine, engineChoice);
}

/** The option fields as the schema reads them. */
type Fields = z.infer<typeof SCHEMA>;

/** The option text with its defaults, read by the schema; the first field at fault refused. */
function readFields(raw: JobValues): Fields {
  const parsed = SCHEMA.safeParse({
    rw: raw.rw ?? DEFAULTS.rw,
    rwmixread: raw.rwmixread ?? DEFAULTS.rwmixread,
    bs: raw.bs ?? DEFAULTS.bs,
    size: raw.size ?? DEFAULTS.size,
    ioSize: raw.ioSize,
    runtime: raw.runtime,
    ramp: raw.ramp ?? DEFAULTS.ramp,
    iodepth: raw.iodepth ?? DEFAULTS.iodepth,
    numjobs: raw.numjobs ?? DEFAULTS.numjobs,
    engine: raw.engine ?? DEFAULTS.engine,
    seed: raw.seed ?? DEFAULTS.seed,
    logAvgMsec: raw.logAvgMsec ?? DEFAULTS.logAvgMsec,
    nrfiles: raw.nrfiles ?? DEFAULTS.nrfiles,
    fileLayout: raw.fileLayout ?? DEFAULTS.fileLayout,
    objectSize: raw.objectSize,
    partSize: raw.partSize ?? DEFAULTS.partSize,
    multipartThreshold: raw.multipartThreshold ?? DEFAULTS.multipartThreshold,
    timeout: raw.timeout,
    rate: raw.rate,
    rateIops: raw.rateIops,
    rateProcess: raw.rateProcess ?? DEFAULTS.rateProcess,
    cpusAllowedPolicy: raw.cpusAllowedPolicy ?? DEFAULTS.cpusAllowedPolicy,
  });
  if (!parsed.success) throw toConfigError(parsed.error.issues);
  return parsed.data;
}

/** bs within bounds, size at least bs, a runtime above 0, a timeout taken. */
function checkSizes(raw: JobValues, o: Fields): void {
  if (o.bs > MAX_BS) {
    throw new ConfigError("bs", `${raw.bs} is larger than the 256m this tool allows`);
  }
  if (o.size < o.bs) {
    throw new ConfigError("size", `${raw.size} is smaller than --bs ${raw.bs}`);
  }
  if (o.runtime !== undefined && o.runtime <= 0) {
    throw new ConfigError("runtime", "must be greater than 0");
  }
  if (raw.timeout !== undefined) parseTimeout(raw.timeout);
}

/**
 * The engine named, or the one `chooseEngine` picks for an iodepth above 1
 * on a file tier; refused where psync would have to keep more than one I/O
 * in flight or an io_uring option is given to another engine.
 */
function engineFor(
  raw: JobValues,
  o: Fields,
  fileTier: boolean,
  chooseEngine: ((iodepth: number) => EngineChoice) | undefined,
): { engine: Engine; engineChoice: EngineChoice | undefined } {
  const engineChoice = raw.engine === undefined && o.iodepth > 1 && fileTier
    ? chooseEngine?.(o.iodepth)
    : undefined;
  const engine: Engine = engineChoice?.chosen ?? o.engine;
  if (o.iodepth > 1 && engine === "psync" && fileTier) {
    throw new ConfigError(
      "iodepth",
      `${o.iodepth} needs an asynchronous engine: psync keeps one I/O in flight per job ` +
        "(use --engine libaio or io_uring, or --numjobs for parallel synchronous I/O)",
    );
  }
  const uringFlag = raw.fixedbufs
    ? "fixedbufs"
    : raw.registerfiles
    ? "registerfiles"
    : raw.sqthreadPoll
    ? "sqthread-poll"
    : undefined;
  if (uringFlag !== undefined && engine !== "io_uring") {
    throw new ConfigError(uringFlag, "applies to --engine io_uring only");
  }
  return { engine, engineChoice };
}

/** What --direct, --nrfiles, --file-layout, --filename and --allow-device cannot do. */
function checkFiles(raw: JobValues, o: Fields, tier: TierSpec, fileTier: boolean): void {
  if (tier.kind === "s3" && raw.direct) {
    throw new ConfigError(
      "direct",
      "has no meaning for an s3 tier (objects have no page cache here)",
    );
  }
  if (o.nrfiles > 1 && o.fileLayout === "shared") {
    throw new ConfigError("nrfiles", "a shared file layout uses one file: drop --nrfiles");
  }
  if (!fileTier && (o.nrfiles > 1 || o.fileLayout !== "files")) {
    throw new ConfigError(
      o.nrfiles > 1 ? "nrfiles" : "file-layout",
      `applies to file tiers only, not ${tier.kind}`,
    );
  }
  if (raw.filename !== undefined) checkFilename(o, tier, fileTier);
  if (raw.allowDevice && raw.filename === undefined) {
    throw new ConfigError(
      "allow-device",
      "permits only reading a block device named by --filename; tierbench never writes a device",
      "--filename DEVICE with --rw read or randread",
    );
  }
}

/** What an existing file (--filename) cannot be used for. */
function checkFilename(o: Fields, tier: TierSpec, fileTier: boolean): void {
  if (!fileTier) {
    throw new ConfigError("filename", `applies to file tiers only, not ${tier.kind}`);
  }
  if (o.rw !== "read" && o.rw !== "randread") {
    throw new ConfigError(
      "filename",
      "an existing file is only read: write patterns get fresh files in the scratch directory",
      "read, randread",
    );
  }
  if (o.nrfiles > 1 || o.fileLayout !== "files") {
    throw new ConfigError("filename", "names one file: drop --nrfiles and --file-layout");
  }
}

/** An s3 tier's part size at least S3's smallest, its objects at least one block. */
function checkS3(raw: JobValues, o: Fields, tier: TierSpec): void {
  if (tier.kind === "s3" && o.partSize < MIN_PART_SIZE) {
    throw new ConfigError(
      "part-size",
      `${raw.partSize} is below 5m, the smallest part S3 accepts (all but the last part)`,
    );
  }
  const objectSize = o.objectSize ?? o.bs;
  if (tier.kind === "s3" && objectSize < o.bs) {
    throw new ConfigError("object-size", `${raw.objectSize} is smaller than --bs ${raw.bs}`);
  }
}

/**
 * Every job holds iodepth buffers of bs: a grid point or a run beyond half
 * of this machine's memory would be killed by the kernel halfway instead of
 * refused here.
 */
function checkBuffers(o: Fields): void {
  const buffers = o.bs * o.iodepth * o.numjobs;
  const memory = Deno.systemMemoryInfo().total;
  if (buffers > memory / 2) {
    throw new ConfigError(
      "iodepth",
      `bs × iodepth × numjobs = ${formatSize(buffers)} of I/O buffers, more than half of this ` +
        `machine's ${formatSize(memory)} of memory`,
      "a smaller --bs, --iodepth or --numjobs",
    );
  }
}

/** The checked fields as a {@linkcode JobOptions}: sizes in whole blocks, defaults resolved. */
function assembleJob(
  raw: JobValues,
  o: Fields,
  tier: TierSpec,
  engine: Engine,
  engineChoice: EngineChoice | undefined,
): JobOptions {
  const size = o.size - (o.size % o.bs);
  const ioSize = o.ioSize ?? size;
  if (ioSize < o.bs) {
    throw new ConfigError("io-size", `${raw.ioSize} is smaller than --bs ${raw.bs}`);
  }
  const name = raw.name ??
    `${tier.kind}-${o.rw}-${raw.bs ?? DEFAULTS.bs}-d${o.iodepth}-j${o.numjobs}`;
  return {
    name,
    tier,
    rw: o.rw,
    rwmixread: o.rw === "randrw" || o.rw === "rw" ? o.rwmixread : (o.rw.endsWith("read") ? 100 : 0),
    bs: o.bs,
    size,
    ioSize: ioSize - (ioSize % o.bs),
    runtimeMs: o.runtime,
    rampMs: o.ramp,
    iodepth: o.iodepth,
    numjobs: o.numjobs,
    direct: raw.direct ?? false,
    engine,
    ...(engineChoice ? { engineChoice } : {}),
    ...ioUringOf(raw, engine),
    seed: o.seed,
    logAvgMsec: o.logAvgMsec,
    nrfiles: o.nrfiles,
    fileLayout: o.fileLayout,
    endFsync: raw.endFsync ?? tier.kind === "pfs",
    s3: s3Of(raw, o, tier),
    filename: raw.filename,
    ...(o.timeout === undefined ? {} : { timeoutMs: o.timeout }),
    ...(raw.allowDevice ? { allowDevice: true } : {}),
    ...(raw.verify ? { verify: true } : {}),
    ...(o.rate !== undefined
      ? { rate: { bytesPerS: o.rate, process: o.rateProcess } }
      : o.rateIops !== undefined
      ? { rate: { iops: o.rateIops, process: o.rateProcess } }
      : {}),
    ...affinityOf(raw, o),
  };
}

/**
 * The job's CPUs from cpus_allowed (or a job file's cpumask) and
 * cpus_allowed_policy; none when neither names CPUs.
 */
function affinityOf(raw: JobValues, o: Fields): { affinity?: CpuAffinity } {
  if (raw.cpusAllowed === undefined && raw.cpumask === undefined) return {};
  const field = raw.cpusAllowed === undefined ? "cpumask" : "cpus-allowed";
  try {
    const cpus = raw.cpusAllowed === undefined
      ? cpusOfMask(raw.cpumask!)
      : parseCpuList(raw.cpusAllowed);
    return {
      affinity: { cpus, policy: o.cpusAllowedPolicy, firstThread: raw.threadNumber ?? 1 },
    };
  } catch (e) {
    throw new ConfigError(field, (e as Error).message, undefined, { cause: e });
  }
}

/** The io_uring options, on the io_uring engine only. */
function ioUringOf(raw: JobValues, engine: Engine): { ioUring?: IoUringOptions } {
  if (engine !== "io_uring") return {};
  return {
    ioUring: {
      fixedbufs: raw.fixedbufs ?? false,
      registerfiles: raw.registerfiles ?? false,
      sqthreadPoll: raw.sqthreadPoll ?? false,
    },
  };
}

/** The s3 tier's options; undefined on another tier. */
function s3Of(raw: JobValues, o: Fields, tier: TierSpec): S3Options | undefined {
  if (tier.kind !== "s3") return undefined;
  const objectSize = o.objectSize ?? o.bs;
  return {
    // user information is never used (S3 signs with the credentials): never kept either
    endpoint: raw.endpoint === undefined ? undefined : withoutUserInfo(raw.endpoint),
    region: raw.region,
    objectSize: objectSize - (objectSize % o.bs),
    partSize: o.partSize,
    multipartThreshold: o.multipartThreshold,
  };
}

/** What `--rate`, `--rate-iops` and `--rate-process` cannot do together or on a tier. */
function checkRate(tier: TierSpec, raw: JobValues): void {
  if (raw.rate !== undefined && raw.rateIops !== undefined) {
    throw new ConfigError(
      "rate",
      "and --rate-iops were both given: fio then paces by rate and ignores rate_iops without " +
        "a word, so give one",
      "--rate BYTES/s or --rate-iops N",
    );
  }
  const paced = raw.rate !== undefined || raw.rateIops !== undefined;
  if (raw.rateProcess !== undefined && !paced) {
    throw new ConfigError("rate-process", "applies with --rate or --rate-iops only");
  }
  if (paced && tier.kind === "s3") {
    throw new ConfigError(
      raw.rate !== undefined ? "rate" : "rate-iops",
      "is not available on an s3 tier yet: its requests share the job's event loop, where " +
        "waiting for the next intended start would hold back the completions of those in flight",
      "null, memory, file and pfs tiers",
    );
  }
}

/** What `--verify` cannot do. */
function checkVerify(
  tier: TierSpec,
  o: { rw: RwMode; bs: number; iodepth: number; engine: Engine },
): void {
  if (tier.kind === "null") {
    throw new ConfigError("verify", "the null tier moves no data", "memory, file, pfs, s3 tiers");
  }
  if (o.bs < MIN_VERIFY_BS) {
    throw new ConfigError(
      "verify",
      `--bs ${o.bs} is smaller than a block's ${MIN_VERIFY_BS}-byte minimum (header and checksum)`,
    );
  }
  if (o.rw === "randrw" && o.iodepth > 1 && tier.kind !== "s3") {
    throw new ConfigError(
      "verify",
      `randrw with --iodepth ${o.iodepth} may read a block while it is being rewritten, which ` +
        "has no single right answer: use --iodepth 1 (--numjobs for parallelism) or separate " +
        "write and read runs",
    );
  }
}

/** Whether a job reads (so its files must hold data before it starts). */
export function jobReads(job: Pick<JobOptions, "rw">): boolean {
  return job.rw === "read" || job.rw === "randread" || job.rw === "randrw" || job.rw === "rw";
}
