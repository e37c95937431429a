/**
 * A parsed fio job file resolved into tierbench jobs, each with fio's
 * meaning: the second step of parse → resolve → run. Every option of each
 * job is read as fio reads it (core/fio_settings.ts), refused by name where
 * tierbench cannot honour it (core/fio_options.ts says why), and turned into
 * a {@linkcode JobOptions} whose `fio` part carries the files, the I/O
 * pattern of each numjobs clone and the rest (core/fio_job.ts); with the
 * job's place in the run (stonewall, new_group, wait_for, startdelay,
 * exitall).
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import { type JobOptions, jobOptionsOf, type JobValues, type RawJobOptions } from "./config.ts";
import { FIO_OPTIONS, TIERBENCH_KEYS } from "./fio_options.ts";
import {
  FioSettings,
  parseDistribution,
  parseIgnoreError,
  parsePattern,
  parseSplit,
  type SplitEntry,
} from "./fio_settings.ts";
import { jobSeeds, RAND, Taus88 } from "./fio_random.ts";
import type { Distribution, IoPattern, SizeDraw } from "./io_pattern.ts";
import type { FioData, FioErrors, FioJobExtras, FioLayout, FioLogs } from "./fio_job.ts";
import { type CloneFiles, cloneFiles, type StatFn } from "./fio_job_files.ts";
import { type JobFileEntry, JobFileError, type ParsedJobFile } from "./jobfile.ts";
import { ConfigError } from "./errors.ts";

/** A job's place in the run, as fio's stonewall, wait_for, startdelay and exitall say. */
export interface JobSchedule {
  /** Starts once every job before it has ended. */
  readonly stonewall: boolean;
  /** Starts a new reporting group (stonewall does too). */
  readonly newGroup: boolean;
  /** Starts once the job of this name has ended. */
  readonly waitFor?: string;
  /** Starts this long after the run started, ms. */
  readonly startDelayMs: number;
  /** When this job ends, these others end too (exitall with exit_what). */
  readonly exitall?: "group" | "stonewall" | "all";
  /** When this job fails, every job ends. */
  readonly exitallOnError: boolean;
  /**
   * Its reporting group (fio's groupid): a new one at a stonewall or
   * new_group after a group with jobs.
   */
  readonly groupid: number;
  /** The index, among the file's jobs, of the job `waitFor` names (the last of that name). */
  readonly waitForJob?: number;
}

/** One job of the file, resolved. */
export interface ResolvedJob {
  readonly name: string;
  /** `file:line` of its section. */
  readonly where: string;
  readonly job: JobOptions;
  readonly schedule: JobSchedule;
  /** The job section's own options as written (fio's `job options`). */
  readonly options: Record<string, string>;
}

/** A job file resolved: `[global]`'s options as written and its jobs in order. */
export interface ResolvedJobFile {
  readonly global: Record<string, string>;
  readonly jobs: readonly ResolvedJob[];
}

/** What resolving needs besides the parsed file. */
export interface ResolveContext {
  /** The directory relative names are under (fio's current directory). */
  readonly cwd: string;
  readonly stat: StatFn;
  /** Reads a file buffer_pattern names ('file'). */
  readonly readFile: (path: string) => Uint8Array;
}

/**
 * This process's view: relative names under `cwd` (default Deno.cwd()),
 * Deno.statSync, Deno.readFileSync.
 */
export function hostResolveContext(cwd?: string): ResolveContext {
  return {
    cwd: cwd ?? Deno.cwd(),
    stat: (path) => {
      try {
        const st = Deno.statSync(path);
        const kind = st.isFile
          ? "file"
          : st.isDirectory
          ? "directory"
          : st.isBlockDevice || st.isCharDevice
          ? "device"
          : "other";
        return { kind, size: st.size };
      } catch {
        return undefined;
      }
    },
    readFile: (p) => Deno.readFileSync(cwd === undefined || isAbsolute(p) ? p : join(cwd, p)),
  };
}

const refuse = (e: JobFileEntry, why: string): never => {
  throw new JobFileError(e.where, e.key, why);
};

/** The engines a job file may name, and what runs them. */
const ENGINE_OF: Record<string, "psync" | "libaio" | "io_uring" | "null"> = {
  psync: "psync",
  sync: "psync",
  vsync: "psync",
  pvsync: "psync",
  libaio: "libaio",
  io_uring: "io_uring",
  null: "null",
};

/** Options as written in a section (fio's `job options`): bare keys and grouping keys left out. */
function written(entries: readonly JobFileEntry[]): Record<string, string> {
  const skip = new Set(["stonewall", "wait_for_previous", "new_group"]);
  const out: Record<string, string> = {};
  for (const e of entries) {
    if (e.value === undefined || skip.has(e.key)) continue;
    out[e.key] = e.value;
  }
  return out;
}

