/**
 * tierbench against fio on identical patterns, in the same directory, taking
 * turns: tierbench goes first in odd rounds and fio in even ones, so drift of
 * the device (caches, thermal or cloud burst limits) falls on both alike. Each
 * case reports the median over rounds of the per-round ratio tierbench/fio,
 * each tool's median figure, and whether the target is met; and beside it each
 * tool's CPU time per I/O, user and system apart — fio's job as it reports it
 * (usr_cpu and sys_cpu × job_runtime ÷ its I/Os: getrusage of the job's
 * thread from the end of the ramp), tierbench's job threads over the same
 * window — with their ratio, which must stay ≤ 1. CPU per I/O holds still
 * where throughput moves with the machine's noise. A last case checks that
 * tierbench's peak RSS stays flat however many bytes it moves. In a read
 * case both tools read the one file laid out (by fio) for that round —
 * tierbench through `--filename` — so they meet the same blocks in the same
 * cache state; in a write case each writes a fresh file. The null case runs
 * tierbench's null tier against fio's null engine: no I/O, the harness alone.
 *
 * With `--device loop` (root only) the disk cases run on an ext4 file system
 * on a loop device with direct I/O over a file on tmpfs, which the comparison
 * makes and removes: its speed is set by CPU and memory, so it holds still
 * from round to round and each harness's per-request cost shows. The loop
 * mode has its own cases, each on the loop device and again on tmpfs: 4 KiB
 * random reads at depth 1 and 32 with every engine (io_uring also with
 * fixedbufs + registerfiles), 1 MiB sequential reads and writes at depth 8
 * with libaio and io_uring; and 5 rounds by default.
 *
 * With `--control`, fio also runs in tierbench's turns (an A/A comparison of
 * fio against itself, the RSS check left out): its ratios show how far this
 * machine's noise alone moves a case's median, in the same method and the
 * same minutes, which is what a tierbench ratio below 1 is to be read against.
 *
 * ```sh
 * deno task bench:fio                          # 4 rounds, scratch under the current directory
 * deno task bench:fio --quick --dir /mnt/nvme  # 1 round of 1 s ramp + 2 s per run
 * deno task bench:fio --device loop --rounds 5 # as root: on a loop device over tmpfs
 * deno task bench:fio --device loop --control  # fio against itself: the noise floor
 * ```
 *
 * Everything it writes lies in two scratch directories it creates itself,
 * `DIR/tierbench-fio-compare-<random>` and the same under /dev/shm, both
 * removed at the end, on failure and on Ctrl-C; in loop mode DIR is the mount
 * point of the loop device, and the mount, its mount point (under the
 * temporary directory), the loop device and its backing file
 * (`/dev/shm/tierbench-fio-loop-<random>.img`) are removed the same way. Raw
 * figures go to `results/fio-compare-<time>.json`.
 *
 * Exit status: 0 every run finished (whether or not targets were met), 1 a
 * run failed, fio is missing or it was interrupted, 2 a usage error (and
 * `--device loop` when not root). Failures print one line, never a stack.
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { isAbsolute, join } from "node:path";
import { hostFacts, pathFacts } from "../../core/host.ts";
import {
  direction,
  type Figures,
  fioArgs,
  parseFioJson,
  parseTierbenchJson,
  type Pattern,
  tierbenchArgs,
  type TierbenchFigures,
  ToolOutputError,
} from "./_fio.ts";
import { parseSize } from "../../core/units.ts";
import {
  checkDir,
  ChildRunner,
  CompareError,
  cpusOption,
  decoder,
  FioMissing,
  fioVersion,
  Interrupted,
  intOption,
  lastLine,
  type Place,
  Scratch,
  UsageError,
} from "./_fio_process.ts";
import {
  blockCounts,
  LoopDevice,
  type LoopFacts,
  requestsPerIo,
  requireRoot,
} from "./_loop_device.ts";
import { type CaseDef, casesOf, type DeviceMode, metricOf } from "./_fio_cases.ts";
import {
  type CaseRound,
  caseRound,
  fmtCpu,
  fmtFigure,
  fmtMiB,
  fmtRequests,
  head,
  markdownTable,
  rows,
  type RssRound,
  summarizeCase,
  summarizeRss,
  terminalTable,
  type Tool,
  turnTaker,
} from "./_fio_summary.ts";
import { TIERBENCH_ROOT, tierbenchRunArgs } from "./_tierbench.ts";

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

// ---------------------------------------------------------------------------
// Cases

/**
 * Bytes of the loop device's backing file: the file systems holds one test
 * file at a time (two while a write case's file is being removed), plus
 * ext4's own (journal, inode tables).
 */
