/**
 * `deno task bench:scale`: does the harness hold its cost per I/O as jobs
 * and ranks grow? Each case runs `tierbench` once small and once large, in a
 * process of its own, taking turns over rounds:
 *
 * - `run` on the null tier, 1 job against 64 jobs × depth 32;
 * - `run` on tmpfs (the memory tier) with libaio at depth 32, 1 job against
 *   64 jobs;
 * - `workload zero-infinity` (7b, scale 0.01) on tmpfs and a file
 *   directory, 1 rank against 16.
 *
 * For each it reports the wall time of the whole command, its peak RSS, and
 * CPU time per I/O — the job threads' own (getrusage RUSAGE_THREAD over the
 * measured window, `run` only) and the whole process's (its rusage once it
 * has exited) — with the ratio large/small, which should stay ≤ 1.2.
 * Workload I/Os are the requests of each path (bytes ÷ the path's request
 * size).
 *
 * ```sh
 * deno task bench:scale [--rounds 2] [--runtime 5] [--file-dir /var/tmp] [--tmpfs-dir /dev/shm]
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
import { fileURLToPath } from "node:url";
import { cpuTimes } from "../core/libc.ts";
import { median } from "../core/stats.ts";
import type { ResultDocument } from "../schema/result.ts";
import { resultsPath, writeResults } from "./_results.ts";
import { intOption, UsageError } from "./_fio_process.ts";

const MAIN_TS = fileURLToPath(new URL("../main.ts", import.meta.url));
const DENO_JSON = fileURLToPath(new URL("../deno.json", import.meta.url));
const TARGET = 1.2;

/** One side of a case: the command's arguments in a scratch pair. */
type Args = (dirs: { tmpfs: string; file: string }, runtimeS: number) => string[];

/** A case: the same command small and large. */
interface Case {
  readonly id: string;
  readonly label: string;
  readonly small: { readonly label: string; readonly args: Args };
  readonly large: { readonly label: string; readonly args: Args };
}

const run = (tier: string, jobs: number, depth: number, extra: string[]): Args => (_, s) => [
  "run",
  "--tier",
  tier,
  "--rw",
  "randread",
  "--bs",
  "4k",
  "--numjobs",
  String(jobs),
  "--iodepth",
  String(depth),
  "--runtime",
  String(s),
  "--ramp",
  "1",
  ...extra,
];

const workload = (ranks: number): Args => (d) => [
  "workload",
  "zero-infinity",
  "--model",
  "7b",
  "--scale",
  "0.01",
  "--iterations",
  "2",
  "--ranks-per-node",
  String(ranks),
  "--tiers",
  `memory:${d.tmpfs},file:${d.file}`,
];

const CASES: readonly Case[] = [
  {
    id: "null",
    label: "run, null tier",
    small: { label: "1 job", args: run("null:", 1, 1, ["--size", "1m"]) },
    large: { label: "64 jobs × d32", args: run("null:", 64, 32, ["--size", "1m"]) },
  },
  {
    id: "tmpfs",
    label: "run, tmpfs, libaio d32",
    small: {
      label: "1 job",
      args: (d, s) => run(`memory:${d.tmpfs}`, 1, 32, ["--size", "8m", "--engine", "libaio"])(d, s),
    },
    large: {
      label: "64 jobs × d32",
      args: (d, s) =>
        run(`memory:${d.tmpfs}`, 64, 32, ["--size", "8m", "--engine", "libaio"])(d, s),
    },
  },
  {
    id: "workload",
    label: "workload zero-infinity 7b, scale 0.01",
    small: { label: "1 rank", args: workload(1) },
    large: { label: "16 ranks", args: workload(16) },
  },
];

/** What one run of tierbench cost. */
interface Sample {
  wall_s: number;
  peak_rss_bytes: number;
  ios: number;
  /** Job threads' CPU per I/O, ns (run only). */
  jobs_cpu_per_io_ns: number | undefined;
  /** The whole process's CPU per I/O, ns. */
  process_cpu_per_io_ns: number;
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

async function sample(args: string[], dir: string): Promise<Sample> {
  const output = join(dir, "result.json");
  const before = cpuTimes("children");
  const t0 = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      "--config",
      DENO_JSON,
      MAIN_TS,
      ...args,
      "--output",
      output,
      "--quiet",
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  const wall = (performance.now() - t0) / 1000;
  const after = cpuTimes("children");
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1);
    throw new Error(`tierbench ${args.slice(0, 2).join(" ")}: ${text}`);
  }
  const doc = JSON.parse(await Deno.readTextFile(output)) as ResultDocument;
  await Deno.remove(output);
  const ios = iosOf(doc);
  const jobs = doc.runs[0]?.cpu.jobs;
  const processNs = after.usr_ns + after.sys_ns - before.usr_ns - before.sys_ns;
  return {
    wall_s: wall,
    peak_rss_bytes: doc.tool.peak_rss_bytes,
    ios,
    jobs_cpu_per_io_ns: jobs && ios > 0 ? (jobs.usr_ns + jobs.sys_ns) / ios : undefined,
    process_cpu_per_io_ns: ios > 0 ? processNs / ios : 0,
  };
}

