/**
 * `deno task bench:scale`: does the harness hold its cost per I/O as jobs
 * and ranks grow? Each case runs once small and once large, each run a
 * process of its own, taking turns over rounds:
 *
 * - `run` at depth 32, 1 job against 64: 4 KiB random reads on the null tier
 *   and on tmpfs (the memory tier) with libaio and io_uring, and 1 MiB
 *   sequential reads on tmpfs with both engines;
 * - fio on the same patterns in the same minutes, 1 job against 64, with its
 *   jobs as threads (`--thread`) and as processes: what 64 jobs cost on this
 *   machine whoever runs them;
 * - `workload zero-infinity` (7b, scale 0.01) on tmpfs and a file
 *   directory, 1 rank against 16.
 *
 * For each it reports the wall time of the whole command, its peak RSS,
 * context switches per I/O, and CPU time per I/O — the job threads' own
 * (getrusage RUSAGE_THREAD over the measured window; fio's usr_cpu and
 * sys_cpu × job_runtime summed over its jobs) and the whole process's (its
 * rusage once it has exited) — with the ratio large/small, which should stay
 * ≤ 1.2, tierbench's ratio over fio's, and tierbench's job threads over
 * fio's at each size (a ratio grows as much from a cheap one-job run as from
 * a dear many-job one). For tierbench's `run` the whole
 * process's CPU is also split in two: over the measured window (its result's
 * usr_pct and sys_pct, kernel threads such as io_uring's io-wq workers
 * included), and outside it, in seconds (Workers and their modules, warm-up,
 * layout, the ramp, the end), with what each job beyond the first adds there:
 * a job's start, spent once, which a short `--runtime` spreads over few
 * I/Os. Workload I/Os are the requests of each path (bytes ÷ the path's
 * request size). The verdict is met when each ratio a case has stays
 * within 1.2 (the workload has no job threads' one), and says what each
 * one does on its own.
 *
 * ```sh
 * deno task bench:scale [--rounds 2] [--runtime 5] [--cases null,tmpfs-libaio-4k] [--no-fio]
 *   [--file-dir /var/tmp] [--tmpfs-dir /dev/shm]
 * ```
 *
 * Scratch goes under the two directories (`tierbench-scale-<random>`),
 * removed at the end; figures go to `results/scale-<time>.json`.
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import Table from "cli-table3";
import { join } from "node:path";
import { contextSwitches, cpuTimes } from "../../core/libc.ts";
import { median } from "../../core/stats.ts";
import type { ResultDocument } from "../../schema/result.ts";
import { resultsPath, writeResults } from "./_results.ts";
import { intOption, UsageError } from "./_fio_process.ts";
import { tierbenchRunArgs } from "./_tierbench.ts";

const TARGET = 1.2;
const SMALL_JOBS = 1;
const LARGE_JOBS = 64;
const SMALL_RANKS = 1;
const LARGE_RANKS = 16;
const DEPTH = 32;

/** The scratch pair a case runs in. */
interface Dirs {
  tmpfs: string;
  file: string;
}

/** Who runs a side: tierbench, or fio with its jobs as threads or processes. */
type Tool = "tierbench" | "fio --thread" | "fio";

/** One command of a case: the program, its arguments, and how to count its I/Os. */
interface Invocation {
  cmd: string;
  args: string[];
  read: (out: Deno.CommandOutput) => Promise<Counted>;
}

/**
 * What a run says of itself: its I/Os, its jobs' CPU (ns), its whole
 * process's CPU over the measured window (ns; tierbench's `run`), its peak RSS.
 */
interface Counted {
  ios: number;
  jobs_cpu_ns: number | undefined;
  window_cpu_ns: number | undefined;
  peak_rss_bytes: number | undefined;
}

/** A `run` pattern, the same for both tools. */
interface Pattern {
  rw: "randread" | "read";
  bs: number;
  /** Bytes of each job's file. */
  size: number;
  /** `null`: the null tier and fio's null engine. */
  engine: "null" | "libaio" | "io_uring";
}

/** A case: a pattern (or the workload) small and large, by each tool. */
interface Case {
  readonly id: string;
  readonly label: string;
  /** What it counts: jobs, each at depth {@linkcode DEPTH}, or the workload's ranks. */
  readonly unit: "job" | "rank";
  /** How many it runs small and large. */
  readonly counts: { readonly small: number; readonly large: number };
  /** The tools that run it, and each one's command at `n` jobs (or ranks). */
  readonly tools: readonly Tool[];
  readonly invoke: (tool: Tool, n: number, dirs: Dirs, runtimeS: number) => Invocation;
}