function loopBytes(size: number): number {
  return 2 * size + 256 * MiB;
}

/** The RSS check: memory tier, 1 MiB sequential read of a 256 MiB file. */
const RSS = { size: 256 * MiB, small: GiB, large: 8 * GiB, target: 1.1 } as const;

// ---------------------------------------------------------------------------
// Settings

/** The resolved options. */
interface Settings {
  readonly device: DeviceMode;
  /**
   * Directory of the disk cases (a scratch directory is made inside); in
   * loop mode, the tmpfs directory until the loop device is mounted.
   */
  readonly dir: string;
  /** tmpfs directory of the tmpfs and RSS cases. */
  readonly tmpfsDir: string;
  readonly rounds: number;
  readonly runtimeS: number;
  readonly rampS: number;
  /** File size of the disk cases, bytes. */
  readonly size: number;
  /** File size of the tmpfs case, bytes. */
  readonly tmpfsSize: number;
  readonly fio: string;
  readonly output: string;
  /** The cases to run (ids containing one of these); all when empty. */
  readonly cases: readonly string[];
  /** fio runs in tierbench's turns too (A/A): the ratios are the method's own noise. */
  readonly control: boolean;
  /** Both tools' job threads pinned to these CPUs (fio's cpus_allowed); absent: not pinned. */
  readonly cpusAllowed?: string;
}

/** Raw option text, as commander hands it over. */
interface RawOptions {
  device: string;
  dir?: string | undefined;
  tmpfsDir: string;
  rounds?: string | undefined;
  runtime?: string | undefined;
  ramp?: string | undefined;
  size: string;
  tmpfsSize: string;
  quick: boolean;
  fio: string;
  output?: string | undefined;
  cases?: string | undefined;
  control: boolean;
  cpusAllowed?: string | undefined;
}

/** Where the user stood when they typed the command (`deno task` changes cwd). */
function userCwd(): string {
  return Deno.env.get("INIT_CWD") ?? Deno.cwd();
}

function resolvePath(p: string): string {
  return isAbsolute(p) ? p : join(userCwd(), p);
}

function sizeOption(flag: string, text: string): number {
  const n = parseSize(text);
  if (n === undefined || n < MiB || n % MiB !== 0) {
    throw new UsageError(`--${flag}: "${text}" is not a whole number of MiB (e.g. 512m, 1g)`);
  }
  return n;
}

