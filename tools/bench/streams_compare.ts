/**
 * `deno task bench:streams`: a workload's rank streams with libaio against
 * the same with io_uring (issue 17), on a file tier on the loop device of
 * `bench:fio --device loop` (ext4 over a loop device with direct I/O, backed
 * by a file on tmpfs, made and removed here; root only).
 *
 * Each round runs `tierbench workload NAME --tiers file:MOUNT` once with
 * `--engine libaio` and once with `--engine io_uring`, each engine going
 * first in every other round. A run's figure for a path in a phase is the
 * median over its measured iterations of that phase's bandwidth on that path
 * (bytes / phase time, as the workload prints it). The table gives each
 * engine's median over the rounds, the median of the per-round ratios
 * io_uring / libaio, and each engine's min–max: the loop device's noise.
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { isAbsolute, join } from "node:path";
import { median } from "../../core/stats.ts";
import { parseSize } from "../../core/units.ts";
import {
  ChildRunner,
  CompareError,
  Interrupted,
  intOption,
  lastLine,
  UsageError,
} from "./_fio_process.ts";
import { LoopDevice } from "./_loop_device.ts";
import { TIERBENCH_ROOT, tierbenchRunArgs } from "./_tierbench.ts";

const ENGINES = ["libaio", "io_uring"] as const;
type Engine = typeof ENGINES[number];
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

/** The resolved options. */
interface Settings {
  readonly workload: string;
  readonly model: string;
  readonly scale: string;
  readonly iterations: number;
  readonly warmup: number;
  readonly rounds: number;
  readonly tmpfsDir: string;
  /** Bytes of the loop device's backing file. */
  readonly size: number;
  readonly output: string;
}

/** One run's per-path figures: `phase path` → bytes/s. */
type PathFigures = Record<string, number>;

interface Round {
  readonly round: number;
  readonly first: Engine;
  readonly figures: Record<Engine, PathFigures>;
  readonly iteration_s: Record<Engine, number>;
}

interface WorkloadPhase {
  io?: Record<string, { bw_bytes?: number }>;
}

interface WorkloadIteration {
  warmup: boolean;
  iteration_s: number;
  phases: Record<string, WorkloadPhase>;
}

/** The per-path figures of one workload result document. */
function figuresOf(text: string): { paths: PathFigures; iteration_s: number } {
  const doc = JSON.parse(text) as { workload?: { iterations?: WorkloadIteration[] } };
  const its = (doc.workload?.iterations ?? []).filter((i) => !i.warmup);
  if (its.length === 0) throw new CompareError("the workload's result has no measured iteration");
  const series: Record<string, number[]> = {};
  for (const it of its) {
    for (const [phase, p] of Object.entries(it.phases)) {
      for (const [path, io] of Object.entries(p.io ?? {})) {
        if (typeof io.bw_bytes !== "number" || !(io.bw_bytes > 0)) continue;
        (series[`${phase} ${path}`] ??= []).push(io.bw_bytes);
      }
    }
  }
  const paths: PathFigures = {};
  for (const [k, xs] of Object.entries(series)) paths[k] = median(xs);
  return { paths, iteration_s: median(its.map((i) => i.iteration_s)) };
}

async function runWorkload(
  runner: ChildRunner,
  s: Settings,
  mount: string,
  engine: Engine,
  output: string,
): Promise<{ paths: PathFigures; iteration_s: number }> {
  const out = await runner.run(
    Deno.execPath(),
    tierbenchRunArgs([
      "workload",
      s.workload,
      "--model",
      s.model,
      "--scale",
      s.scale,
      "--tiers",
      `file:${mount}`,
      "--iterations",
      String(s.iterations),
      "--warmup",
      String(s.warmup),
      "--engine",
      engine,
    ], output),
    TIERBENCH_ROOT,
  );
  try {
    if (!out.success) {
      throw new CompareError(`workload --engine ${engine}: ${lastLine(out)}`);
    }
    return figuresOf(await Deno.readTextFile(output));
  } finally {
    await Deno.remove(output).catch(() => {});
  }
}

const MB = 1e6;

function fmtMB(x: number): string {
  return `${Math.round(x / MB).toLocaleString("en-US")} MB/s`;
}

/** The summary rows: one per phase and path, then the iteration time. */
function summarize(rounds: readonly Round[]): string[][] {
  const keys = [
    ...new Set(rounds.flatMap((r) => ENGINES.flatMap((e) => Object.keys(r.figures[e])))),
  ]
    .sort();
  const rows: string[][] = [];
  const row = (
    label: string,
    of: (r: Round, e: Engine) => number | undefined,
    fmt: typeof fmtMB,
  ) => {
    const per = Object.fromEntries(
      ENGINES.map((
        e,
      ) => [e, rounds.map((r) => of(r, e)).filter((x): x is number => x !== undefined)]),
    ) as Record<Engine, number[]>;
    const ratios = rounds.flatMap((r) => {
      const a = of(r, "libaio"), b = of(r, "io_uring");
      return a !== undefined && b !== undefined ? [b / a] : [];
    });
    const span = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
    rows.push([
      label,
      fmt(median(per.libaio)),
      fmt(median(per.io_uring)),
      median(ratios).toFixed(3),
      ratios.map((x) => x.toFixed(2)).join(" "),
      span(per.libaio),
      span(per.io_uring),
    ]);
  };
  for (const k of keys) row(k, (r, e) => r.figures[e][k], fmtMB);
  row("iteration time", (r, e) => r.iteration_s[e], (x) => `${x.toFixed(3)} s`);
  return rows;
}

