/**
 * fio job files (`tierbench run JOB.fio`): fio's ini syntax, the subset of
 * fio's keys tierbench supports, and fio's rules for which jobs run together.
 *
 * - `[global]` sets defaults for the jobs after it (a later `[global]` adds to
 *   them for the jobs after that one); every other `[section]` is a job.
 * - `key=value` or a bare `key` (a flag, as `key=1`); a later key replaces an
 *   earlier one; lines starting with `;` or `#` are comments.
 * - Jobs run together until a job with `stonewall` (or `wait_for_previous`):
 *   it starts once every job before it has ended. `stonewall` and
 *   `new_group` start a new reporting group (fio's `groupid`).
 * - A key tierbench does not support is refused by name with its line, never
 *   ignored; docs/jobfiles.md lists the supported keys.
 *
 * @module
 */

import { ConfigError } from "./errors.ts";
import type { RawJobOptions } from "./config.ts";

/**
 * A job file could not be used: says the file, line and key (none for a
 * line that is not one: its text is not echoed). Exit status 2 like any
 * ConfigError.
 */
export class JobFileError extends ConfigError {
  override name = "JobFileError";
  constructor(where: string, key: string, problem: string, options?: ErrorOptions) {
    super(key, problem, undefined, options);
    this.message = key === "" ? `${where}: ${problem}` : `${where}: ${key}: ${problem}`;
  }
}

/** One `key=value` (or bare key) as written, with its line. */
export interface JobFileEntry {
  readonly key: string;
  /** `undefined` for a bare key. */
  readonly value: string | undefined;
  readonly line: number;
}

/** One job section: its name, line, and entries (globals before it first). */
export interface JobFileSection {
  readonly name: string;
  readonly line: number;
  /** The global entries in force at this job, then the job's own. */
  readonly globals: readonly JobFileEntry[];
  readonly entries: readonly JobFileEntry[];
}

/** A parsed job file. */
export interface ParsedJobFile {
  readonly global: readonly JobFileEntry[];
  readonly jobs: readonly JobFileSection[];
}

/**
 * Parses fio's ini syntax: sections, `key=value`, bare keys, comments.
 *
 * @throws {JobFileError} for a line that is none of these, or entries before any section.
 *
 * @example
 * ```ts
 * import { parseJobFileText } from "./jobfile.ts";
 * const f = parseJobFileText("[global]\nbs=4k\n; comment\n[a]\nrw=read\nstonewall\n", "x.fio");
 * console.assert(f.jobs[0]!.entries.length === 2 && f.jobs[0]!.globals[0]!.value === "4k");
 * ```
 */
export function parseJobFileText(text: string, file: string): ParsedJobFile {
  const global: JobFileEntry[] = [];
  const jobs: { name: string; line: number; globals: JobFileEntry[]; entries: JobFileEntry[] }[] =
    [];
  let current: JobFileEntry[] | undefined;
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = i + 1;
    const t = raw.trim();
    if (t === "" || t.startsWith(";") || t.startsWith("#")) continue;
    const section = /^\[([^\]]+)\]$/.exec(t);
    if (section) {
      const name = section[1]!.trim();
      if (name === "global") current = global;
      else {
        const job = { name, line, globals: [...global], entries: [] as JobFileEntry[] };
        jobs.push(job);
        current = job.entries;
      }
      continue;
    }
    const eq = t.indexOf("=");
    const key = (eq < 0 ? t : t.slice(0, eq)).trim();
    const value = eq < 0 ? undefined : t.slice(eq + 1).trim();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      // not quoted: a file given by mistake may hold anything (keys, tokens)
      throw new JobFileError(`${file}:${line}`, "", "is neither key=value nor a [section] line");
    }
    if (current === undefined) {
      throw new JobFileError(`${file}:${line}`, key, "comes before any [section]");
    }
    current.push({ key, value, line });
  }
  if (jobs.length === 0) {
    throw new JobFileError(file, "jobs", "the file has no job section (only [global])");
  }
  return { global, jobs };
}