const KiB = 1024, MiB = 1024 * KiB;

const patternCase = (id: string, label: string, p: Pattern): Case => ({
  id,
  label,
  unit: "job",
  counts: { small: SMALL_JOBS, large: LARGE_JOBS },
  tools: ["tierbench", "fio --thread", "fio"],
  invoke: (tool, n, d, s) =>
    tool === "tierbench" ? tierbenchRun(p, n, d, s) : fioRun(p, n, d, s, tool),
});

const CASES: readonly Case[] = [
  patternCase("null", "4 KiB randread, null tier", {
    rw: "randread",
    bs: 4 * KiB,
    size: MiB,
    engine: "null",
  }),
  ...(["libaio", "io_uring"] as const).flatMap((engine) => [
    patternCase(`tmpfs-${engine}-4k`, `4 KiB randread, tmpfs, ${engine}`, {
      rw: "randread",
      bs: 4 * KiB,
      size: 8 * MiB,
      engine,
    }),
    patternCase(`tmpfs-${engine}-1m`, `1 MiB read, tmpfs, ${engine}`, {
      rw: "read",
      bs: MiB,
      size: 32 * MiB,
      engine,
    }),
  ]),
  {
    id: "workload",
    label: "workload zero-infinity 7b, scale 0.01",
    unit: "rank",
    counts: { small: SMALL_RANKS, large: LARGE_RANKS },
    tools: ["tierbench"],
    invoke: (_tool, n, d) => workloadRun(n, d),
  },
];

/** tierbench's own figures, from the result document it wrote to `output`. */
function tierbenchCounted(output: string) {
  return async (): Promise<Counted> => {
    const doc = JSON.parse(await Deno.readTextFile(output)) as ResultDocument;
    await Deno.remove(output);
    const run = doc.runs[0];
    const jobs = run?.cpu.jobs;
    return {
      ios: iosOf(doc),
      jobs_cpu_ns: jobs && jobs.usr_ns + jobs.sys_ns,
      // usr_pct and sys_pct are the process's CPU over the measured window, % of its runtime (ms)
      window_cpu_ns: run && ((run.cpu.usr_pct + run.cpu.sys_pct) / 100) * run.read.runtime * 1e6,
      peak_rss_bytes: doc.tool.peak_rss_bytes,
    };
  };
}

function tierbenchRun(p: Pattern, jobs: number, d: Dirs, runtimeS: number): Invocation {
  const output = join(d.tmpfs, "result.json");
  const args = [
    "run",
    "--tier",
    p.engine === "null" ? "null:" : `memory:${d.tmpfs}`,
    ...(p.engine === "null" ? [] : ["--engine", p.engine]),
    ...["--rw", p.rw, "--bs", String(p.bs), "--size", String(p.size)],
    ...["--numjobs", String(jobs), "--iodepth", String(DEPTH)],
    ...["--runtime", String(runtimeS), "--ramp", "1"],
  ];
  return {
    cmd: Deno.execPath(),
    args: tierbenchRunArgs(args, output),
    read: tierbenchCounted(output),
  };
}

function workloadRun(ranks: number, d: Dirs): Invocation {
  const output = join(d.tmpfs, "result.json");
  const args = [
    "workload",
    "zero-infinity",
    ...["--model", "7b", "--scale", "0.01", "--iterations", "2"],
    ...["--ranks-per-node", String(ranks), "--tiers", `memory:${d.tmpfs},file:${d.file}`],
  ];
  return {
    cmd: Deno.execPath(),
    args: tierbenchRunArgs(args, output),
    read: tierbenchCounted(output),
  };
}