/** A sortable UTC time for file names: `20250101T120000Z`. */
function fileTime(d: Date): string {
  return d.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

function deviceOption(text: string): DeviceMode {
  if (text !== "disk" && text !== "loop") {
    throw new UsageError(`--device: "${text}" is neither disk nor loop`);
  }
  return text;
}

function resolveSettings(o: RawOptions, now: Date): Settings {
  const device = deviceOption(o.device);
  if (device === "loop" && o.dir !== undefined) {
    throw new UsageError("--dir: not with --device loop (the loop device is the directory)");
  }
  const tmpfsDir = resolvePath(o.tmpfsDir);
  const cases = (o.cases ?? "").split(",").map((x) => x.trim()).filter((x) => x !== "");
  const ids = casesOf(device).map((c) => c.id);
  for (const x of cases) {
    if (!ids.some((id) => id.includes(x))) {
      throw new UsageError(
        `--cases: "${x}" names no case of --device ${device} (${ids.join(", ")})`,
      );
    }
  }
  return {
    cases,
    control: o.control,
    ...cpusOption(o.cpusAllowed),
    device,
    dir: device === "loop" ? tmpfsDir : resolvePath(o.dir ?? "."),
    tmpfsDir,
    rounds: intOption(
      "rounds",
      o.rounds ?? (o.quick ? "1" : device === "loop" ? "5" : "4"),
      1,
      99,
    ),
    runtimeS: intOption("runtime", o.runtime ?? (o.quick ? "2" : "5"), 1, 3600),
    rampS: intOption("ramp", o.ramp ?? "1", 0, 3600),
    size: sizeOption("size", o.size),
    tmpfsSize: sizeOption("tmpfs-size", o.tmpfsSize),
    fio: o.fio,
    output: o.output
      ? resolvePath(o.output)
      : join(userCwd(), "results", `fio-compare-${fileTime(now)}.json`),
  };
}

/** What the loop needs besides the settings. */
interface Context {
  readonly settings: Settings;
  readonly scratch: Scratch;
  readonly runner: ChildRunner;
  /** The loop device (`/dev/loopN`) the disk cases run on, in loop mode. */
  readonly loopDevice?: string | undefined;
}

function patternOf(c: CaseDef, s: Settings): Pattern {
  return {
    ...c.pattern,
    size: c.place === "disk" ? s.size : s.tmpfsSize,
    runtimeS: s.runtimeS,
    rampS: s.rampS,
    ...(s.cpusAllowed === undefined ? {} : { cpusAllowed: s.cpusAllowed }),
  };
}

function tierSpec(c: CaseDef, scratch: Scratch): string {
  if (c.place === "null") return "null:";
  return `${c.place === "tmpfs" ? "memory" : "file"}:${scratch.dirs[c.place]}`;
}

/** The scratch directory of a case's own files (the null case's result documents: tmpfs). */
function placeOf(c: CaseDef): Place {
  return c.place === "null" ? "tmpfs" : c.place;
}

/** Runs tierbench's CLI in its own process (so its peak RSS is its own); returns its result. */
async function runTierbench(
  ctx: Context,
  place: Place,
  name: string,
  args: string[],
): Promise<string> {
  const output = ctx.scratch.path(place, `${name}.json`);
  const out = await ctx.runner.run(
    Deno.execPath(),
    tierbenchRunArgs(["run", ...args], output),
    TIERBENCH_ROOT,
  );
  try {
    if (!out.success) {
      throw new CompareError(`tierbench ${name}: ${lastLine(out).replace(/^tierbench: /, "")}`);
    }
    return await Deno.readTextFile(output);
  } finally {
    await ctx.scratch.removeFile(place, `${name}.json`);
  }
}

async function tierbenchCase(
  ctx: Context,
  c: CaseDef,
  name: string,
  shared?: string,
): Promise<TierbenchFigures> {
  const p = patternOf(c, ctx.settings);
  const args = tierbenchArgs(p, tierSpec(c, ctx.scratch), shared);
  const text = await runTierbench(ctx, placeOf(c), name, args);
  return parseOrFail(`tierbench ${name}`, () => parseTierbenchJson(text, direction(p)));
}

/**
 * Runs fio on the shared file of a read case, or on a fresh file in the
 * case's scratch directory (removed afterwards) for a write case; the null
 * case opens no file (and runs in the tmpfs scratch directory all the same).
 */
async function fioCase(ctx: Context, c: CaseDef, name: string, shared?: string): Promise<Figures> {
  const p = patternOf(c, ctx.settings);
  const file = `${name}.fio.dat`;
  const place = placeOf(c);
  try {
    const out = await ctx.runner.run(
      ctx.settings.fio,
      fioArgs(p, shared ?? ctx.scratch.path(place, file)),
      ctx.scratch.dirs[place],
    );
    if (!out.success) throw new CompareError(`fio ${name}: ${lastLine(out)}`);
    return parseOrFail(`fio ${name}`, () => parseFioJson(decoder.decode(out.stdout), direction(p)));
  } finally {
    if (shared === undefined) await ctx.scratch.removeFile(place, file);
  }
}

/**
 * Writes the file both tools read in a read case (with fio, sequentially, in
 * 1 MiB blocks), so they read the very same blocks in the same state.
 */
async function layOutShared(ctx: Context, c: CaseDef, name: string): Promise<string> {
  const p = patternOf(c, ctx.settings);
  const path = ctx.scratch.path(placeOf(c), `${name}.shared.dat`);
  const out = await ctx.runner.run(ctx.settings.fio, [
    "--name=layout",
    `--filename=${path}`,
    "--rw=write",
    "--bs=1m",
    `--size=${p.size}`,
    "--ioengine=psync",
    `--direct=${p.direct ? 1 : 0}`,
    "--output-format=json",
  ]);
  if (!out.success) throw new CompareError(`fio layout ${name}: ${lastLine(out)}`);
  return path;
}

function parseOrFail<T>(what: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof ToolOutputError) throw new CompareError(`${what}: ${e.message}`);
    throw e;
  }
}