/** A job of the file, resolved to tierbench's options. */
export interface FileJob {
  readonly name: string;
  /** tierbench's options, as text, for parseJobOptions(). */
  readonly raw: RawJobOptions;
  /** The job section's own options as written (fio's `job options`). */
  readonly options: Record<string, string>;
  /** Jobs with the same `run` group run together; groups run one after another. */
  readonly run: number;
  /** fio's reporting group (`groupid`): a new one at each stonewall or new_group. */
  readonly groupid: number;
  /** Where each tierbench field came from, for messages: field → "file:line" and fio key. */
  readonly origin: Readonly<Record<string, { where: string; key: string }>>;
  /** The section's place, for messages without a key. */
  readonly where: string;
}

/** A job file resolved: `[global]`'s options as written and its jobs. */
export interface JobFile {
  readonly global: Record<string, string>;
  readonly jobs: readonly FileJob[];
}

/** How one supported key maps to tierbench's options. */
type Mapper = (value: string | undefined, into: Partial<Record<string, unknown>>) => void;

function flag(key: string, value: string | undefined): boolean {
  if (value === undefined || value === "1" || value === "true") return true;
  if (value === "0" || value === "false") return false;
  throw new RangeError(`${key}=${value}: a flag is 0 or 1 (or the bare key)`);
}

function text(key: string, value: string | undefined): string {
  if (value === undefined || value === "") throw new RangeError(`${key} needs a value`);
  return value;
}

/** tierbench field each fio key sets (for messages), and how. */
const KEYS: Record<string, { field: string; map: Mapper }> = {
  name: { field: "name", map: (v, o) => (o.name = text("name", v)) },
  rw: { field: "rw", map: (v, o) => (o.rw = text("rw", v)) },
  readwrite: { field: "rw", map: (v, o) => (o.rw = text("readwrite", v)) },
  rwmixread: { field: "rwmixread", map: (v, o) => (o.rwmixread = text("rwmixread", v)) },
  rwmixwrite: {
    field: "rwmixread",
    map: (v, o) => {
      const w = Number(text("rwmixwrite", v));
      o.rwmixread = Number.isInteger(w) && w >= 0 && w <= 100 ? String(100 - w) : String(v);
    },
  },
  bs: { field: "bs", map: (v, o) => (o.bs = text("bs", v)) },
  blocksize: { field: "bs", map: (v, o) => (o.bs = text("blocksize", v)) },
  size: { field: "size", map: (v, o) => (o.size = text("size", v)) },
  io_size: { field: "io-size", map: (v, o) => (o.ioSize = text("io_size", v)) },
  io_limit: { field: "io-size", map: (v, o) => (o.ioSize = text("io_limit", v)) },
  runtime: { field: "runtime", map: (v, o) => (o.runtime = text("runtime", v)) },
  // its own field: on "runtime" it took over where runtime's errors point (the line after)
  time_based: { field: "time_based", map: (v, o) => (o.timeBased = flag("time_based", v)) },
  ramp_time: { field: "ramp", map: (v, o) => (o.ramp = text("ramp_time", v)) },
  iodepth: { field: "iodepth", map: (v, o) => (o.iodepth = text("iodepth", v)) },
  numjobs: { field: "numjobs", map: (v, o) => (o.numjobs = text("numjobs", v)) },
  direct: { field: "direct", map: (v, o) => (o.direct = flag("direct", v)) },
  buffered: { field: "direct", map: (v, o) => (o.direct = !flag("buffered", v)) },
  ioengine: { field: "engine", map: (v, o) => (o.engine = text("ioengine", v)) },
  fixedbufs: { field: "fixedbufs", map: (v, o) => (o.fixedbufs = flag("fixedbufs", v)) },
  registerfiles: {
    field: "registerfiles",
    map: (v, o) => (o.registerfiles = flag("registerfiles", v)),
  },
  sqthread_poll: {
    field: "sqthread-poll",
    map: (v, o) => (o.sqthreadPoll = flag("sqthread_poll", v)),
  },
  randseed: { field: "seed", map: (v, o) => (o.seed = text("randseed", v)) },
  log_avg_msec: { field: "log-avg-msec", map: (v, o) => (o.logAvgMsec = text("log_avg_msec", v)) },
  nrfiles: { field: "nrfiles", map: (v, o) => (o.nrfiles = text("nrfiles", v)) },
  rate: { field: "rate", map: (v, o) => (o.rate = text("rate", v)) },
  rate_iops: { field: "rate-iops", map: (v, o) => (o.rateIops = text("rate_iops", v)) },
  rate_process: {
    field: "rate-process",
    map: (v, o) => (o.rateProcess = text("rate_process", v)),
  },
  end_fsync: { field: "end-fsync", map: (v, o) => (o.endFsync = flag("end_fsync", v)) },
  // its own field, as time_based's: on "tier" it took over where tier='s errors point
  directory: { field: "directory", map: (v, o) => (o.directory = text("directory", v)) },
  filename: { field: "filename", map: (v, o) => (o.filename = text("filename", v)) },
  stonewall: { field: "stonewall", map: (v, o) => (o.stonewall = flag("stonewall", v)) },
  wait_for_previous: {
    field: "stonewall",
    map: (v, o) => (o.stonewall = flag("wait_for_previous", v)),
  },
  new_group: { field: "new_group", map: (v, o) => (o.newGroup = flag("new_group", v)) },
  // tierbench reports a job's numjobs together already, and runs jobs as threads (Workers)
  group_reporting: { field: "group_reporting", map: (v) => void flag("group_reporting", v) },
  thread: { field: "thread", map: (v) => void flag("thread", v) },
  description: { field: "description", map: () => {} },
  // tierbench's own keys, in the same syntax
  tier: { field: "tier", map: (v, o) => (o.tier = text("tier", v)) },
  file_layout: { field: "file-layout", map: (v, o) => (o.fileLayout = text("file_layout", v)) },
  timeout: { field: "timeout", map: (v, o) => (o.timeout = text("timeout", v)) },
  endpoint: { field: "endpoint", map: (v, o) => (o.endpoint = text("endpoint", v)) },
  region: { field: "region", map: (v, o) => (o.region = text("region", v)) },
  object_size: { field: "object-size", map: (v, o) => (o.objectSize = text("object_size", v)) },
  part_size: { field: "part-size", map: (v, o) => (o.partSize = text("part_size", v)) },
  multipart_threshold: {
    field: "multipart-threshold",
    map: (v, o) => (o.multipartThreshold = text("multipart_threshold", v)),
  },
};