/**
 * Resolves a parsed job file into tierbench jobs, fio's meaning for every option.
 *
 * @throws {JobFileError} naming the file, line and key of the first option it
 * cannot honour (or fio would refuse), and why.
 *
 * @example
 * ```ts
 * import { parseJobFileText } from "./jobfile.ts";
 * import { hostResolveContext, resolveJobFile } from "./jobfile_resolve.ts";
 * const keywords = { pagesize: 4096, mbMemory: 1024, ncpus: 2 };
 * const text = "[global]\nioengine=null\nsize=1m\n[a]\nrw=randread\n[b]\nstonewall\n";
 * const f = resolveJobFile(parseJobFileText(text, "x.fio", { keywords }), hostResolveContext());
 * console.assert(f.jobs.length === 2 && f.jobs[0]!.job.tier.kind === "null");
 * console.assert(f.jobs[1]!.schedule.stonewall);
 * ```
 */
export function resolveJobFile(parsed: ParsedJobFile, ctx: ResolveContext): ResolvedJobFile {
  const globals: JobFileEntry[] = [];
  const jobs: (Resolved & Pick<ResolvedJob, "options">)[] = [];
  let threadNumber = 1;
  const names = new Set<string>();
  for (const section of parsed.sections) {
    if (section.global) {
      globals.push(...section.entries);
      readSettings(globals, ctx); // fio checks [global] as it reads it
      continue;
    }
    const entries = [...globals, ...section.entries];
    const { settings, own } = readSettings(entries, ctx);
    const first = settings.refusals()[0];
    if (first) refuse(first.entry, first.note);
    const r = resolveJob(settings, own, section.name, section.where, threadNumber, ctx);
    jobs.push({ ...r, options: written(section.entries) });
    names.add(r.name);
    threadNumber += r.job.numjobs;
  }
  for (const j of jobs) {
    const w = j.schedule.waitFor;
    if (w === undefined) continue;
    if (w === j.name) {
      throw new JobFileError(j.where, "wait_for", `a job cannot wait for itself (${w})`);
    }
    if (!names.has(w)) throw new JobFileError(j.where, "wait_for", `no job is named ${w}`);
  }
  const global = written(globals.filter((e) => e.where !== "command line"));
  return { global, jobs: placeJobs(jobs) };
}

/** Each job's place among the others: its groupid and the index of the job it waits for. */
function placeJobs(jobs: readonly (Resolved & Pick<ResolvedJob, "options">)[]): ResolvedJob[] {
  const index = new Map(jobs.map((j, i) => [j.name, i]));
  let groupid = 0, inGroup = 0;
  return jobs.map((j) => {
    if ((j.schedule.stonewall || j.schedule.newGroup) && inGroup > 0) {
      groupid++;
      inGroup = 0;
    }
    inGroup += j.job.numjobs;
    const w = j.schedule.waitFor;
    const waitForJob = w === undefined ? {} : { waitForJob: index.get(w)! };
    return { ...j, schedule: { ...j.schedule, groupid, ...waitForJob } };
  });
}

/** fio's settings of `entries` and tierbench's own keys among them. */
function readSettings(entries: readonly JobFileEntry[], ctx: ResolveContext) {
  const own = new Map<string, JobFileEntry>();
  const fio: JobFileEntry[] = [];
  for (const e of entries) {
    if (e.key in TIERBENCH_KEYS) own.set(e.key, e);
    else fio.push(e);
  }
  return { settings: FioSettings.read(fio, ctx.readFile), own };
}

/** What resolveJob makes of one job. */
type Resolved = Omit<ResolvedJob, "options" | "schedule"> & {
  readonly schedule: ReturnType<typeof scheduleOf>;
};

/** What resolveJob has decided about a job before its files. */
interface JobDraft {
  readonly s: FioSettings;
  readonly own: ReadonlyMap<string, JobFileEntry>;
  readonly name: string;
  readonly section: string;
  readonly where: string;
  readonly engine: ReturnType<typeof engineOf>;
  readonly rw: ReturnType<typeof rwOf>;
  readonly numjobs: number;
  readonly tier: string;
  readonly timeBased: boolean;
  readonly sizes: [SizeDraw, SizeDraw];
  readonly seedOptions: ReturnType<typeof seedOptionsOf>;
  readonly seeds: readonly bigint[];
  readonly threadNumber: number;
  readonly ctx: ResolveContext;
}