/** A case over its rounds: medians of each side, and large/small of CPU per I/O. */
function summarize(c: Case, small: Sample[], large: Sample[]) {
  const side = (label: string, s: Sample[]) => ({
    label,
    wall_s: median(s.map((x) => x.wall_s)),
    peak_rss_bytes: median(s.map((x) => x.peak_rss_bytes)),
    ios: median(s.map((x) => x.ios)),
    jobs_cpu_per_io_ns: s[0]?.jobs_cpu_per_io_ns === undefined
      ? null
      : median(s.map((x) => x.jobs_cpu_per_io_ns!)),
    process_cpu_per_io_ns: median(s.map((x) => x.process_cpu_per_io_ns)),
    samples: s,
  });
  const a = side(c.small.label, small);
  const b = side(c.large.label, large);
  const ratio = (x: number | null, y: number | null) => (x && y ? y / x : null);
  const jobsRatio = ratio(a.jobs_cpu_per_io_ns, b.jobs_cpu_per_io_ns);
  const processRatio = ratio(a.process_cpu_per_io_ns, b.process_cpu_per_io_ns)!;
  return {
    id: c.id,
    label: c.label,
    small: a,
    large: b,
    jobs_cpu_per_io_ratio: jobsRatio,
    process_cpu_per_io_ratio: processRatio,
    target: TARGET,
    met: (jobsRatio ?? processRatio) <= TARGET && processRatio <= TARGET,
  };
}

type Summary = ReturnType<typeof summarize>;

function table(rows: Summary[]): string {
  const t = new Table({
    head: [
      "case",
      "side",
      "wall s",
      "peak RSS MiB",
      "I/Os",
      "jobs CPU/I/O ns",
      "process CPU/I/O ns",
      "large/small (jobs, process)",
      "met",
    ],
    style: { head: [], border: [] },
  });
  const f = (n: number | null) => (n === null ? "–" : n.toFixed(0));
  for (const r of rows) {
    for (const [i, s] of [r.small, r.large].entries()) {
      t.push([
        i === 0 ? r.label : "",
        s.label,
        s.wall_s.toFixed(1),
        (s.peak_rss_bytes / 2 ** 20).toFixed(0),
        s.ios.toFixed(0),
        f(s.jobs_cpu_per_io_ns),
        f(s.process_cpu_per_io_ns),
        i === 0
          ? ""
          : `${r.jobs_cpu_per_io_ratio?.toFixed(2) ?? "–"}, ${
            r.process_cpu_per_io_ratio.toFixed(2)
          } (≤ ${r.target})`,
        i === 0 ? "" : r.met ? "yes" : "NO",
      ]);
    }
  }
  return t.toString();
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

async function main(args: string[]): Promise<void> {
  const o = new Command()
    .name("bench:scale")
    .option("--rounds <n>", "rounds; each runs every case small and large", "2")
    .option("--runtime <seconds>", "measured seconds of each `run`", "5")
    .option("--tmpfs-dir <dir>", "tmpfs directory", "/dev/shm")
    .option("--file-dir <dir>", "directory on a disk, for the workload's file tier", "/var/tmp")
    .option("--cases <ids>", "only these cases, comma-separated (null, tmpfs, workload)")
    .option("--output <file>", "figures as JSON (default results/scale-<time>.json)")
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .parse(args, { from: "user" }).opts();
  const rounds = intOption("rounds", o.rounds, 1, 99);
  const runtime = intOption("runtime", o.runtime, 1, 3600);
  const cases = casesOption(o.cases);
  const tmpfs = await Deno.makeTempDir({ dir: o.tmpfsDir, prefix: "tierbench-scale-" });
  const file = await Deno.makeTempDir({ dir: o.fileDir, prefix: "tierbench-scale-" });
  const rows: Summary[] = [];
  try {
    for (const c of cases) {
      const small: Sample[] = [], large: Sample[] = [];
      for (let round = 1; round <= rounds; round++) {
        const order = round % 2 === 1 ? ["small", "large"] as const : ["large", "small"] as const;
        for (const which of order) {
          const s = await sample(c[which].args({ tmpfs, file }, runtime), tmpfs);
          (which === "small" ? small : large).push(s);
          console.error(
            `[round ${round}/${rounds}] ${c.label}, ${c[which].label}: ${s.wall_s.toFixed(1)} s, ` +
              `${(s.peak_rss_bytes / 2 ** 20).toFixed(0)} MiB, ` +
              `${s.process_cpu_per_io_ns.toFixed(0)} ns CPU/I/O (process)`,
          );
        }
      }
      rows.push(summarize(c, small, large));
    }
  } finally {
    await Deno.remove(tmpfs, { recursive: true });
    await Deno.remove(file, { recursive: true });
  }
  console.log(table(rows));
  await writeResults(resultsPath("scale", o.output), {
    schema: "tierbench/scale@1",
    date: new Date().toISOString(),
    load_average: Deno.loadavg(),
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
