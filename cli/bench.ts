/**
 * `tierbench bench`: the node profile — a fixed matrix of jobs on each tier,
 * the contention matrix over them, each tier's concurrency curves, and short
 * training workloads.
 *
 * ```sh
 * deno task bench
 * ```
 *
 * @module
 */

import { Command, Option } from "@commander-js/extra-typings";
import { DEFAULT_MEMORY_DIR, parseTierSpec, parseTimeout, type TierSpec } from "../core/config.ts";
import { ConfigError, InputError } from "../core/errors.ts";
import { resolveEndpoint } from "../tiers/s3_client.ts";
import { contentionGroups, mixedContentionGroups } from "../bench/contention_groups.ts";
import { planConcurrency, shorterTime } from "../bench/concurrency.ts";
import {
  profileJobs,
  type ProfileOptions,
  profileTiers,
  REMOTE_HELP,
  remoteFromEnv,
} from "../bench/node_profile.ts";
import { BENCH_STEADY, describeSteady } from "../bench/steady.ts";
import {
  addCheckOptions,
  addConcurrencyOptions,
  addMeasureOptions,
  addOutputOptions,
  checkOutputTarget,
  endpointOption,
  outputFormatOption,
  rampOf,
} from "./_options.ts";
import { checkDirectory, resolvePath } from "./_paths.ts";
import { type AfterRuns, outputOf, type ReportTo, runAndReport } from "./_session.ts";
import { benchAcross, launchedBy } from "./_cluster.ts";
import {
  BENCH_SETUP_TEXT,
  BENCH_WORKLOADS,
  benchConcurrency,
  benchContention,
  benchWorkloads,
  PhaseClock,
} from "./_bench_steps.ts";

/**
 * How `bench` times its points: each tier's first point warms it up for
 * `--ramp`, every later point of it settles for `--settle` (both excluded
 * from the figures); a point measures until its bandwidth is steady
 * ({@linkcode BENCH_STEADY}) or for `--runtime`, the concurrency curves' for
 * at most `curveRuntime`.
 */
export const BENCH_TIMES = {
  runtime: "2",
  ramp: "1",
  settle: "0.25",
  size: "256m",
  curveRuntime: "1",
} as const;

/**
 * `bench --quick`: each point 0.5 s measured after no warm-up, on 16 MiB
 * files, and no training workloads; the contention matrix stays, and the
 * concurrency curves at 1 MiB only and at 1 and R processes only (unless
 * `--processes` or `--concurrency-bs` says otherwise), so the profile still
 * carries everything `plan` reads. A smoke test of the node
 * and of the binary, not a profile to plan a real run with.
 */
export const QUICK = { runtime: "0.5", ramp: "0", settle: "0", size: "16m" } as const;

/**
 * Everything `bench` was given, checked before it prints its plan or
 * touches a tier: at least one tier, each directory there, the S3 bucket and
 * endpoint, the curves' options and where the profile goes. `fromEnv` says
 * which remote tiers came from the environment (named as the variable).
 *
 * @throws {ConfigError} naming the option, or the variable, at fault.
 */
function checkBenchInput(
  o: { concurrency: boolean; ranksPerNode: string; processes?: string | undefined } & ReportTo & {
    concurrencyBs: string;
  },
  p: ProfileOptions,
  fromEnv: { pfs: boolean; s3: boolean },
): void {
  if ([p.memoryDir, p.fileDir, p.pfsDir, p.s3].every((t) => t === undefined)) {
    throw new ConfigError(
      "no-memory",
      "and --no-file leave no tier to profile, and no --pfs or --s3 names a remote one",
      "drop --no-memory or --no-file, or add --pfs DIR or --s3 s3://BUCKET",
    );
  }
  if (p.memoryDir !== undefined) checkDirectory("memory-dir", p.memoryDir);
  if (p.fileDir !== undefined) checkDirectory("file-dir", p.fileDir);
  if (p.pfsDir !== undefined) {
    checkDirectory(fromEnv.pfs ? "TIERBENCH_PFS_DIR" : "pfs", p.pfsDir, fromEnv.pfs);
  }
  if (p.s3 !== undefined) {
    try {
      parseTierSpec(p.s3);
      resolveEndpoint(p.endpoint);
    } catch (e) {
      if (!(e instanceof ConfigError) || e.field !== "tier") throw e;
      const problem = e.message.replace(/^--tier: /, "");
      throw fromEnv.s3
        ? new InputError("TIERBENCH_S3_BUCKET", problem)
        : new ConfigError("s3", problem);
    }
  }
  if (o.concurrency) {
    planConcurrency({ ranksPerNode: o.ranksPerNode, processes: o.processes, bs: o.concurrencyBs });
  }
  outputOf(o, "check");
}