async function measureCase(ctx: Context, c: CaseDef, round: number): Promise<CaseRound> {
  const first: Tool = round % 2 === 1 ? "tierbench" : "fio";
  const name = `${c.id}-r${round}`;
  let tb: Figures | undefined;
  let fio: Figures | undefined;
  // Reads: both tools read one file laid out for this round; writes: fresh files each.
  const reads = c.place !== "null" && direction(patternOf(c, ctx.settings)) === "read";
  const shared = reads ? await layOutShared(ctx, c, name) : undefined;
  const device = c.place === "disk" ? ctx.loopDevice : undefined;
  const requests: Partial<Record<Tool, number | undefined>> = {};
  try {
    for (
      const tool of first === "tierbench"
        ? ["tierbench", "fio"] as const
        : ["fio", "tierbench"] as const
    ) {
      const before = device === undefined ? undefined : blockCounts(device);
      if (tool === "fio") fio = await fioCase(ctx, c, name, shared);
      else if (ctx.settings.control) tb = await fioCase(ctx, c, `${name}-control`, shared);
      else tb = await tierbenchCase(ctx, c, name, shared);
      const after = device === undefined ? undefined : blockCounts(device);
      if (before && after) requests[tool] = requestsPerIo(before, after, c.pattern.bs);
    }
  } finally {
    if (shared !== undefined) await ctx.scratch.removeFile(placeOf(c), `${name}.shared.dat`);
  }
  const r = caseRound(c, round, first, tb!, fio!);
  if (requests.tierbench !== undefined && requests.fio !== undefined) {
    r.device_requests_per_io = { tierbench: requests.tierbench, fio: requests.fio };
  }
  return r;
}

async function peakRss(ctx: Context, ioSize: number, name: string): Promise<number> {
  const args = [
    "--tier",
    `memory:${ctx.scratch.dirs.tmpfs}`,
    "--rw",
    "read",
    "--bs",
    String(MiB),
    "--size",
    String(RSS.size),
    "--io-size",
    String(ioSize),
    "--engine",
    "psync",
  ];
  const text = await runTierbench(ctx, "tmpfs", name, args);
  return parseOrFail(`tierbench ${name}`, () => parseTierbenchJson(text, "read")).peak_rss_bytes;
}

async function measureRss(ctx: Context, round: number): Promise<RssRound> {
  const first = round % 2 === 1 ? "1g" : "8g";
  const rss: Record<"1g" | "8g", number> = { "1g": 0, "8g": 0 };
  for (const which of first === "1g" ? ["1g", "8g"] as const : ["8g", "1g"] as const) {
    rss[which] = await peakRss(
      ctx,
      which === "1g" ? RSS.small : RSS.large,
      `rss-${which}-r${round}`,
    );
  }
  return {
    round,
    first,
    rss_1g_bytes: rss["1g"],
    rss_8g_bytes: rss["8g"],
    ratio: rss["8g"] / rss["1g"],
  };
}

// ---------------------------------------------------------------------------
// Output

/** What the header line says about the machine and the directories. */
interface Environment {
  date: string;
  cpu_model: string;
  cores: number;
  kernel: string;
  dir: string;
  fs_type: string;
  device: string;
  tmpfs_dir: string;
  fio_version: string;
  deno_version: string;
  /** `disk` (the directory of --dir) or `loop` (a loop device made for the run). */
  device_mode: DeviceMode;
  /** The loop device, in loop mode. */
  loop?: LoopFacts;
}

function describeEnvironment(
  s: Settings,
  fio: string,
  date: Date,
  loop?: LoopFacts,
): Environment {
  const host = hostFacts();
  const facts = pathFacts(loop?.mount_point ?? s.dir);
  const d = facts.device;
  const device = loop
    ? `${loop.device} (loop device, direct-io=${loop.direct_io ? "on" : "off"}, ` +
      `backed by ${loop.backing_file} on tmpfs, ${fmtSize(loop.backing_bytes)} allocated up front)`
    : d
    ? [
      d.partition ? `${d.partition} on ${d.name}` : d.name,
      d.model,
      d.rotational === undefined ? undefined : d.rotational ? "rotational" : "non-rotational",
      d.scheduler ? `scheduler ${d.scheduler}` : undefined,
    ].filter((x) => x !== undefined).join(", ")
    : facts.source;
  return {
    date: date.toISOString(),
    cpu_model: host.cpu_model,
    cores: host.cores,
    kernel: host.kernel,
    dir: facts.path,
    fs_type: facts.fs_type,
    device,
    tmpfs_dir: s.tmpfsDir,
    fio_version: fio,
    deno_version: Deno.version.deno,
    device_mode: s.device,
    ...(loop ? { loop } : {}),
  };
}