/** The keys a job file may use, fio's and tierbench's own. */
export const JOB_FILE_KEYS: readonly string[] = Object.keys(KEYS);

const GROUPING_KEYS = new Set(["stonewall", "wait_for_previous", "new_group"]);

const TIER_KINDS_OF_DIRECTORY = ["file", "memory", "pfs"];

/**
 * Resolves a parsed job file into tierbench jobs: fio's keys mapped, tiers
 * from `directory` (`tier=file|memory|pfs`, default file) or `tier=SPEC`
 * (`null:`, `s3://BUCKET/PREFIX`, …), `filename` joined to `directory` when
 * relative, run groups from `stonewall` and reporting groups from
 * `new_group`.
 *
 * @throws {JobFileError} naming the file, line and key of the first key it cannot take.
 *
 * @example
 * ```ts
 * import { parseJobFileText, resolveJobFile } from "./jobfile.ts";
 * const text = "[global]\ndirectory=/tmp\nbs=4k\n[w]\nrw=write\n[r]\nstonewall\nrw=read\n";
 * const f = resolveJobFile(parseJobFileText(text, "x.fio"), "x.fio");
 * console.assert(f.jobs[0]!.raw.tier === "file:/tmp" && f.jobs[1]!.run === 1);
 * ```
 */
export function resolveJobFile(parsed: ParsedJobFile, file: string): JobFile {
  let run = -1;
  let groupid = -1;
  const jobs = parsed.jobs.map((section, i): FileJob => {
    const o: Partial<Record<string, unknown>> = {};
    const origin: Record<string, { where: string; key: string }> = {};
    for (const e of [...section.globals, ...section.entries]) {
      const where = `${file}:${e.line}`;
      const known = KEYS[e.key];
      if (!known) {
        throw new JobFileError(
          where,
          e.key,
          "is not supported by tierbench (docs/jobfiles.md lists the keys it takes)",
        );
      }
      try {
        known.map(e.value, o);
      } catch (cause) {
        throw new JobFileError(where, e.key, (cause as Error).message, { cause });
      }
      origin[known.field] = { where, key: e.key };
    }
    // a tier errors name: tier= where given, else the directory= that makes it
    if (origin.tier === undefined && origin.directory !== undefined) origin.tier = origin.directory;
    const where = `${file}:${section.line}`;
    const stonewall = o.stonewall === true;
    if (i === 0 || stonewall) run++;
    if (i === 0 || stonewall || o.newGroup === true) groupid++;
    if (o.runtime !== undefined && o.timeBased !== true) {
      const at = origin.runtime!;
      throw new JobFileError(
        at.where,
        "runtime",
        "without time_based caps a size-based job in fio, which tierbench does not do: add " +
          "time_based (loop for runtime) or drop runtime (move size/io_size bytes)",
      );
    }
    if (o.timeBased === true && o.runtime === undefined) {
      throw new JobFileError(origin.time_based!.where, "time_based", "needs runtime");
    }
    const raw: RawJobOptions = {
      name: (o.name as string | undefined) ?? section.name,
      tier: tierOf(o, origin, where),
    };
    const copy = (field: keyof RawJobOptions, key: string) => {
      if (o[key] !== undefined) (raw as Record<string, unknown>)[field] = o[key];
    };
    for (
      const k of [
        "rw",
        "rwmixread",
        "bs",
        "size",
        "ioSize",
        "runtime",
        "ramp",
        "iodepth",
        "numjobs",
        "direct",
        "engine",
        "fixedbufs",
        "registerfiles",
        "sqthreadPoll",
        "seed",
        "logAvgMsec",
        "nrfiles",
        "fileLayout",
        "endFsync",
        "endpoint",
        "region",
        "objectSize",
        "partSize",
        "multipartThreshold",
        "timeout",
        "rate",
        "rateIops",
        "rateProcess",
      ] as const
    ) copy(k, k);
    if (o.filename !== undefined) {
      const f = o.filename as string;
      const dir = o.directory as string | undefined;
      raw.filename = f.startsWith("/") || dir === undefined ? f : `${dir}/${f}`;
    }
    // fio leaves its grouping keys out of `job options`
    const options = Object.fromEntries(
      section.entries.filter((e) => !GROUPING_KEYS.has(e.key)).map((e) => [e.key, e.value ?? ""]),
    );
    return { name: raw.name!, raw, options, run, groupid, origin, where };
  });
  const global = Object.fromEntries(parsed.global.map((e) => [e.key, e.value ?? ""]));
  return { global, jobs };
}