/** The `bench` command's options, after parsing. */
type BenchFlags = ReturnType<ReturnType<typeof benchOptions>["opts"]>;

function benchOptions() {
  const cmd = new Command("bench")
    .description(
      "profile this node's tiers: a fixed matrix, the contention matrix, each tier's " +
        "concurrency curves, short workloads (about 3 minutes)",
    )
    .option("--memory-dir <dir>", "tmpfs directory for the memory tier", DEFAULT_MEMORY_DIR)
    .option("--file-dir <dir>", "directory on the disk to profile (default: the current directory)")
    .option("--no-memory", "skip the memory tier")
    .option("--no-file", "skip the file tier")
    .option("--pfs <dir>", "a directory on a shared mount (default: $TIERBENCH_PFS_DIR)")
    .option("--s3 <url>", "s3://BUCKET[/PREFIX] (default: $TIERBENCH_S3_BUCKET)")
    .addOption(endpointOption("S3 endpoint (default: $TIERBENCH_S3_ENDPOINT)"))
    .option(
      "--quick",
      "a quick profile (seconds, not minutes): --runtime 0.5 --ramp 0 --settle 0 --size 16m " +
        "unless given, the concurrency curves at 1 MiB and at 1 and R processes only, and no " +
        "training workloads; for a smoke test, not for planning",
    )
    .option("--verbose", "print every run's row (they are in the JSON and the report anyway)");
  const measured = addMeasureOptions(addConcurrencyOptions(cmd), {
    runtime: [
      "the longest a point measures (it stops once steady, after 1 s); curves: at most 1 s",
      BENCH_TIMES.runtime,
    ],
    ramp: ["warm-up of each tier's first point, excluded", BENCH_TIMES.ramp],
    size: ["file size per job", BENCH_TIMES.size],
  }).addOption(
    new Option("--settle <seconds>", "warm-up of every later point of a tier, excluded")
      .default(BENCH_TIMES.settle),
  );
  const checked = addCheckOptions(
    measured,
    "stamp every block written and check every block read, in every pattern where that holds " +
      "(the randrw points at depth 16 run unchecked); the workloads check every object read back",
  );
  return addOutputOptions(checked, "profile JSON (default results/<host>-<run id>.json)")
    .addOption(outputFormatOption());
}

/** The options with `--quick`'s times where the user gave none, and the ramp's two spellings read. */
function resolveTimes(o: BenchFlags, given: (key: string) => boolean): BenchFlags {
  const out = { ...o };
  if (o.quick) {
    for (const key of ["runtime", "ramp", "settle", "size"] as const) {
      if (!given(key)) out[key] = QUICK[key];
    }
  }
  out.ramp = rampOf(out);
  return out;
}

/** What the profile covers, from the options and the environment. */
function profileOf(o: BenchFlags): ProfileOptions & { settle: string } {
  const env = remoteFromEnv();
  const pfsDir = o.pfs ?? env.pfsDir;
  return {
    memoryDir: o.memory ? o.memoryDir : undefined,
    fileDir: o.file ? resolvePath(o.fileDir ?? ".") : undefined,
    pfsDir: pfsDir === undefined ? undefined : resolvePath(pfsDir),
    s3: o.s3 ?? env.s3,
    endpoint: o.endpoint ?? env.endpoint,
    runtime: o.runtime,
    ramp: o.ramp,
    settle: shorterTime(o.settle, o.ramp),
    size: o.size,
    timeout: o.timeout,
    verify: o.verify,
    // the time series at the steady-state test's samples: a point of a second or two has four
    logAvgMsec: String(BENCH_STEADY.sampleMs),
  };
}