function resolveJob(
  s: FioSettings,
  own: ReadonlyMap<string, JobFileEntry>,
  section: string,
  where: string,
  threadNumber: number,
  ctx: ResolveContext,
): Resolved {
  const name = s.text("name")?.trim() || section;
  const engine = engineOf(s);
  const rw = rwOf(s);
  const numjobs = s.num("numjobs");
  if (numjobs < 1) refuse(s.where("numjobs")!, `${numjobs}: a job has at least one clone`);
  checkValues(s, engine);
  const tier = tierOf(s, own, engine, ctx);
  const timeBased = s.flag("time_based") && s.num("runtime") > 0;
  const raw = rawOptionsOf(s, own, { name, tier, engine, rw, numjobs, timeBased, threadNumber });
  const sizes = sizesOf(s);
  raw.bs = Math.min(sizes[0].max, 256 * 1024 ** 2);
  const seedOptions = seedOptionsOf(s);
  const seeds = jobSeeds({ ...seedOptions, threadNumber, random: rw.random });
  if (!isFileTier(tier)) {
    onlyBasics(s, tier);
    const job = parseAt(raw, s, own, { where, name });
    return { name, where, job, schedule: scheduleOf(s, seeds) };
  }
  const draft: JobDraft = {
    s,
    own,
    name,
    section,
    where,
    engine,
    rw,
    numjobs,
    tier,
    timeBased,
    sizes,
    seedOptions,
    seeds,
    threadNumber,
    ctx,
  };
  const job = resolveOnFiles(draft, raw);
  return { name, where, job, schedule: scheduleOf(s, seeds) };
}

/** A job's options as jobOptionsOf takes them: fio's values as read, tierbench's keys as written. */
function rawOptionsOf(
  s: FioSettings,
  own: ReadonlyMap<string, JobFileEntry>,
  j: Pick<JobDraft, "name" | "tier" | "engine" | "rw" | "numjobs" | "timeBased" | "threadNumber">,
): JobValues {
  const { engine, rw } = j;
  return {
    name: j.name,
    tier: j.tier,
    rw: rw.random
      ? (rw.dirs === "mixed" ? "randrw" : `rand${rw.dirs}`)
      : rw.dirs === "mixed"
      ? "rw"
      : rw.dirs,
    rwmixread: s.num("rwmixread"),
    iodepth: engine === "libaio" || engine === "io_uring" ? s.num("iodepth") : 1,
    numjobs: j.numjobs,
    direct: s.latest("direct", "buffered") === "buffered" ? !s.flag("buffered") : s.flag("direct"),
    engine: engine === "null" ? "psync" : engine,
    ...(engine === "io_uring"
      ? {
        fixedbufs: s.flag("fixedbufs"),
        registerfiles: s.flag("registerfiles"),
        sqthreadPoll: s.flag("sqthread_poll"),
      }
      : {}),
    ramp: Math.round(s.num("ramp_time") / 1000),
    ...(j.timeBased ? { runtime: Math.max(1, Math.round(s.num("runtime") / 1000)) } : {}),
    logAvgMsec: Math.min(3_600_000, Math.max(10, s.num("log_avg_msec") || 500)),
    endFsync: s.flag("end_fsync"),
    ...rateOf(s, rw.dirs),
    ...affinityOptions(s, j.threadNumber),
    ...ownOptions(own),
  };
}

/** cpus_allowed or cpumask (the later one set, as fio's both fill one mask) and the policy. */
function affinityOptions(s: FioSettings, threadNumber: number): JobValues {
  const which = s.latest("cpus_allowed", "cpumask");
  return {
    ...(which === "cpus_allowed" ? { cpusAllowed: s.text("cpus_allowed") ?? "" } : {}),
    ...(which === "cpumask" ? { cpumask: s.num("cpumask") } : {}),
    ...(s.has("cpus_allowed_policy") ? { cpusAllowedPolicy: s.text("cpus_allowed_policy") } : {}),
    threadNumber,
  };
}

/** randseed, randrepeat and allrandrepeat, as jobSeeds and each clone's pattern take them. */
function seedOptionsOf(s: FioSettings) {
  return {
    randseed: s.num("randseed"),
    randseedSet: s.has("randseed"),
    randrepeat: s.flag("randrepeat"),
    allrandrepeat: s.flag("allrandrepeat"),
  };
}

/** Whether a tier spec names a tier with files (or null:, whose jobs are laid out as files). */
function isFileTier(tier: string): boolean {
  return tier.startsWith("file:") || tier.startsWith("memory:") || tier.startsWith("pfs:") ||
    tier === "null:";
}