function headerLine(env: Environment, s: Settings): string {
  return `${env.date} · CPU ${env.cpu_model} (${env.cores} cores) · kernel ${env.kernel} · ` +
    `${env.dir}: ${env.fs_type} on ${env.device} · tmpfs ${env.tmpfs_dir} · ` +
    (s.control
      ? `${env.fio_version} vs itself (control: fio in tierbench's turns too) · `
      : `${env.fio_version} vs tierbench on deno ${env.deno_version} · `) +
    `${s.rounds} round(s) of ` +
    `${s.rampS} s ramp + ${s.runtimeS} s, files ${fmtSize(s.size)} (${s.device}) / ` +
    `${fmtSize(s.tmpfsSize)} (tmpfs)` +
    (s.cpusAllowed === undefined ? "" : ` · job threads on CPUs ${s.cpusAllowed}`);
}

function fmtSize(bytes: number): string {
  return bytes % GiB === 0 ? `${bytes / GiB} GiB` : `${bytes / MiB} MiB`;
}

function fmtDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

function progressLine(round: number, rounds: number, label: string, text: string): void {
  console.error(`[round ${round}/${rounds}] ${label.padEnd(40)} ${text}`);
}

// ---------------------------------------------------------------------------
// The comparison

async function compare(s: Settings): Promise<void> {
  const began = performance.now();
  const date = new Date();
  const { fio, defs } = await preflight(s);
  const runner = new ChildRunner();
  runner.install();
  const loop = s.device === "loop" ? new LoopDevice() : undefined;
  let scratch: Scratch | undefined;
  let env: Environment;
  const rounds: Rounds = { cases: new Map(defs.map((c) => [c.id, []])), rss: [] };
  try {
    const loopFacts = await loop?.setup(runner, s.tmpfsDir, loopBytes(s.size));
    env = describeEnvironment(s, fio, date, loopFacts);
    scratch = await Scratch.create({ dir: loopFacts?.mount_point ?? s.dir, tmpfsDir: s.tmpfsDir });
    const ctx: Context = { settings: s, scratch, runner, loopDevice: loopFacts?.device };
    for (let round = 1; round <= s.rounds; round++) await measureRound(ctx, defs, round, rounds);
  } catch (e) {
    // Said once the finally below has run.
    if (e instanceof CompareError || e instanceof Interrupted) {
      e.message += loop ? "; scratch files and loop device removed" : "; scratch files removed";
    }
    throw e;
  } finally {
    scratch?.removeSync();
    loop?.removeSync();
    runner.uninstall();
  }
  await report(s, env, defs, rounds, began);
}

/** The figures of every round so far: each case's, by case id, and the RSS check's. */
interface Rounds {
  readonly cases: Map<string, CaseRound[]>;
  readonly rss: RssRound[];
}

/** Checks fio and the directories before anything is made; the cases to run. */
async function preflight(s: Settings): Promise<{ fio: string; defs: CaseDef[] }> {
  if (s.device === "loop") requireRoot();
  const fio = await fioVersion(s.fio);
  await checkDir("dir", s.dir);
  await checkDir("tmpfs-dir", s.tmpfsDir);
  if (!["tmpfs", "ramfs"].includes(pathFacts(s.tmpfsDir).fs_type)) {
    throw new UsageError(`--tmpfs-dir: ${s.tmpfsDir} is not on tmpfs`);
  }
  const defs = casesOf(s.device).filter((c) =>
    s.cases.length === 0 || s.cases.some((x) => c.id.includes(x))
  );
  return { fio, defs };
}

/** One round: every case with both tools, then (unless a control run) the RSS check. */
async function measureRound(
  ctx: Context,
  defs: readonly CaseDef[],
  round: number,
  rounds: Rounds,
): Promise<void> {
  const s = ctx.settings;
  for (const c of defs) {
    const r = await measureCase(ctx, c, round);
    rounds.cases.get(c.id)!.push(r);
    const m = c.metric === "bw" ? "bw_bytes" : "iops";
    progressLine(
      round,
      s.rounds,
      c.label,
      `${turnTaker(s.control)} ${fmtFigure(m, metricOf(c, r.tierbench))}, fio ${
        fmtFigure(m, metricOf(c, r.fio))
      }, ratio ${r.ratio.toFixed(3)}; CPU/I/O ${fmtCpu(r.tierbench.cpu_per_io_ns)} vs ${
        fmtCpu(r.fio.cpu_per_io_ns)
      }, ratio ${r.cpu_per_io_ratio.toFixed(3)}${
        r.device_requests_per_io ? `; requests/I/O ${fmtRequests(r.device_requests_per_io)}` : ""
      }`,
    );
  }
  if (s.control) return; // the RSS check is tierbench's alone
  const r = await measureRss(ctx, round);
  rounds.rss.push(r);
  progressLine(
    round,
    s.rounds,
    "peak RSS 8g vs 1g",
    `${fmtMiB(r.rss_8g_bytes)} / ${fmtMiB(r.rss_1g_bytes)}, ratio ${r.ratio.toFixed(3)}`,
  );
}