/** The lines said before the first point: what runs, in order. */
function plannedLines(
  o: BenchFlags,
  p: ProfileOptions & { settle: string },
  tiers: readonly TierSpec[],
  curves: string | undefined,
): string[] {
  const configured = [p.pfsDir && `pfs:${p.pfsDir}`, p.s3].filter(Boolean).join(", ");
  const count = profileJobs(p).length;
  return [
    `tierbench: profiling ${count} points: each tier warmed up ${p.ramp} s, each point after ` +
    `${p.settle} s, then measured until steady or ${p.runtime} s (${describeSteady(BENCH_STEADY)})`,
    ...(configured ? [] : [`tierbench: no remote tier: ${REMOTE_HELP}`]),
    tiers.length >= 2
      ? `tierbench: then the contention matrix over ${tiers.length} tiers ` +
        `(${contentionGroups(tiers).length} groups, each reading and writing, and ` +
        `${mixedContentionGroups(tiers).length} pairs with one reading while the other writes)`
      : "tierbench: no contention matrix: it needs two tiers or more",
    curves ?? "tierbench: --no-concurrency: no concurrency curves",
    o.quick
      ? "tierbench: --quick: no training workloads"
      : `tierbench: then ${BENCH_WORKLOADS.join(", ")} (${BENCH_SETUP_TEXT})`,
  ];
}

/** The phases after the points, as `bench` was told: `undefined` for those it skips. */
interface BenchPhases {
  contention: AfterRuns | undefined;
  curves: AfterRuns | undefined;
  /** The line that says what the curves run, when they do. */
  curvesLine: string | undefined;
}

/**
 * The contention matrix (two tiers or more) and the concurrency curves
 * (unless `--no-concurrency`), with `--quick`'s narrower curves where the user
 * did not choose theirs.
 */
function benchPhases(
  o: BenchFlags,
  p: ProfileOptions & { settle: string },
  tiers: TierSpec[],
  quickCurves: boolean | undefined,
  given: (key: string) => boolean,
): BenchPhases {
  const processes = quickCurves ? [...new Set(["1", o.ranksPerNode])].join(",") : o.processes;
  const curveBs = o.quick && !given("concurrencyBs") ? "1m" : o.concurrencyBs;
  // what the matrix and the curves run alike: each point's ramp, file size, checks and S3 endpoint
  const alike = {
    ramp: p.settle,
    size: o.size,
    endpoint: p.endpoint,
    steady: BENCH_STEADY,
    timeout: o.timeout,
    verify: o.verify,
  };
  const contention = tiers.length >= 2
    ? benchContention(tiers, {
      runtime: o.runtime,
      ...alike,
      // the pairs again at the most processes the curves reach: the plan's ranks at once
      ...(o.concurrency
        ? {
          togetherProcesses: Math.max(
            ...planConcurrency({ ranksPerNode: o.ranksPerNode, processes }).processes,
          ),
        }
        : {}),
    })
    : undefined;
  const curves = o.concurrency
    ? benchConcurrency(tiers, {
      ranksPerNode: o.ranksPerNode,
      processes,
      bs: curveBs,
      runtime: shorterTime(o.runtime, BENCH_TIMES.curveRuntime),
      ...alike,
    })
    : undefined;
  const counts = o.processes ??
    (quickCurves ? `1 and ${o.ranksPerNode}` : `1 … ${o.ranksPerNode}`);
  const curvesLine = curves &&
    `tierbench: then each tier's concurrency curves (${counts} processes, reading, writing ` +
      `and both, at ${curveBs}; a count between two alike is interpolated, not measured)`;
  return { contention, curves, curvesLine };
}

/**
 * The phases after the points, one after another, each timed on `clock`;
 * the first that fails, or an abort, ends the chain.
 */