/** A job on files: each clone's files and pattern, its sizes from them, and fio's extras. */
function resolveOnFiles(d: JobDraft, raw: JobValues): JobOptions {
  const { s, sizes } = d;
  const minBs = Math.min(sizes[0].min, sizes[1].min);
  const clones = cloneFiles(s, {
    cwd: d.ctx.cwd,
    stat: d.ctx.stat,
    jobname: d.section,
    where: d.where,
    diskless: d.engine === "null" || d.tier === "null:",
    numjobs: d.numjobs,
    minBs,
    fileSizeSeed: d.seeds[RAND.FILE_SIZE]!,
  });
  const total = clones[0]!.pattern.reduce((a, f) => a + f.ioSize, 0);
  if (total < minBs) {
    throw new JobFileError(
      d.where,
      "size",
      `${total} bytes is less than the smallest block (${minBs})`,
    );
  }
  raw.size = Math.max(total, sizes[0].max, sizes[1].max);
  const ioSizeSet = s.has("io_size") && s.num("io_size") > 0;
  const loopBytes = ioSizeSet ? ioSizeOf(s, total) : total;
  raw.ioSize = Math.max(loopBytes * Math.max(1, s.num("loops")), sizes[0].max);
  const job = parseAt(raw, s, d.own, d);
  return { ...job, fio: fioExtrasOf(d, clones, loopBytes, ioSizeSet) };
}

/** What a job on files carries besides its JobOptions (core/fio_job.ts). */
function fioExtrasOf(
  d: JobDraft,
  clones: readonly CloneFiles[],
  loopBytes: number,
  ioSizeSet: boolean,
): FioJobExtras {
  const { s, rw, threadNumber } = d;
  const runtimeUs = s.num("runtime");
  const patternBase = patternOf(s, rw, d.sizes, d.timeBased, loopBytes, ioSizeSet);
  return {
    options: inForce(s),
    uniqueFilename: s.flag("unique_filename"),
    clones: clones.map((c, k) => ({
      files: c.files,
      pattern: {
        ...patternBase,
        files: c.pattern,
        seeds: { ...d.seedOptions, threadNumber: threadNumber + k },
      },
    })),
    layout: layoutOf(s, rw),
    openSync: syncOf(s),
    fsyncOnClose: s.flag("fsync_on_close"),
    ...(!d.timeBased && runtimeUs > 0
      ? { runtimeCapMs: Math.max(1, Math.round(runtimeUs / 1000)) }
      : {}),
    data: dataOf(s, rw.dirs, d.ctx),
    ...errorsOf(s),
    ...logsOf(s, d.name, threadNumber, d.ctx.cwd),
    ...rateMinOf(s),
    ...flowOf(s),
    ...thinktimeOf(s),
  };
}

/** The options in force for a job as written, by fio's names (bare keys as "1"). */
function inForce(s: FioSettings): Record<string, string> {
  return Object.fromEntries(
    s.all().map((x) => [x.facts.name, x.entry.value === undefined ? "1" : x.entry.value.trim()]),
  );
}

/** What a job on an s3 tier may set: a pattern of one block size, as the s3 engine runs one. */
const S3_OPTIONS = new Set([
  "name",
  "cpus_allowed",
  "cpumask",
  "cpus_allowed_policy",
  "description",
  "rw",
  "rwmixread",
  "rwmixwrite",
  "bs",
  "size",
  "io_size",
  "runtime",
  "time_based",
  "ramp_time",
  "iodepth",
  "numjobs",
  "randseed",
  "rate",
  "rate_iops",
  "rate_process",
  "stonewall",
  "new_group",
  "wait_for",
  "startdelay",
  "kb_base",
  "ioengine",
  "log_avg_msec",
  "exitall",
  "exit_what",
  "exitall_on_error",
]); // deno-fmt-ignore

/** Refuses, on a tier without files (s3), the options only files give a meaning. */
function onlyBasics(s: FioSettings, tier: string): void {
  for (const x of s.all()) {
    if (S3_OPTIONS.has(x.facts.name) || FIO_OPTIONS[x.facts.name]?.how === "accepted") continue;
    refuse(x.entry, `applies to a job on files; this job's tier is ${tier}`);
  }
  const rw = s.text("rw") ?? "";
  if (rw.includes(":")) refuse(s.where("rw")!, `applies to a job on files; this job's tier is ${tier}`);
  const bs = [s.num("bs", 0), s.num("bs", 1)];
  if (bs[0] !== bs[1]) refuse(s.where("bs")!, `one block size on ${tier} (no R,W pair)`);
}

/** jobOptionsOf on what the job file gave, its refusal said at the key's line as written. */
function parseAt(
  raw: JobValues,
  s: FioSettings,
  own: ReadonlyMap<string, JobFileEntry>,
  at: { where: string; name: string },
): JobOptions {
  try {
    return jobOptionsOf(raw);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    const key = FIELD_KEYS[e.field] ?? e.field.replaceAll("-", "_");
    const entry = own.get(key) ?? s.where(key);
    throw new JobFileError(
      entry?.where ?? `${at.where} [${at.name}]`,
      entry?.key ?? key,
      quotingWritten(e.message.replace(/^--[^:]+: /, ""), entry?.value?.trim()),
      { cause: e },
    );
  }
}