/** fio on pattern `p` with `jobs` jobs, each on a file of its own in a directory of the run. */
function fioRun(p: Pattern, jobs: number, d: Dirs, runtimeS: number, tool: Tool): Invocation {
  const dir = join(d.tmpfs, "fio");
  if (p.engine !== "null") Deno.mkdirSync(dir, { recursive: true }); // fio makes files, not directories
  const args = [
    "--name=scale",
    ...(p.engine === "null" ? [] : [`--directory=${dir}`]),
    ...[`--rw=${p.rw}`, `--bs=${p.bs}`, `--size=${p.size}`, `--ioengine=${p.engine}`],
    ...[
      `--iodepth=${DEPTH}`,
      `--numjobs=${jobs}`,
      ...(tool === "fio --thread" ? ["--thread"] : []),
    ],
    ...[`--runtime=${runtimeS}`, "--time_based", "--ramp_time=1", "--output-format=json"],
  ];
  return {
    cmd: "fio",
    args,
    read: async (out) => {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      return fioCounted(new TextDecoder().decode(out.stdout));
    },
  };
}

/**
 * fio's I/Os and its jobs' CPU over their measured time, summed over every
 * job of its JSON: usr_cpu and sys_cpu are % of job_runtime (ms).
 */
export function fioCounted(stdout: string): Counted {
  const start = stdout.search(/^\{/m);
  if (start < 0) throw new Error("fio printed no JSON");
  const doc = JSON.parse(stdout.slice(start)) as { jobs: FioJob[] };
  let ios = 0, cpu = 0;
  for (const j of doc.jobs) {
    if (j.error !== 0) throw new Error(`fio's job ${j.jobname} failed with error ${j.error}`);
    ios += j.read.total_ios + j.write.total_ios;
    cpu += ((j.usr_cpu + j.sys_cpu) / 100) * j.job_runtime * 1e6;
  }
  return { ios, jobs_cpu_ns: cpu, window_cpu_ns: undefined, peak_rss_bytes: undefined };
}

/** What fioCounted reads of one job in fio's JSON. */
interface FioJob {
  jobname: string;
  error: number;
  usr_cpu: number;
  sys_cpu: number;
  job_runtime: number;
  read: { total_ios: number };
  write: { total_ios: number };
}

/** What one run cost. */
interface Sample {
  wall_s: number;
  /** The run's own peak RSS (tierbench); fio's is not asked. */
  peak_rss_bytes: number | null;
  ios: number;
  /** Job threads' CPU per I/O, ns (`run` and fio). */
  jobs_cpu_per_io_ns: number | null;
  /** The whole process's CPU per I/O, ns (every process, for fio without --thread). */
  process_cpu_per_io_ns: number;
  /** tierbench's whole process over the measured window only, per I/O, ns. */
  window_cpu_per_io_ns: number | null;
  /**
   * The whole process's CPU outside the measured window, ms: the start
   * (Workers, modules, warm-up, layout, ramp) and the end (tierbench).
   */
  outside_window_cpu_ms: number | null;
  /** Voluntary and involuntary context switches of the whole command per I/O. */
  context_switches_per_io: number;
}

/** What a workload document says of its paths and the bytes each moved per iteration. */
interface WorkloadFacts {
  setup: { iterations: number; warmup_iterations: number };
  paths: { name: string; bs: number }[];
  summary: { bytes: Record<string, number> };
}

/**
 * I/Os of a result: a run's total_ios; a workload's requests over all its
 * iterations (warm-up included), each path's bytes per iteration
 * (`PATH:read`, `PATH:write`) over the path's request size.
 */
function iosOf(doc: ResultDocument): number {
  const r = doc.runs[0];
  if (r !== undefined) return r.read.total_ios + r.write.total_ios;
  const w = (doc as unknown as { workload: WorkloadFacts }).workload;
  const bs = new Map(w.paths.map((p) => [p.name, p.bs]));
  const perIteration = Object.entries(w.summary.bytes).reduce(
    (n, [k, bytes]) => n + bytes / (bs.get(k.split(":")[0]!) ?? 1),
    0,
  );
  return perIteration * (w.setup.iterations + w.setup.warmup_iterations);
}

/** Runs one command to its end and measures it from outside: wall, rusage of the children. */
async function sample(inv: Invocation): Promise<Sample> {
  const cpu0 = cpuTimes("children"), cs0 = contextSwitches("children");
  const t0 = performance.now();
  const out = await new Deno.Command(inv.cmd, {
    args: inv.args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = cpuTimes("children"), cs1 = contextSwitches("children");
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1);
    throw new Error(`${inv.cmd === "fio" ? "fio" : "tierbench"} exited ${out.code}: ${text}`);
  }
  const c = await inv.read(out);
  const processNs = cpu1.usr_ns + cpu1.sys_ns - cpu0.usr_ns - cpu0.sys_ns;
  const switches = cs1.voluntary + cs1.involuntary - cs0.voluntary - cs0.involuntary;
  const perIo = (x: number) => (c.ios > 0 ? x / c.ios : 0);
  return {
    wall_s: wall,
    peak_rss_bytes: c.peak_rss_bytes ?? null,
    ios: c.ios,
    jobs_cpu_per_io_ns: c.jobs_cpu_ns === undefined ? null : perIo(c.jobs_cpu_ns),
    process_cpu_per_io_ns: perIo(processNs),
    window_cpu_per_io_ns: c.window_cpu_ns === undefined ? null : perIo(c.window_cpu_ns),
    outside_window_cpu_ms: c.window_cpu_ns === undefined
      ? null
      : (processNs - c.window_cpu_ns) / 1e6,
    context_switches_per_io: perIo(switches),
  };
}

/** The medians of one side's samples. */
function side(label: string, s: Sample[]) {
  const m = (f: (x: Sample) => number | null) => {
    const v = s.map(f).filter((x): x is number => x !== null);
    return v.length === 0 ? null : median(v);
  };
  return {
    label,
    wall_s: m((x) => x.wall_s)!,
    peak_rss_bytes: m((x) => x.peak_rss_bytes),
    ios: m((x) => x.ios)!,
    jobs_cpu_per_io_ns: m((x) => x.jobs_cpu_per_io_ns),
    process_cpu_per_io_ns: m((x) => x.process_cpu_per_io_ns)!,
    window_cpu_per_io_ns: m((x) => x.window_cpu_per_io_ns),
    outside_window_cpu_ms: m((x) => x.outside_window_cpu_ms),
    context_switches_per_io: m((x) => x.context_switches_per_io)!,
    samples: s,
  };
}

const ratio = (x: number | null, y: number | null) => (x && y ? y / x : null);

/** "64 jobs × d32", "1 rank": `n` of case `c`'s unit. */
function countLabel(c: Case, n: number): string {
  const depth = c.unit === "job" ? ` × d${DEPTH}` : "";
  return `${n} ${c.unit}${n === 1 ? "" : "s"}${depth}`;
}

/** One tool over a case's rounds: medians of each side, and large/small of CPU per I/O. */
function summarize(c: Case, tool: Tool, small: Sample[], large: Sample[]) {
  const a = side(countLabel(c, c.counts.small), small);
  const b = side(countLabel(c, c.counts.large), large);
  const jobsRatio = ratio(a.jobs_cpu_per_io_ns, b.jobs_cpu_per_io_ns);
  const processRatio = ratio(a.process_cpu_per_io_ns, b.process_cpu_per_io_ns)!;
  return {
    tool,
    small: a,
    large: b,
    jobs_cpu_per_io_ratio: jobsRatio,
    process_cpu_per_io_ratio: processRatio,
    window_cpu_per_io_ratio: ratio(a.window_cpu_per_io_ns, b.window_cpu_per_io_ns),
    start_cpu_per_added_job_ms: perAddedJob(c, a.outside_window_cpu_ms, b.outside_window_cpu_ms),
  };
}

/**
 * What each job beyond the first adds outside the window, ms of CPU: a
 * job's start (its Worker, modules, engine, warm-up), spent once however
 * long the window, which a short `--runtime` spreads over few I/Os.
 */
function perAddedJob(c: Case, small: number | null, large: number | null): number | null {
  if (small === null || large === null) return null;
  return (large - small) / (c.counts.large - c.counts.small);
}

type ToolSummary = ReturnType<typeof summarize>;

/** A case: each tool's summary, and tierbench's ratios against fio's (threads) and the target. */
function caseSummary(c: Case, tools: ToolSummary[]) {
  const [tb, fio] = [
    tools.find((t) => t.tool === "tierbench")!,
    tools.find((t) => t.tool === "fio --thread"),
  ];
  const over = (x: number | null, y: number | null | undefined) => (x && y ? x / y : null);
  // each measure on its own (null: the workload has no job threads' figure), then both
  const metJobs = tb.jobs_cpu_per_io_ratio === null ? null : tb.jobs_cpu_per_io_ratio <= TARGET;
  const metProcess = tb.process_cpu_per_io_ratio <= TARGET;
  return {
    id: c.id,
    label: c.label,
    tools,
    jobs_ratio_over_fio: over(tb.jobs_cpu_per_io_ratio, fio?.jobs_cpu_per_io_ratio),
    // the job threads' CPU per I/O against fio's at the same size: where each tool starts and ends
    jobs_small_over_fio: over(tb.small.jobs_cpu_per_io_ns, fio?.small.jobs_cpu_per_io_ns),
    jobs_large_over_fio: over(tb.large.jobs_cpu_per_io_ns, fio?.large.jobs_cpu_per_io_ns),
    process_ratio_over_fio: over(tb.process_cpu_per_io_ratio, fio?.process_cpu_per_io_ratio),
    target: TARGET,
    met_jobs: metJobs,
    met_process: metProcess,
    met: (metJobs ?? true) && metProcess,
  };
}

type Summary = ReturnType<typeof caseSummary>;

const f0 = (n: number | null) => (n === null ? "–" : Math.round(n).toLocaleString("en-US"));
const f2 = (n: number | null) => (n === null ? "–" : n.toFixed(2));
const seconds = (ms: number | null) => (ms === null ? "–" : (ms / 1000).toFixed(1));
const mib = (n: number | null) => (n === null ? "–" : (n / MiB).toFixed(0));

/** "small → large (ratio×)" */
function pair(a: number | null, b: number | null, f = f0): string {
  const r = ratio(a, b);
  return `${f(a)} → ${f(b)}${r === null ? "" : ` (${r.toFixed(2)}×)`}`;
}

function table(rows: Summary[]): string {
  const t = new Table({
    head: [
      "case",
      "tool",
      "jobs CPU/I/O ns",
      "process CPU/I/O ns",
      "in window",
      "outside window, CPU s",
      "ctx sw/1000 I/Os",
      "I/Os",
      "wall s",
      "peak RSS MiB",
      "met",
    ],
    style: { head: [], border: [] },
  });
  for (const r of rows) {
    for (const [i, s] of r.tools.entries()) {
      t.push([
        i === 0 ? `${r.label}: ${s.small.label} → ${s.large.label}` : "",
        s.tool,
        pair(s.small.jobs_cpu_per_io_ns, s.large.jobs_cpu_per_io_ns),
        pair(s.small.process_cpu_per_io_ns, s.large.process_cpu_per_io_ns),
        pair(s.small.window_cpu_per_io_ns, s.large.window_cpu_per_io_ns),
        pair(s.small.outside_window_cpu_ms, s.large.outside_window_cpu_ms, seconds) +
        (s.start_cpu_per_added_job_ms === null
          ? ""
          : `; ${f0(s.start_cpu_per_added_job_ms)} ms a job`),
        pair(s.small.context_switches_per_io * 1000, s.large.context_switches_per_io * 1000, f2),
        pair(s.small.ios, s.large.ios),
        `${s.small.wall_s.toFixed(1)} → ${s.large.wall_s.toFixed(1)}`,
        s.tool === "tierbench"
          ? `${mib(s.small.peak_rss_bytes)} → ${mib(s.large.peak_rss_bytes)}`
          : "–",
        s.tool !== "tierbench" ? "" : `${verdict(r)} (≤ ${r.target}×${overFio(r, s)})`,
      ]);
    }
  }
  return t.toString();
}

/** "yes" or "NO", and where there are both measures, what each says. */
function verdict(r: Summary): string {
  const yes = (b: boolean) => (b ? "yes" : "NO");
  if (r.met_jobs === null) return yes(r.met);
  return `${yes(r.met)}: job threads ${yes(r.met_jobs)}, process ${yes(r.met_process)}`;
}

/** "; R× fio's ratio; S → L× fio's CPU/I/O" for the met column, when fio ran beside. */
function overFio(r: Summary, s: ToolSummary): string {
  if (r.jobs_ratio_over_fio === null) return "";
  const ratio = `${f2(r.jobs_ratio_over_fio)}× fio's ratio`;
  const sizes = `${f2(r.jobs_small_over_fio)} → ${f2(r.jobs_large_over_fio)}`;
  return `; ${ratio}; ${s.small.label} → ${s.large.label}: ${sizes}× fio's CPU/I/O`;
}

/** The cases `--cases` names (all when it is not given). */
function casesOption(text: string | undefined): readonly Case[] {
  if (text === undefined) return CASES;
  const ids = text.split(",");
  const unknown = ids.find((id) => !CASES.some((c) => c.id === id));
  if (unknown !== undefined) {
    throw new UsageError(
      `--cases: "${unknown}" is none of ${CASES.map((c) => c.id).join(", ")}`,
    );
  }
  return CASES.filter((c) => ids.includes(c.id));
}

/** Whether fio runs here (`fio --version` succeeds). */
async function haveFio(): Promise<boolean> {
  try {
    return (await new Deno.Command("fio", { args: ["--version"], stdout: "null", stderr: "null" })
      .output()).success;
  } catch {
    return false;
  }
}

/** Every tool of case `c` small and large over the rounds, taking turns. */
async function runCase(
  c: Case,
  tools: readonly Tool[],
  rounds: number,
  runtime: number,
  dirs: Dirs,
) {
  const samples = new Map(tools.map((t) => [t, { small: [] as Sample[], large: [] as Sample[] }]));
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? ["small", "large"] as const : ["large", "small"] as const;
    for (const which of order) {
      for (const tool of tools) {
        const s = await sample(c.invoke(tool, c.counts[which], dirs, runtime));
        samples.get(tool)![which].push(s);
        const at = countLabel(c, c.counts[which]);
        console.error(
          `[round ${round}/${rounds}] ${c.label}, ${tool}, ${at}: ${s.wall_s.toFixed(1)} s, ` +
            `${s.ios.toLocaleString("en-US")} I/Os, ${f0(s.jobs_cpu_per_io_ns)} ns jobs CPU/I/O, ` +
            `${f0(s.process_cpu_per_io_ns)} ns process CPU/I/O`,
        );
      }
    }
  }
  return caseSummary(
    c,
    tools.map((t) => summarize(c, t, samples.get(t)!.small, samples.get(t)!.large)),
  );
}