function markdownTable(rows: string[][]): string {
  const head = [
    "phase path",
    "libaio",
    "io_uring",
    "ratio",
    "per round",
    "libaio min–max",
    "io_uring min–max",
  ];
  const all = [head, ...rows];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  const rule = `| ${
    widths.map((w, i) => (i >= 1 && i <= 3 ? "-".repeat(w - 1) + ":" : "-".repeat(w))).join(" | ")
  } |`;
  return [line(head), rule, ...rows.map(line)].join("\n");
}

async function compare(s: Settings): Promise<void> {
  if (Deno.uid() !== 0) {
    throw new UsageError(
      `needs root to make, mount and remove a loop device (running as uid ${
        Deno.uid() ?? "unknown"
      })`,
    );
  }
  const began = performance.now();
  const runner = new ChildRunner();
  runner.install();
  const loop = new LoopDevice();
  const rounds: Round[] = [];
  try {
    const facts = await loop.setup(runner, s.tmpfsDir, s.size);
    const mount = facts.mount_point;
    for (let round = 1; round <= s.rounds; round++) {
      const first: Engine = round % 2 === 1 ? "libaio" : "io_uring";
      const order: Engine[] = first === "libaio" ? ["libaio", "io_uring"] : ["io_uring", "libaio"];
      const figures = {} as Record<Engine, PathFigures>;
      const iteration_s = {} as Record<Engine, number>;
      for (const e of order) {
        const r = await runWorkload(
          runner,
          s,
          mount,
          e,
          join(s.tmpfsDir, `streams-${round}-${e}.json`),
        );
        figures[e] = r.paths;
        iteration_s[e] = r.iteration_s;
        console.error(
          `[round ${round}/${s.rounds}] ${e}: ` +
            Object.entries(r.paths).map(([k, v]) => `${k} ${fmtMB(v)}`).join(", "),
        );
      }
      rounds.push({ round, first, figures, iteration_s });
    }
  } catch (e) {
    if (e instanceof CompareError || e instanceof Interrupted) {
      e.message += "; loop device removed";
    }
    throw e;
  } finally {
    loop.removeSync();
    runner.uninstall();
  }
  const header =
    `${s.workload} --model ${s.model} --scale ${s.scale}, ${s.iterations} iteration(s) ` +
    `after ${s.warmup} warm-up, file tier on a loop device (ext4, direct-io=on, tmpfs-backed), ` +
    `${s.rounds} alternating round(s); ratio: io_uring / libaio, median of the per-round ratios`;
  const table = markdownTable(summarize(rounds));
  await Deno.mkdir(s.output.slice(0, s.output.lastIndexOf("/")) || ".", { recursive: true });
  await Deno.writeTextFile(
    s.output,
    JSON.stringify({ schema: "tierbench/streams-compare@1", settings: s, rounds }, null, 2) + "\n",
  );
  console.log(`${header}\n\n${table}\n`);
  console.log(`results: ${s.output}`);
  console.log(`took ${((performance.now() - began) / 1000).toFixed(0)} s`);
}

const program = new Command()
  .name("streams_compare")
  .description(
    "run a workload's rank streams with libaio and with io_uring alternately on a file tier on " +
      "a loop device (root only) and compare their per-path bandwidth",
  )
  .option("--workload <name>", "the workload", "zero-infinity")
  .option("--model <name>", "its model", "7b")
  .option("--scale <f>", "its scale", "0.005")
  .option("--iterations <n>", "measured iterations per run", "3")
  .option("--warmup <n>", "warm-up iterations per run", "1")
  .option("--rounds <n>", "rounds, each engine going first in every other one", "5")
  .option("--tmpfs-dir <dir>", "tmpfs directory of the loop device's backing file", "/dev/shm")
  .option("--size <size>", "the loop device's size", "2g")
  .option("--output <file>", "raw figures as JSON (default results/streams-compare-<time>.json)")
  .exitOverride()
  .configureOutput({ outputError: () => {} })
  .action(async (o) => {
    const size = parseSize(o.size);
    if (size === undefined || size <= 0) throw new UsageError(`--size: "${o.size}" is no size`);
    const cwd = Deno.env.get("INIT_CWD") ?? Deno.cwd();
    const time = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
    await compare({
      workload: o.workload,
      model: o.model,
      scale: o.scale,
      iterations: intOption("iterations", o.iterations, 1, 1000),
      warmup: intOption("warmup", o.warmup, 0, 1000),
      rounds: intOption("rounds", o.rounds, 1, 99),
      tmpfsDir: o.tmpfsDir,
      size,
      output: o.output
        ? (isAbsolute(o.output) ? o.output : join(cwd, o.output))
        : join(cwd, "results", `streams-compare-${time}.json`),
    });
  });

/** Runs the comparison with command-line `args`. */
export async function main(args: string[]): Promise<void> {
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (e) {
    const fail = (message: string, code: number): never => {
      console.error(`streams-compare: ${message}`);
      Deno.exit(code);
    };
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return;
      fail(e.message.replace(/^error: /, ""), EXIT_USAGE);
    }
    if (e instanceof UsageError) fail(e.message, EXIT_USAGE);
    fail(e instanceof Error ? e.message : String(e), EXIT_FAILED);
  }
}

if (import.meta.main) await main(Deno.args);