/**
 * `message` with the value it quotes first replaced by what the job file's
 * line wrote, where that holds no such text: the job file's numbers reach
 * the options already read (`rate=8192t` as 9007199254740992 bytes), and a
 * refusal names the value as the user spelled it.
 */
function quotingWritten(message: string, written: string | undefined): string {
  const quoted = /^"([^"]*)"/.exec(message);
  if (!quoted || !written || written.includes(quoted[1]!)) return message;
  return `"${written}"${message.slice(quoted[0].length)}`;
}

/**
 * tierbench's field names (as ConfigError says them) → the job file's key,
 * where it is not the field with `_` for `-` (`io-size` → `io_size`).
 */
const FIELD_KEYS: Record<string, string> = {
  ramp: "ramp_time",
  engine: "ioengine",
  seed: "randseed",
  timeout: "request_timeout",
};

/** tierbench's own keys of a job file, as parseJobOptions takes them. */
function ownOptions(own: ReadonlyMap<string, JobFileEntry>): RawJobOptions {
  const v = (k: string) => {
    const e = own.get(k);
    if (!e) return undefined;
    if (!e.value) refuse(e, "needs a value");
    return e.value!.trim();
  };
  const out: RawJobOptions = {};
  const set = (field: keyof RawJobOptions, key: string) => {
    const x = v(key);
    if (x !== undefined) (out as Record<string, unknown>)[field] = x;
  };
  set("fileLayout", "file_layout");
  set("timeout", "request_timeout");
  set("endpoint", "endpoint");
  set("region", "region");
  set("objectSize", "object_size");
  set("partSize", "part_size");
  set("multipartThreshold", "multipart_threshold");
  return out;
}

function engineOf(s: FioSettings): "psync" | "libaio" | "io_uring" | "null" {
  const text = (s.text("ioengine") ?? "psync").trim();
  const e = ENGINE_OF[text];
  if (e) return e;
  const entry = s.where("ioengine")!;
  return refuse(
    entry,
    `${text} is not an engine tierbench has (it has psync, sync and vsync and pvsync as psync, ` +
      "libaio, io_uring, null)",
  );
}

/** rw's direction, randomness and `:N` suffix (str_rw_cb). */
function rwOf(s: FioSettings) {
  const word = s.word("rw");
  const text = s.text("rw") ?? word;
  if (word.includes("trim")) {
    refuse(
      s.where("rw")!,
      `${word}: trim is a device command (BLKDISCARD): fio fails on files too`,
    );
  }
  const random = word.startsWith("rand");
  const dirs: "read" | "write" | "mixed" =
    word === "rw" || word === "readwrite" || word === "randrw"
      ? "mixed"
      : word.endsWith("read")
      ? "read"
      : "write";
  const colon = text.indexOf(":");
  let seqAdd = 0, seqNr = 1;
  if (colon >= 0) {
    const post = text.slice(colon + 1).trim();
    if (random) seqNr = parseInt(post, 10) || 0;
    else seqAdd = decimalOf(post, s.kbBase);
  }
  return { dirs, random, seqAdd, seqNr };
}

function decimalOf(text: string, kbBase: number): number {
  const m = /^\s*([+-]?)(\d+)\s*([kmgtp]?)/i.exec(text);
  if (!m) return 0;
  const mult = { "": 1, k: kbBase, m: kbBase ** 2, g: kbBase ** 3, t: kbBase ** 4, p: kbBase ** 5 };
  const v = Number(m[2]) * mult[m[3]!.toLowerCase() as keyof typeof mult];
  return m[1] === "-" ? -v : v;
}