function tierOf(
  o: Partial<Record<string, unknown>>,
  origin: Record<string, { where: string; key: string }>,
  where: string,
): string {
  const tier = o.tier as string | undefined;
  let dir = o.directory as string | undefined;
  const filename = o.filename as string | undefined;
  if (dir === undefined && filename !== undefined && filename.startsWith("/")) {
    dir = filename.slice(0, filename.lastIndexOf("/")) || "/";
  }
  if (tier !== undefined && (tier.includes(":") || tier.startsWith("s3"))) {
    if (o.directory !== undefined) {
      throw new JobFileError(
        origin.tier!.where,
        "tier",
        `names a whole tier (${tier}) and directory names another: give one`,
      );
    }
    return tier;
  }
  const kind = tier ?? "file";
  if (!TIER_KINDS_OF_DIRECTORY.includes(kind)) {
    throw new JobFileError(
      origin.tier!.where,
      "tier",
      `"${kind}" is not a tier of a directory (file, memory, pfs), nor a tier spec ` +
        "(null:, memory:, s3://BUCKET/PREFIX)",
    );
  }
  if (dir === undefined) {
    if (kind === "memory") return "memory:";
    throw new JobFileError(
      where,
      "directory",
      "the job names no directory (nor tier=SPEC): fio would use the current directory, " +
        "tierbench asks for it",
    );
  }
  return `${kind}:${dir}`;
}

/**
 * Reads and resolves a job file.
 *
 * @throws {JobFileError} as {@linkcode resolveJobFile}; a file that cannot be read as well.
 */
export async function readJobFile(path: string): Promise<JobFile> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (cause) {
    throw new JobFileError(path, "job file", (cause as Error).message, { cause });
  }
  return resolveJobFile(parseJobFileText(text, path), path);
}