function options(args: string[]) {
  return new Command()
    .name("bench:scale")
    .option("--rounds <n>", "rounds; each runs every case small and large", "2")
    .option("--runtime <seconds>", "measured seconds of each `run`", "5")
    .option("--tmpfs-dir <dir>", "tmpfs directory", "/dev/shm")
    .option("--file-dir <dir>", "directory on a disk, for the workload's file tier", "/var/tmp")
    .option(
      "--cases <ids>",
      `only these cases, comma-separated (${CASES.map((c) => c.id).join(", ")})`,
    )
    .option("--no-fio", "tierbench alone, without fio's figures beside it")
    .option("--output <file>", "figures as JSON (default results/scale-<time>.json)")
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .parse(args, { from: "user" }).opts();
}

async function main(args: string[]): Promise<void> {
  const o = options(args);
  const rounds = intOption("rounds", o.rounds, 1, 99);
  const runtime = intOption("runtime", o.runtime, 1, 3600);
  const cases = casesOption(o.cases);
  const fio = o.fio && await haveFio();
  if (o.fio && !fio) console.error("bench:scale: fio is not on PATH; tierbench alone");
  const tmpfs = await Deno.makeTempDir({ dir: o.tmpfsDir, prefix: "tierbench-scale-" });
  const file = await Deno.makeTempDir({ dir: o.fileDir, prefix: "tierbench-scale-" });
  const loadBefore = Deno.loadavg();
  const rows: Summary[] = [];
  try {
    for (const c of cases) {
      const tools = c.tools.filter((t) => fio || t === "tierbench");
      rows.push(await runCase(c, tools, rounds, runtime, { tmpfs, file }));
    }
  } finally {
    await Deno.remove(tmpfs, { recursive: true });
    await Deno.remove(file, { recursive: true });
  }
  console.log(table(rows));
  await writeResults(resultsPath("scale", o.output), {
    schema: "tierbench/scale@5",
    date: new Date().toISOString(),
    load_average: { before: loadBefore, after: Deno.loadavg() },
    cpus: navigator.hardwareConcurrency,
    rounds,
    runtime_s: runtime,
    cases: rows,
  });
}

if (import.meta.main) {
  try {
    await main(Deno.args);
  } catch (e) {
    if (e instanceof CommanderError && e.exitCode === 0) Deno.exit(0); // --help
    const usage = e instanceof CommanderError || e instanceof UsageError;
    const message = (e instanceof Error ? e.message : String(e)).replace(/^error: /, "")
      .replaceAll("\n", " ");
    console.error(`bench:scale: ${message}`);
    Deno.exit(usage ? 2 : 1);
  }
}