/** Values of options that tierbench supports for some values only. */
function checkValues(s: FioSettings, engine: string): void {
  const only = (name: string, ok: (s: FioSettings) => boolean) => {
    const e = s.where(name);
    if (e && !ok(s)) refuse(e, FIO_OPTIONS[name]!.note);
  };
  only("lockfile", (x) => x.word("lockfile") === "none");
  only("mem", (x) => x.word("mem") === "malloc");
  only("iomem_align", (x) => x.num("iomem_align") <= 4096);
  only("zonemode", (x) => x.word("zonemode") === "none");
  only("verify", (x) => ["0", "none"].includes(x.word("verify")));
  only("iodepth_batch", (x) => [0, 1, x.num("iodepth")].includes(x.num("iodepth_batch")));
  only("iodepth_batch_complete_min", (x) => x.num("iodepth_batch_complete_min") <= 1);
  only(
    "iodepth_batch_complete_max",
    (x) => [0, x.num("iodepth")].includes(x.num("iodepth_batch_complete_max")),
  );
  only("iodepth_low", (x) => [0, x.num("iodepth")].includes(x.num("iodepth_low")));
  only("serialize_overlap", (x) => !x.flag("serialize_overlap"));
  only(
    "file_service_type",
    (x) => ["roundrobin", "sequential", "random"].includes(x.word("file_service_type")),
  );
  if (s.num("offset_align") > 0 && s.num("offset") >= 0 && s.num("offset_increment") >= 0) {
    // fio only aligns percentage offsets: nothing to do
  }
  if (engine === "null" && s.has("filename")) {
    // fio's null engine ignores the files: so does tierbench
  }
}

/** The tier a job's files are on: tierbench's `tier` key, `directory`, or the current directory. */
function tierOf(
  s: FioSettings,
  own: ReadonlyMap<string, JobFileEntry>,
  engine: string,
  ctx: ResolveContext,
): string {
  if (engine === "null") return "null:";
  const t = own.get("tier");
  const dirText = s.text("directory");
  const dir0 = dirText === undefined ? ctx.cwd : dirText.trim().split(":")[0]!;
  const dir = isAbsolute(dir0) ? dir0 : join(ctx.cwd, dir0);
  if (!t) return `file:${dir}`;
  const v = (t.value ?? "").trim();
  if (v === "file" || v === "memory" || v === "pfs") return `${v}:${dir}`;
  if (v.includes(":") || v.startsWith("s3")) {
    if (dirText !== undefined && !v.startsWith("s3")) {
      refuse(t, `names a whole tier (${v}) and directory names another: give one`);
    }
    return v;
  }
  return refuse(
    t,
    `"${v}" is not a tier of a directory (file, memory, pfs), nor a tier spec ` +
      "(null:, memory:, s3://BUCKET/PREFIX)",
  );
}

/** The job's block sizes per direction (bs, bsrange, bssplit). */
function sizesOf(s: FioSettings): [SizeDraw, SizeDraw] {
  const split = s.has("bssplit")
    ? parseSplit(s.text("bssplit")!, s.kbBase, { absolute: false, zoned: false, max: 64 })
    : undefined;
  const ranges = s.ranges("bsrange");
  const one = (d: 0 | 1): SizeDraw => {
    const sp = split?.[d];
    if (sp && sp.length > 0) {
      const bss = sp.map((e: SplitEntry) => e.value);
      return {
        min: Math.min(...bss),
        max: Math.max(...bss),
        split: sp.map((e) => ({ bs: e.value, perc: e.perc })),
      };
    }
    const r = ranges?.[d];
    if (r) return { min: r[0], max: r[1] };
    const bs = s.num("bs", d);
    return { min: bs, max: bs };
  };
  const out: [SizeDraw, SizeDraw] = [one(0), one(1)];
  for (const d of out) {
    if (d.min <= 0) {
      refuse(s.where("bs") ?? s.where("bsrange") ?? s.where("bssplit")!, "a block size is 0");
    }
  }
  return out;
}

function ioSizeOf(s: FioSettings, total: number): number {
  const v = s.num("io_size");
  return v < 0 ? Math.floor((total * -v) / 100) : v;
}

/** The job's I/O pattern, all but its files and seeds. */
function patternOf(
  s: FioSettings,
  rw: ReturnType<typeof rwOf>,
  sizes: [SizeDraw, SizeDraw],
  timeBased: boolean,
  loopBytes: number,
  ioSizeSet: boolean,
): Omit<IoPattern, "files" | "seeds"> {
  const distribution = distributionOf(s);
  const ba = (d: 0 | 1) => s.has("ba") && rw.random ? s.num("ba", d) || sizes[d].min : sizes[d].min;
  const align: [number, number] = [ba(0), ba(1)];
  const baChanged = align[0] !== sizes[0].min || align[1] !== sizes[1].min;
  const fst = s.text("file_service_type") ?? "roundrobin";
  const colon = fst.indexOf(":");
  return {
    dirs: rw.dirs,
    random: rw.random,
    rwmix: rwmixOf(s),
    sizes,
    unaligned: s.flag("bs_unaligned"),
    seqRand: s.flag("bs_is_seq_rand"),
    align,
    randommap: !s.flag("norandommap") && distribution.kind === "random" && !baChanged,
    distribution,
    seqAdd: rw.seqAdd,
    seqNr: rw.seqNr,
    percentageRandom: [s.num("percentage_random", 0), s.num("percentage_random", 1)],
    sequencer: s.word("rw_sequencer") === "identical" ? "identical" : "sequential",
    service: {
      kind: s.word("file_service_type") as "roundrobin" | "sequential" | "random",
      nr: colon >= 0 ? parseInt(fst.slice(colon + 1), 10) || 1 : 1,
    },
    loopBytes,
    loops: Math.max(1, s.num("loops")),
    ioSizeSet,
    numberIos: s.num("number_ios"),
    timeBased,
    syncEvery: [s.num("fsync"), s.num("fdatasync")],
  };
}