function chainPhases(
  clock: PhaseClock,
  contention: AfterRuns | undefined,
  curves: AfterRuns | undefined,
  workloads: AfterRuns | undefined,
): AfterRuns {
  return async (doc, signal, onProgress) => {
    clock.lap(doc, "patterns");
    let out = contention ? await contention(doc, signal, onProgress) : { doc };
    if (contention) clock.lap(out.doc, "contention");
    if (out.doc.status !== "ok" || signal.aborted) return out;
    out = curves ? await curves(out.doc, signal, onProgress) : out;
    if (curves) clock.lap(out.doc, "concurrency");
    if (out.doc.status !== "ok" || signal.aborted) return out;
    out = workloads ? await workloads(out.doc, signal, onProgress) : out;
    if (workloads) clock.lap(out.doc, "workloads");
    return out;
  };
}

/** The remote tiers the profile covers, or the hint that it has none. */
function remoteOf(p: ProfileOptions): { configured: boolean; note: string } {
  const configured = [p.pfsDir && `pfs:${p.pfsDir}`, p.s3].filter(Boolean).join(", ");
  return {
    configured: configured !== "",
    note: configured ? `remote tiers: ${configured}` : `no remote tier: ${REMOTE_HELP}`,
  };
}

/** The `bench` command. */
export function benchCommand() {
  return benchOptions().action(async (options, command) => {
    checkOutputTarget(options);
    const given = (key: string) => command.getOptionValueSource(key) !== "default";
    const o = resolveTimes(options, given);
    const p = profileOf(o);
    checkBenchInput(o, p, { pfs: o.pfs === undefined, s3: o.s3 === undefined });
    const tiers = profileTiers(p);
    const jobs = profileJobs(p);
    const quickCurves = o.quick && command.getOptionValueSource("processes") === undefined;
    const clock = new PhaseClock();
    const { contention, curves, curvesLine } = benchPhases(o, p, tiers, quickCurves, given);
    if (!o.quiet) { for (const line of plannedLines(o, p, tiers, curvesLine)) console.error(line); }
    const checks = { timeoutMs: parseTimeout(o.timeout), verify: o.verify };
    const workloads = o.quick ? undefined : benchWorkloads(tiers, p.endpoint, checks);
    const after = chainPhases(clock, contention, curves, workloads);
    const remote = remoteOf(p);
    const report = { ...o, verbose: o.verbose ?? false };
    const launch = launchedBy();
    if (!launch) return await runAndReport(jobs, "profile", report, remote, after, BENCH_STEADY);
    await benchOnNodes(launch, { o, p, tiers, jobs, remote, after, clock }, report);
  });
}

/**
 * `bench` under a launcher: the profile on every node, then the scaling
 * curve of the shared tiers across the nodes.
 */
async function benchOnNodes(
  launch: NonNullable<ReturnType<typeof launchedBy>>,
  run: {
    o: BenchFlags;
    p: ProfileOptions;
    tiers: TierSpec[];
    jobs: ReturnType<typeof profileJobs>;
    remote: { configured: boolean; note: string };
    after: AfterRuns;
    clock: PhaseClock;
  },
  report: Parameters<typeof benchAcross>[2],
): Promise<void> {
  const { o, p, jobs, remote, after, clock } = run;
  const shared = run.tiers.filter((t) => t.kind === "pfs" || t.kind === "s3");
  if (!o.quiet) {
    console.error(
      shared.length > 0
        ? `tierbench: then the scaling curve of ${shared.map((t) => t.kind).join(", ")} ` +
          "across the nodes (1, 2, 4 … all at once)"
        : `tierbench: no scaling curve: it needs a shared tier; ${REMOTE_HELP}`,
    );
  }
  await benchAcross(launch, {
    jobs,
    config: { command: "bench", jobs },
    remote,
    steady: BENCH_STEADY,
    after,
    tiers: shared,
    scaling: {
      runtime: o.runtime,
      ramp: o.ramp,
      size: o.size,
      endpoint: p.endpoint,
      verify: o.verify,
    },
    lap: (doc, name) => clock.lap(doc, name),
  }, report);
}