/** Writes the JSON, then prints the table (terminal and Markdown) and where the JSON went. */
async function report(
  s: Settings,
  env: Environment,
  defs: readonly CaseDef[],
  rounds: Rounds,
  began: number,
): Promise<void> {
  const cases = defs.map((c) => summarizeCase(c, rounds.cases.get(c.id)!));
  const rss = s.control ? undefined : summarizeRss(rounds.rss, RSS.target);
  const body = rows(cases, rss);
  const header = headerLine(env, s);
  await writeJson(s.output, {
    schema: "tierbench/fio-compare@1",
    environment: env,
    settings: { ...s, duration_ms: Math.round(performance.now() - began) },
    cases,
    rss: rss ?? null,
  });
  console.log(header);
  console.log(terminalTable(head(s.control), body));
  console.log(`\nMarkdown:\n\n${header}\n\n${markdownTable(head(s.control), body)}\n`);
  console.log(`results: ${s.output}`);
  console.log(`took ${fmtDuration(performance.now() - began)}`);
}

async function writeJson(path: string, doc: unknown): Promise<void> {
  const dir = path.slice(0, path.lastIndexOf("/"));
  if (dir) await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(doc, null, 2) + "\n");
}

// ---------------------------------------------------------------------------
// The command line

const program = new Command()
  .name("fio_compare")
  .description(
    "run fio and tierbench alternately on identical patterns and compare their figures",
  )
  .option(
    "--device <kind>",
    "disk: the directory of --dir; loop (root only): ext4 on a loop device with direct I/O " +
      "over a file on --tmpfs-dir, made and removed here",
    "disk",
  )
  .option("--dir <dir>", "directory on the disk to test (default: the current directory)")
  .option("--tmpfs-dir <dir>", "tmpfs directory for the tmpfs and RSS cases", "/dev/shm")
  .option(
    "--rounds <n>",
    "rounds; each runs every case with both tools, taking turns at going first (default 4; " +
      "5 with --device loop)",
  )
  .option("--runtime <seconds>", "measured seconds per run (default 5)")
  .option("--ramp <seconds>", "warm-up seconds per run, excluded (default 1)")
  .option("--size <size>", "file size of the disk cases", "512m")
  .option("--tmpfs-size <size>", "file size of the tmpfs case", "256m")
  .option("--quick", "1 round of 1 s ramp + 2 s per run (explicit options win)", false)
  .option("--fio <path>", "the fio binary", "fio")
  .option("--output <file>", "raw figures as JSON (default results/fio-compare-<time>.json)")
  .option(
    "--cases <ids>",
    "run only the cases whose id contains one of these, comma-separated (e.g. " +
      "seqread-1m-io_uring,null); the RSS check runs unless --control (default: all)",
  )
  .option(
    "--cpus-allowed <cpus>",
    "pin each tool's job thread to these CPUs (fio's cpus_allowed, e.g. 1): where the OS " +
      "places a depth-1 job beside the device's own threads moves its speed more than either " +
      "tool does (default: not pinned)",
  )
  .option(
    "--control",
    "run fio in tierbench's turns too (fio against itself): the ratios show this machine's " +
      "noise in the same method; no RSS check",
    false,
  )
  .exitOverride()
  .configureOutput({ outputError: () => {} })
  .action(async (o) => {
    await compare(resolveSettings(o, new Date()));
  });

function fail(message: string, code: number): never {
  console.error(`fio-compare: ${message}`);
  Deno.exit(code);
}

/** Runs the comparison with command-line `args`. */
export async function main(args: string[]): Promise<void> {
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return; // --help
      fail(e.message.replace(/^error: /, ""), EXIT_USAGE);
    }
    if (e instanceof UsageError) fail(e.message, EXIT_USAGE);
    if (e instanceof FioMissing) {
      console.error(e.message);
      Deno.exit(EXIT_FAILED);
    }
    fail(e instanceof Error ? e.message : String(e), EXIT_FAILED);
  }
}

if (import.meta.main) await main(Deno.args);