/** rwmixread and rwmixwrite, the one set last winning (str_rwmix_*_cb). */
function rwmixOf(s: FioSettings): [number, number] {
  if (s.latest("rwmixread", "rwmixwrite") === "rwmixwrite") {
    const v = s.num("rwmixwrite");
    return [100 - v, v];
  }
  const v = s.num("rwmixread");
  return [v, 100 - v];
}

function distributionOf(s: FioSettings): Distribution {
  const text = s.text("random_distribution");
  if (text === undefined) return { kind: "random" };
  const d = parseDistribution(text, s.kbBase);
  switch (d.kind) {
    case "random":
      return d;
    case "zipf":
      return { kind: "zipf", theta: d.value, center: d.center };
    case "pareto":
      return { kind: "pareto", h: d.value, center: d.center };
    case "normal":
      return { kind: "normal", dev: d.value, center: d.center };
    default:
      return {
        kind: d.kind,
        zones: [0, 1].map((i) =>
          (d.zones[i] ?? []).map((z) => ({ access: z.value, size: z.perc }))
        ),
      };
  }
}

function rateOf(s: FioSettings, dirs: string): JobValues {
  const rate = [s.num("rate", 0), s.num("rate", 1)];
  const iops = [s.num("rate_iops", 0), s.num("rate_iops", 1)];
  const any = rate.some((x) => x > 0) || iops.some((x) => x > 0);
  if (!any) return {};
  if (rate.some((x) => x > 0) && iops.some((x) => x > 0)) {
    refuse(s.where("rate_iops")!, "rate and rate_iops are mutually exclusive (fio refuses it too)");
  }
  const d = dirs === "read" ? 0 : dirs === "write" ? 1 : -1;
  const key = rate.some((x) => x > 0) ? "rate" : "rate_iops";
  const sizes = sizesOf(s);
  if (key === "rate" && sizes.some((z) => z.min !== z.max)) {
    refuse(
      s.where("rate")!,
      "a byte rate with block sizes that vary (bsrange, bssplit): fio spaces each I/O by its " +
        "own size, tierbench by one: give rate_iops, or one block size",
    );
  }
  if (d < 0) {
    refuse(
      s.where(key)!,
      "a mixed job's rate paces each direction on its own schedule in fio; tierbench paces " +
        "a job as a whole: not available for rw/randrw jobs yet",
    );
  }
  const process = s.word("rate_process");
  if (key === "rate") return { rate: rate[d], rateProcess: process };
  return { rateIops: iops[d], rateProcess: process };
}

function layoutOf(s: FioSettings, rw: ReturnType<typeof rwOf>): FioLayout {
  const fadvise = s.word("fadvise_hint");
  const fallocate = s.word("fallocate");
  return {
    writeData: rw.dirs !== "write" || s.flag("overwrite"),
    fallocate: fallocate === "0"
      ? "none"
      : fallocate === "1"
      ? "native"
      : fallocate as FioLayout["fallocate"],
    createFsync: s.flag("create_fsync"),
    allowCreate: s.flag("allow_file_create"),
    invalidate: s.flag("invalidate") && !s.flag("pre_read"),
    preRead: s.flag("pre_read"),
    fadvise: fadvise === "0"
      ? "none"
      : fadvise === "1"
      ? (rw.random ? "random" : "sequential")
      : fadvise === "random"
      ? "random"
      : "sequential",
    createOnly: s.flag("create_only"),
    unlink: s.flag("unlink"),
  };
}

function syncOf(s: FioSettings): "none" | "sync" | "dsync" {
  const w = s.word("sync");
  return w === "1" || w === "sync" ? "sync" : w === "dsync" ? "dsync" : "none";
}

function dataOf(s: FioSettings, dirs: string, ctx: ResolveContext): FioData {
  const pattern = s.has("buffer_pattern")
    ? [...parsePattern(s.text("buffer_pattern")!.trim(), ctx.readFile)]
    : undefined;
  let compress = s.num("buffer_compress_percentage");
  let zero = s.flag("zero_buffers");
  let refill = s.flag("refill_buffers");
  if (compress === 100) {
    zero = true;
    compress = 0;
  } else if (compress > 0 && !s.has("refill_buffers")) refill = true;
  if (pattern) refill = compress > 0 || dirs !== "write";
  return {
    ...(pattern ? { pattern } : {}),
    zero: pattern ? false : zero,
    refill,
    scramble: pattern ? false : s.flag("scramble_buffers"),
    compressPercentage: compress,
    compressChunk: s.num("buffer_compress_chunk"),
    dedupePercentage: s.num("dedupe_percentage"),
    dedupeMode: s.word("dedupe_mode") === "working_set" ? "working_set" : "repeat",
    dedupeWorkingSetPercentage: s.num("dedupe_working_set_percentage"),
    dedupeGlobal: s.flag("dedupe_global"),
  };
}

/** fio's errors a job goes on after without ignore_error: EIO and EILSEQ (td_error.c). */
const NON_FATAL = [5, 84];

function errorsOf(s: FioSettings): { errors?: FioErrors } {
  const word = s.word("continue_on_error");
  const ignore = s.has("ignore_error") ? parseIgnoreError(s.text("ignore_error")!) : [];
  const all = word === "all" || word === "1";
  // ignore_error's list for a kind turns continue_on_error on for it (ignore_error_type)
  const read = all || word === "read" || word === "io" || (ignore[0]?.length ?? 0) > 0;
  const write = all || word === "write" || word === "io" || (ignore[1]?.length ?? 0) > 0;
  if (!read && !write) return {};
  const list = (l: number[] | undefined) => (l && l.length > 0 ? l : NON_FATAL);
  return { errors: { read, write, ignoreRead: list(ignore[0]), ignoreWrite: list(ignore[1]) } };
}

function logsOf(
  s: FioSettings,
  name: string,
  threadNumber: number,
  cwd: string,
): { logs?: FioLogs } {
  // a log's name: its option's value, or the job's name; relative to the current directory
  const prefix = (key: string) => {
    if (!s.has(key)) return undefined;
    const v = s.text(key)?.trim() || name;
    return isAbsolute(v) ? v : join(cwd, v);
  };
  const bw = prefix("write_bw_log"), iops = prefix("write_iops_log"), lat = prefix("write_lat_log");
  if (bw === undefined && iops === undefined && lat === undefined) return {};
  return {
    logs: {
      ...(bw !== undefined ? { bw } : {}),
      ...(iops !== undefined ? { iops } : {}),
      ...(lat !== undefined ? { lat } : {}),
      avgMsec: s.num("log_avg_msec"),
      perJob: s.flag("per_job_logs"),
      offset: s.flag("log_offset"),
      max: s.flag("log_max_value"),
      threadNumber,
    },
  };
}

function rateMinOf(s: FioSettings) {
  const bytes: [number, number] = [s.num("rate_min", 0), s.num("rate_min", 1)];
  const iops: [number, number] = [s.num("rate_iops_min", 0), s.num("rate_iops_min", 1)];
  if (!bytes.some((x) => x > 0) && !iops.some((x) => x > 0)) return {};
  return { rateMin: { bytes, iops, cycleMs: s.num("rate_cycle") } };
}

function flowOf(s: FioSettings) {
  if (!s.num("flow")) return {};
  return { flow: { id: s.num("flow_id"), weight: s.num("flow"), sleepUs: s.num("flow_sleep") } };
}

function thinktimeOf(s: FioSettings) {
  const us = s.num("thinktime");
  if (!us) return {};
  return {
    thinktime: {
      us,
      spinUs: Math.min(us, s.num("thinktime_spin")),
      blocks: Math.max(1, s.num("thinktime_blocks")),
      count: s.word("thinktime_blocks_type") === "issue" ? "issue" as const : "complete" as const,
      ignoreForRate: s.flag("rate_ignore_thinktime"),
    },
  };
}

/** A job's schedule as its own options say it; its place among the others comes after. */
function scheduleOf(
  s: FioSettings,
  seeds: readonly bigint[],
): Omit<JobSchedule, "groupid" | "waitForJob"> {
  const lo = s.num("startdelay", 0), hi = s.num("startdelay", 1);
  const delayUs = hi > lo ? new Taus88(seeds[RAND.START_DELAY]!).between(lo, hi) : lo;
  const exitall = s.flag("exitall");
  const what = s.word("exit_what");
  const waitFor = s.text("wait_for")?.trim();
  return {
    stonewall: s.flag("stonewall"),
    newGroup: s.flag("new_group"),
    ...(waitFor ? { waitFor } : {}),
    startDelayMs: Math.round(delayUs / 1000),
    ...(exitall
      ? { exitall: (what === "all" || what === "stonewall" ? what : "group") as "group" }
      : {}),
    exitallOnError: s.flag("exitall_on_error"),
  };
}
