/**
 * The tierbench command line.
 *
 * ```sh
 * deno task tierbench run --tier file:/mnt/nvme --rw read --bs 1m --iodepth 8 \
 *   --engine libaio --direct --size 512m --runtime 5 --ramp 1 --output out.json
 * deno task bench            # the node profile
 * deno task tierbench contention --tiers memory:/dev/shm,file:/mnt/nvme
 * ```
 *
 * Exit status: 0 success, 1 the run failed or was interrupted (partial
 * results written), 2 a usage error. Failures print one line, never a stack.
 *
 * @module
 */

import { Command, CommanderError, Option } from "@commander-js/extra-typings";
import { dirname, isAbsolute, join } from "node:path";
import {
  DEFAULT_MEMORY_DIR,
  DEFAULT_TIMEOUT_MS,
  DEFAULTS,
  ENGINES,
  FILE_LAYOUTS,
  formatTierSpec,
  type JobOptions,
  parseJobOptions,
  parseTierSpec,
  RW_MODES,
  type TierSpec,
} from "./core/config.ts";
import { cleanScratch, formatCleanReport } from "./tiers/clean.ts";
import {
  CONTENTION_DEFAULTS,
  contentionGroups,
  type ContentionOptions,
  mixedContentionGroups,
  runContention,
  runContentionSession,
} from "./bench/contention.ts";
import { redactSecrets } from "./core/secrets.ts";
import { ConfigError } from "./core/errors.ts";
import { profileJobs, profileTiers, REMOTE_HELP, remoteFromEnv } from "./bench/node_profile.ts";
import { ProgressLine } from "./cli/progress.ts";
import { type ResultDocument, stringifyResult, writeResult } from "./schema/result.ts";
import type { RunProgress } from "./bench/runner.ts";
import { runSession, type SessionOutcome, VERSION } from "./bench/session.ts";
import { planSweep, runSweep, SWEEP_DEFAULTS } from "./bench/sweep.ts";
import { formatTable } from "./cli/run_table.ts";
import { parseSize } from "./core/units.ts";
import { newRunId } from "./tiers/scratch.ts";
import { DEEPSPEED_VERSIONS, type DeepSpeedVersion } from "./solver/export.ts";
import type { PlanDocument } from "./schema/plan.ts";
import { makePlan } from "./solver/planner.ts";
import { checkPlanDocument } from "./solver/plan_check.ts";
import { replayPlan } from "./bench/replay.ts";
import { readProfile } from "./solver/profile.ts";
import { formatPlan, formatReplay } from "./cli/plan_table.ts";
import type { WorkloadOptions } from "./workloads/common.ts";
import { MODEL_NAMES } from "./workloads/model.ts";
import { WORKLOAD_NAMES, workloadByName } from "./workloads/registry.ts";
import { pathsOf, runWorkload } from "./bench/workload.ts";
import { MATCH_MODES, runCompare } from "./report/compare.ts";
import { writeReport } from "./report/report.ts";
import { resolveSetup, SETUP_DEFAULTS } from "./workloads/setup.ts";
import { formatWorkloadSummaries, formatWorkloadTable } from "./cli/workload_table.ts";
import { formatContentionTable } from "./cli/contention_table.ts";
import { formatSweep } from "./cli/sweep_table.ts";

/** Exit status for usage errors. */
const EXIT_USAGE = 2;
/** Exit status for failed or interrupted runs. */
const EXIT_FAILED = 1;

/** Where the user stood when they typed the command (deno task changes cwd). */
function userCwd(): string {
  return Deno.env.get("INIT_CWD") ?? Deno.cwd();
}

function resolvePath(p: string): string {
  return isAbsolute(p) ? p : join(userCwd(), p);
}

function fail(message: string, code: number): never {
  console.error(`tierbench: ${redactSecrets(message)}`);
  Deno.exit(code);
}

/** Relays SIGINT/SIGTERM to an AbortController for as long as `body` runs. */
async function withSignals<T>(body: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let received: string | undefined;
  const handlers = (["SIGINT", "SIGTERM"] as const).map((sig) => {
    const h = () => {
      if (received) {
        console.error(`tierbench: ${sig} again: still stopping jobs and removing scratch files`);
        return;
      }
      received = sig;
      controller.abort(sig);
    };
    Deno.addSignalListener(sig, h);
    return [sig, h] as const;
  });
  try {
    return await body(controller.signal);
  } finally {
    for (const [sig, h] of handlers) Deno.removeSignalListener(sig, h);
  }
}

/** The tables printed after a run: the runs, and the contention matrix when there is one. */
function formatTables(doc: ResultDocument): string {
  const runs = doc.runs.length > 0 && doc.kind !== "contention" && doc.kind !== "sweep"
    ? [formatTable(doc.runs)]
    : [];
  const sweep = doc.sweep && doc.sweep.tiers.length > 0
    ? [formatSweep(doc.sweep, String(doc.config.deepspeed_version ?? ""))]
    : [];
  const workload = doc.workload && doc.workload.iterations.length > 0
    ? [formatWorkloadTable(doc.workload)]
    : [];
  const matrix = doc.contention && doc.contention.groups.length > 0
    ? [formatContentionTable(doc.contention)]
    : [];
  const workloads = doc.workloads && doc.workloads.length > 0
    ? [formatWorkloadSummaries(doc.workloads)]
    : [];
  return [...runs, ...sweep, ...workload, ...matrix, ...workloads].join("\n");
}

/** Writes the results, prints the table, and exits with the right status. */
async function finish(outcome: SessionOutcome, output: string, signal: AbortSignal): Promise<void> {
  const { doc, error } = outcome;
  if (error instanceof ConfigError) fail(error.message, EXIT_USAGE);
  // a workload that got as far as setting its tiers up has something to show
  const wrote = doc.runs.length > 0 || (doc.workload?.paths.length ?? 0) > 0;
  if (wrote) {
    await writeResult(output, doc);
    console.log(formatTables(doc));
  }
  const where = wrote ? `; ${doc.status === "ok" ? "" : "partial "}results in ${output}` : "";
  if (doc.status === "interrupted" || signal.aborted) {
    fail(
      `interrupted by ${String(signal.reason ?? "a signal")}${where}; scratch files removed`,
      EXIT_FAILED,
    );
  }
  if (doc.status !== "ok") {
    const cause = error instanceof Error ? error.message : doc.error ?? "run failed";
    fail(`${cause}${where}`, EXIT_FAILED);
  }
  console.log(`results: ${output}`);
}

function defaultOutput(runId: string): string {
  return join(userCwd(), "results", `${Deno.hostname()}-${runId}.json`);
}

/** A step after the runs (the contention matrix of `bench`), on a document that ended ok. */
type AfterRuns = (
  doc: ResultDocument,
  signal: AbortSignal,
  onProgress: (p: RunProgress) => void,
) => Promise<SessionOutcome>;

/** Runs jobs under signal handling with a progress line, then writes and reports. */
async function runAndReport(
  jobs: JobOptions[],
  kind: ResultDocument["kind"],
  o: { output?: string | undefined; quiet: boolean },
  remote?: ResultDocument["remote"],
  after?: AfterRuns,
): Promise<void> {
  const runId = newRunId();
  const output = o.output ? resolvePath(o.output) : defaultOutput(runId);
  const progress = new ProgressLine(o.quiet);
  await withSignals(async (signal) => {
    const onProgress = (p: RunProgress) => progress.update(p);
    let outcome = await runSession(jobs, {
      kind,
      runId,
      config: { command: kind === "run" ? "run" : "bench", jobs },
      signal,
      onProgress,
      ...(remote ? { remote } : {}),
    });
    if (after && outcome.doc.status === "ok" && !signal.aborted) {
      outcome = await after(outcome.doc, signal, onProgress);
    }
    progress.stop();
    await finish(outcome, output, signal);
  });
}

/** A default such as 1e8 as `--help` shows it ("1e8", not "100000000" or "1e+8"). */
function exponent(n: number): string {
  return n.toExponential().replace("+", "");
}

/** Splits `--tiers` text into tier specs, directories resolved from where the user stands. */
function parseTierList(text: string): TierSpec[] {
  return text.split(",").map((t) => t.trim()).filter((t) => t !== "").map((t) => {
    const spec = parseTierSpec(t);
    return spec.kind === "s3" || spec.kind === "null"
      ? spec
      : { ...spec, path: resolvePath(spec.path) };
  });
}

/** The training workloads of the node profile: an optimizer and an activation workload. */
const BENCH_WORKLOADS = ["zero-infinity", "mlp-offload", "ssdtrain"] as const;
/** Their setup: the 70B shape, scaled down to run in seconds. */
const BENCH_SETUP = { model: "70b", scale: 0.0005, iterations: 2, warmup: 1 } as const;
const BENCH_SETUP_TEXT =
  `${BENCH_SETUP.model} at scale ${BENCH_SETUP.scale}, ${BENCH_SETUP.iterations} iterations ` +
  "after a warm-up; mlp-offload only with a remote tier";

/**
 * `bench`'s step after the matrix: short training workloads on the profiled
 * tiers, into the profile's `workloads` field; those whose paths the node
 * lacks (mlp-offload without a remote tier) are left out.
 */
function benchWorkloads(tiers: TierSpec[], endpoint: string | undefined): AfterRuns {
  return async (doc, signal) => {
    doc.workloads = [];
    const setup = resolveSetup(BENCH_SETUP);
    // one remote path: the PFS when there is one, else the bucket
    const remote = tiers.find((t) => t.kind === "pfs") ?? tiers.find((t) => t.kind === "s3");
    tiers = tiers.filter((t) => t.kind === "memory" || t.kind === "file" || t === remote);
    const { paths } = pathsOf(tiers);
    for (const name of BENCH_WORKLOADS) {
      const def = workloadByName(name);
      const roles = { host: paths.host, local: paths.local[0], remote: paths.remote };
      if (def.needs.some((r) => r !== "device" && roles[r] === undefined)) continue;
      const out = await runWorkload(def, setup, tiers, {}, {
        signal,
        runId: doc.run_id,
        s3: { endpoint },
      });
      if (out.doc.workload) doc.workloads.push(out.doc.workload);
      doc.finished = new Date().toISOString();
      if (out.doc.status !== "ok") {
        doc.status = out.doc.status;
        doc.error = `workload ${name}: ${out.doc.error ?? out.doc.status}`;
        return { doc, error: new Error(doc.error) };
      }
    }
    return { doc };
  };
}

/**
 * `bench`'s last step: the contention matrix over the tiers it profiled, into
 * the profile's `contention` field. A failure there fails the profile (exit
 * 1) with the points already measured kept.
 */
function benchContention(tiers: TierSpec[], o: ContentionOptions): AfterRuns {
  return async (doc, signal, onProgress) => {
    const out = await runContention(tiers, { ...o, signal, onProgress });
    doc.contention = out.contention;
    doc.finished = new Date().toISOString();
    if (out.contention.status === "ok") return { doc };
    doc.status = out.contention.status;
    const cause = out.error instanceof Error ? out.error.message : out.contention.error;
    doc.error = `contention matrix: ${cause ?? out.contention.status}`;
    // Not a usage error by now: the profile's points are measured and must be written.
    return { doc, error: new Error(doc.error) };
  };
}

const program = new Command()
  .name("tierbench")
  .description("Storage-tier I/O benchmark for LLM training offload")
  .version(VERSION)
  .showHelpAfterError(false)
  .exitOverride()
  .configureOutput({ outputError: () => {} });

program.command("run")
  .description("run one fio-style job on one tier")
  .requiredOption(
    "--tier <spec>",
    "where to do I/O: file:DIR, memory:[DIR] (default /dev/shm), pfs:DIR, s3://BUCKET[/PREFIX], null:",
  )
  .addOption(new Option("--rw <mode>", "access pattern").choices(RW_MODES).default(DEFAULTS.rw))
  .option("--rwmixread <pct>", "percentage of reads for randrw", DEFAULTS.rwmixread)
  .option("--bs <size>", "block size (k, m, g suffixes, binary)", DEFAULTS.bs)
  .option("--size <size>", "size of each job's file", DEFAULTS.size)
  .option("--io-size <size>", "bytes each job moves when not time-based (default: --size)")
  .option("--runtime <seconds>", "measure for this long, looping over the file (time-based)")
  .option("--ramp <seconds>", "warm-up before measuring, excluded from results", DEFAULTS.ramp)
  .option(
    "--iodepth <n>",
    "I/Os in flight per job (file tiers: above 1 needs --engine libaio; s3: requests)",
    DEFAULTS.iodepth,
  )
  .option("--numjobs <n>", "parallel jobs, each on its own file and Worker", DEFAULTS.numjobs)
  .option("--direct", "open files with O_DIRECT (bypass the page cache)", false)
  .addOption(new Option("--engine <name>", "I/O engine").choices(ENGINES).default(DEFAULTS.engine))
  .option("--seed <n>", "seed for random offsets and the read/write mix", DEFAULTS.seed)
  .option("--log-avg-msec <ms>", "interval of the bandwidth time series", DEFAULTS.logAvgMsec)
  .option("--nrfiles <n>", "files per job, blocks striped round-robin over them", DEFAULTS.nrfiles)
  .addOption(
    new Option(
      "--file-layout <layout>",
      "a file set per job, or one shared file with a region each",
    )
      .choices(FILE_LAYOUTS).default(DEFAULTS.fileLayout),
  )
  .option("--filename <file>", "read an existing file instead of laying one out (never written)")
  .option(
    "--allow-device",
    "--filename may be a block device: read only, never written (devices are refused otherwise)",
  )
  .option("--end-fsync", "fsync every file when a job ends (default for pfs)")
  .option("--no-end-fsync", "do not fsync at the end of a job")
  .option(
    "--endpoint <url>",
    "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL)",
  )
  .option("--region <name>", "s3: region to sign for (default: $AWS_REGION, else us-east-1)")
  .option("--object-size <size>", "s3: size of the objects reads GET from (default: --bs)")
  .option("--part-size <size>", "s3: part size of multipart uploads", DEFAULTS.partSize)
  .option(
    "--multipart-threshold <size>",
    "s3: objects larger than this are written by multipart upload",
    DEFAULTS.multipartThreshold,
  )
  .option(
    "--timeout <seconds>",
    "fail the run when one request (an I/O, an S3 request) takes longer than this",
    String(DEFAULT_TIMEOUT_MS / 1000),
  )
  .option(
    "--verify",
    "stamp every block written with a header and checksum, check every block read",
    false,
  )
  .option("--name <name>", "label for the table and results")
  .option("--output <file>", "result JSON (default results/<host>-<run id>.json)")
  .option("--quiet", "no progress line", false)
  .action(async (o) => {
    const job = parseJobOptions({
      timeout: o.timeout,
      name: o.name,
      tier: o.tier,
      rw: o.rw,
      rwmixread: o.rwmixread,
      bs: o.bs,
      size: o.size,
      ioSize: o.ioSize,
      runtime: o.runtime,
      ramp: o.ramp,
      iodepth: o.iodepth,
      numjobs: o.numjobs,
      direct: o.direct,
      engine: o.engine,
      seed: o.seed,
      logAvgMsec: o.logAvgMsec,
      nrfiles: o.nrfiles,
      fileLayout: o.fileLayout,
      endFsync: o.endFsync,
      filename: o.filename === undefined ? undefined : resolvePath(o.filename),
      allowDevice: o.allowDevice,
      verify: o.verify,
      endpoint: o.endpoint,
      region: o.region,
      objectSize: o.objectSize,
      partSize: o.partSize,
      multipartThreshold: o.multipartThreshold,
    });
    await runAndReport([job], "run", o);
  });

program.command("clean")
  .description(
    "remove scratch directories (or S3 prefixes) that runs left behind, e.g. after a crash",
  )
  .requiredOption(
    "--tier <spec>",
    "where runs worked: file:DIR, memory:[DIR], pfs:DIR, s3://BUCKET[/PREFIX]",
  )
  .option("--endpoint <url>", "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, …)")
  .option("--region <name>", "s3: region (default: $AWS_REGION, else us-east-1)")
  .option("--run-id <id>", "only the scratch area of this run (its results' run_id)")
  .action(async (o) => {
    const spec = parseTierSpec(o.tier);
    const report = await cleanScratch(
      spec.kind === "s3" ? spec : { ...spec, path: resolvePath(spec.path) },
      { endpoint: o.endpoint, region: o.region, runId: o.runId },
    );
    for (const line of formatCleanReport(report)) console.log(line);
    const failed = report.failed[0];
    if (failed) fail(`could not remove ${failed.path}: ${failed.error}`, EXIT_FAILED);
  });

program.command("bench")
  .description(
    "profile this node's tiers: a fixed matrix, the contention matrix, short workloads (about 2 minutes)",
  )
  .option("--memory-dir <dir>", "tmpfs directory for the memory tier", DEFAULT_MEMORY_DIR)
  .option("--file-dir <dir>", "directory on the disk to profile (default: the current directory)")
  .option("--no-memory", "skip the memory tier")
  .option("--no-file", "skip the file tier")
  .option("--pfs <dir>", "a directory on a shared mount (default: $TIERBENCH_PFS_DIR)")
  .option("--s3 <url>", "s3://BUCKET[/PREFIX] (default: $TIERBENCH_S3_BUCKET)")
  .option("--endpoint <url>", "S3 endpoint (default: $TIERBENCH_S3_ENDPOINT)")
  .option("--runtime <seconds>", "measured time per point", "3")
  .option("--ramp <seconds>", "warm-up per point, excluded", "1")
  .option("--size <size>", "file size per job", "256m")
  .option("--output <file>", "profile JSON (default results/<host>-<run id>.json)")
  .option("--quiet", "no progress line", false)
  .action(async (o) => {
    const env = remoteFromEnv();
    const pfsDir = o.pfs ?? env.pfsDir;
    const s3 = o.s3 ?? env.s3;
    const profile = {
      memoryDir: o.memory ? o.memoryDir : undefined,
      fileDir: o.file ? resolvePath(o.fileDir ?? ".") : undefined,
      pfsDir: pfsDir === undefined ? undefined : resolvePath(pfsDir),
      s3,
      endpoint: o.endpoint ?? env.endpoint,
      runtime: o.runtime,
      ramp: o.ramp,
      size: o.size,
    };
    const jobs = profileJobs(profile);
    if (!o.quiet) {
      console.error(
        `tierbench: profiling ${jobs.length} points (${o.ramp}s ramp + ${o.runtime}s each)`,
      );
    }
    const configured = [pfsDir && `pfs:${pfsDir}`, s3].filter(Boolean).join(", ");
    const note = configured ? `remote tiers: ${configured}` : `no remote tier: ${REMOTE_HELP}`;
    if (!configured && !o.quiet) console.error(`tierbench: ${note}`);
    const tiers = profileTiers(profile);
    const contention = tiers.length >= 2
      ? benchContention(tiers, {
        runtime: o.runtime,
        ramp: o.ramp,
        size: o.size,
        endpoint: profile.endpoint,
      })
      : undefined;
    if (!o.quiet) {
      console.error(
        contention
          ? `tierbench: then the contention matrix over ${tiers.length} tiers ` +
            `(${contentionGroups(tiers).length} groups, each reading and writing, and ` +
            `${mixedContentionGroups(tiers).length} pairs with one reading while the other writes)`
          : "tierbench: no contention matrix: it needs two tiers or more",
      );
    }
    const workloads = benchWorkloads(tiers, profile.endpoint);
    if (!o.quiet) {
      console.error(`tierbench: then ${BENCH_WORKLOADS.join(", ")} (${BENCH_SETUP_TEXT})`);
    }
    const after: AfterRuns = async (doc, signal, onProgress) => {
      const out = contention ? await contention(doc, signal, onProgress) : { doc };
      if (out.doc.status !== "ok" || signal.aborted) return out;
      return await workloads(out.doc, signal, onProgress);
    };
    await runAndReport(jobs, "profile", o, { configured: configured !== "", note }, after);
  });

program.command("contention")
  .description(
    "measure each tier alone, in pairs and all together (reads, then writes), then each " +
      "pair with one reading while the other writes, and report each tier's slowdown when others run",
  )
  .requiredOption(
    "--tiers <specs>",
    "two tiers or more, comma-separated: memory:[DIR], file:DIR, pfs:DIR, s3://BUCKET[/PREFIX]",
  )
  .option("--runtime <seconds>", "measured time per group", CONTENTION_DEFAULTS.runtime)
  .option("--ramp <seconds>", "warm-up per group, excluded", CONTENTION_DEFAULTS.ramp)
  .option("--size <size>", "each tier's file (objects for s3)", CONTENTION_DEFAULTS.size)
  .option("--bs <size>", "block size of the sequential I/O", CONTENTION_DEFAULTS.bs)
  .option("--iodepth <n>", "I/Os (requests for s3) in flight per tier", CONTENTION_DEFAULTS.iodepth)
  .option("--endpoint <url>", "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, …)")
  .option("--region <name>", "s3: region (default: $AWS_REGION, else us-east-1)")
  .option("--no-mixed", "skip the mixed pairs (one tier reading while another writes)")
  .option("--output <file>", "result JSON (default results/<host>-<run id>.json)")
  .option("--quiet", "no progress line", false)
  .action(async (o) => {
    const tiers = parseTierList(o.tiers);
    const runId = newRunId();
    const output = o.output ? resolvePath(o.output) : defaultOutput(runId);
    const options: ContentionOptions = {
      runtime: o.runtime,
      ramp: o.ramp,
      size: o.size,
      bs: o.bs,
      iodepth: o.iodepth,
      endpoint: o.endpoint,
      region: o.region,
      mixed: o.mixed,
    };
    const progress = new ProgressLine(o.quiet);
    await withSignals(async (signal) => {
      const outcome = await runContentionSession(
        tiers,
        { ...options, runId, signal, onProgress: (p) => progress.update(p) },
        { command: "contention", tiers: tiers.map(formatTierSpec), ...options },
      );
      progress.stop();
      await finish(outcome, output, signal);
    });
  });

program.command("sweep")
  .description(
    "run a grid of bs × iodepth × numjobs on each tier (fixed time or to steady state), " +
      "pick the best setting per tier and print its DeepSpeed aio block",
  )
  .option(
    "--tier <spec>",
    "tier to sweep (repeat it, or a comma list): file:DIR, memory:[DIR], pfs:DIR, s3://BUCKET[/PREFIX], null:",
    (v: string, prev: string[]) => [...prev, v],
    [] as string[],
  )
  .option("--rw <modes>", "access pattern(s), comma list: read, write, randread, …", "read")
  .option("--bs <sizes>", "block sizes, comma list", SWEEP_DEFAULTS.bs)
  .option("--iodepth <list>", "I/Os in flight per job, comma list", SWEEP_DEFAULTS.iodepth)
  .option("--numjobs <list>", "parallel jobs, comma list", SWEEP_DEFAULTS.numjobs)
  .option("--size <size>", "each job's file", SWEEP_DEFAULTS.size)
  .option(
    "--runtime <seconds>",
    `measured time per point (default ${SWEEP_DEFAULTS.runtime}); with --steady the most a point runs (default ${SWEEP_DEFAULTS.steadyRuntime})`,
  )
  .option("--ramp <seconds>", "warm-up per point, excluded", SWEEP_DEFAULTS.ramp)
  .option(
    "--steady",
    "run each point until its bandwidth is steady (fio's bw_slope), at most --runtime",
  )
  .option(
    "--ss-limit <pct>",
    "steady when the bandwidth slope is at most this % of the mean per second",
    SWEEP_DEFAULTS.ssLimit,
  )
  .option(
    "--ss-dur <seconds>",
    "window of the slope test, in one-second samples",
    SWEEP_DEFAULTS.ssDur,
  )
  .option(
    "--no-direct",
    "buffered I/O on file and pfs tiers (default O_DIRECT, as DeepSpeed's aio)",
  )
  .option(
    "--deepspeed-version <v>",
    `DeepSpeed version of the aio block: ${DEEPSPEED_VERSIONS.join(", ")}`,
  )
  .option("--endpoint <url>", "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, …)")
  .option("--region <name>", "s3: region (default: $AWS_REGION, else us-east-1)")
  .option("--output <file>", "result JSON (default results/<host>-<run id>.json)")
  .option("--quiet", "no progress line", false)
  .action(async (o) => {
    const tiers = o.tier.flatMap(parseTierList);
    const plan = planSweep({
      tiers,
      rw: o.rw,
      bs: o.bs,
      iodepth: o.iodepth,
      numjobs: o.numjobs,
      size: o.size,
      runtime: o.runtime,
      ramp: o.ramp,
      steady: o.steady ?? false,
      ssLimit: o.ssLimit,
      ssDur: o.ssDur,
      direct: o.direct,
      deepspeedVersion: o.deepspeedVersion,
      endpoint: o.endpoint,
      region: o.region,
    });
    const runId = newRunId();
    const output = o.output ? resolvePath(o.output) : defaultOutput(runId);
    const points = plan.groups.reduce((n, g) => n + g.jobs.length, 0);
    if (!o.quiet) {
      console.error(
        `tierbench: sweeping ${points} points (${plan.groups.length} tier/pattern grids); ${plan.criterion}`,
      );
    }
    const progress = new ProgressLine(o.quiet);
    await withSignals(async (signal) => {
      const outcome = await runSweep(plan, {
        signal,
        runId,
        onProgress: (p, step) => progress.update(p, step),
        config: {
          command: "sweep",
          tiers: tiers.map(formatTierSpec),
          rw: o.rw,
          bs: o.bs,
          iodepth: o.iodepth,
          numjobs: o.numjobs,
          size: o.size,
          ramp: o.ramp,
          runtime: o.runtime ?? null,
          steady: o.steady ?? false,
          ss_limit_pct: plan.ssLimitPct,
          ss_samples: plan.ssSamples,
          direct: o.direct,
          deepspeed_version: plan.deepspeedVersion,
          criterion: plan.criterion,
        },
      });
      progress.stop();
      await finish(outcome, output, signal);
    });
  });

program.command("workload")
  .description("run a training workload (optimizer, activation or checkpoint I/O) on several tiers")
  .argument("<name>", `one of ${WORKLOAD_NAMES.join(", ")}`)
  .requiredOption(
    "--tiers <specs>",
    "comma list: memory:DIR (host), file:DIR (node-local, one or more), pfs:DIR or s3://BUCKET (remote)",
  )
  .option("--model <name>", `model preset: ${MODEL_NAMES.join(", ")}`, SETUP_DEFAULTS.model)
  .option("--params <n>", "parameter count instead of the preset's (e.g. 7e10)")
  .option("--scale <f>", "factor on every byte count and think time, in (0, 1]", "0.001")
  .option("--iterations <n>", "measured iterations", String(SETUP_DEFAULTS.iterations))
  .option(
    "--warmup <n>",
    "iterations run first, left out of the summary",
    String(SETUP_DEFAULTS.warmup),
  )
  .option(
    "--ranks-per-node <n>",
    "ranks (GPUs) on the node, one Worker each",
    String(SETUP_DEFAULTS.ranksPerNode),
  )
  .option("--tp <n>", "tensor-parallel degree", String(SETUP_DEFAULTS.tensorParallel))
  .option("--dp <n>", "data-parallel degree (default: ranks per node / tp)")
  .option("--micro-batch <n>", "micro-batch size", String(SETUP_DEFAULTS.microBatch))
  .option(
    "--subgroup-size <n>",
    "elements per optimizer subgroup",
    exponent(SETUP_DEFAULTS.subgroupSize),
  )
  .option("--bytes-per-state <n>", "bytes of each optimizer state per parameter (2 or 4)", "4")
  .option(
    "--adam-rate <n>",
    "CPU Adam parameters per second per rank",
    exponent(SETUP_DEFAULTS.adamRate),
  )
  .option(
    "--gpu-tflops <n>",
    "effective GPU TFLOP/s (forward/backward think time)",
    String(SETUP_DEFAULTS.gpuTflops),
  )
  .option("--bs <size>", "request size on storage paths (default: the workload's)")
  .option("--iodepth <n>", "requests in flight per stream (default: the workload's)")
  .option(
    "--readers <n>",
    "node-wide: at most n ranks read a storage path at once, 0 for no limit (default: the workload's; mlp-offload 1)",
  )
  .option(
    "--writers <n>",
    "node-wide: at most n ranks write a storage path at once, 0 for no limit (default: the workload's; mlp-offload 1)",
  )
  .option("--remote-ratio <f>", "mlp-offload: share of subgroups on the remote path")
  .option("--cache-subgroups <n>", "mlp-offload: subgroups per path kept in host memory")
  .option(
    "--remote-cache-subgroups <n>",
    "mlp-offload: subgroups of the remote path kept in host memory (default: --cache-subgroups)",
  )
  .option("--stride <k>", "deep-optimizer-states: every K-th subgroup updates on the device")
  .option("--prefetch <n>", "ssdtrain, teraio: layers read ahead in backward")
  .option("--checkpoint-every <n>", "datastates: checkpoint every N iterations")
  .option("--endpoint <url>", "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, …)")
  .option("--region <name>", "s3: region (default: $AWS_REGION, else us-east-1)")
  .option("--output <file>", "result JSON (default results/<host>-<run id>.json)")
  .option("--quiet", "no progress line", false)
  .action(async (name, o) => {
    let def;
    try {
      def = workloadByName(name);
    } catch (e) {
      fail((e as Error).message, EXIT_USAGE);
    }
    const setup = resolveSetup({
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
    });
    const specs = parseTierList(o.tiers);
    const options = parseWorkloadOptions(o);
    const runId = newRunId();
    const output = o.output ? resolvePath(o.output) : defaultOutput(runId);
    const progress = new ProgressLine(o.quiet);
    await withSignals(async (signal) => {
      const outcome = await runWorkload(def, setup, specs, options, {
        signal,
        runId,
        onProgress: (p) => progress.updateWorkload(name, p),
        s3: { endpoint: o.endpoint, region: o.region },
        config: {
          command: "workload",
          workload: name,
          tiers: specs.map(formatTierSpec),
          setup,
          options,
        },
      });
      progress.stop();
      await finish(outcome, output, signal);
    });
  });

/** Workload options from the CLI: numbers checked, sizes parsed. */
function parseWorkloadOptions(o: {
  bs?: string | undefined;
  iodepth?: string | undefined;
  readers?: string | undefined;
  writers?: string | undefined;
  remoteRatio?: string | undefined;
  cacheSubgroups?: string | undefined;
  remoteCacheSubgroups?: string | undefined;
  stride?: string | undefined;
  prefetch?: string | undefined;
  checkpointEvery?: string | undefined;
}): WorkloadOptions {
  const out: Record<string, number> = {};
  if (o.bs !== undefined) {
    const bs = parseSize(o.bs);
    if (bs === undefined || bs < 4096 || bs % 4096 !== 0) {
      throw new ConfigError(
        "bs",
        `"${o.bs}" is not a size of whole 4 KiB blocks`,
        "e.g. 128k, 1m, 2m",
      );
    }
    out.bs = bs;
  }
  const int = (flag: string, key: string, v: string | undefined, min: number) => {
    if (v === undefined) return;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) {
      throw new ConfigError(flag, `"${v}" is not an integer ≥ ${min}`);
    }
    out[key] = n;
  };
  int("iodepth", "iodepth", o.iodepth, 1);
  int("readers", "readers", o.readers, 0);
  int("writers", "writers", o.writers, 0);
  int("cache-subgroups", "cacheSubgroups", o.cacheSubgroups, 0);
  int("remote-cache-subgroups", "remoteCacheSubgroups", o.remoteCacheSubgroups, 0);
  int("stride", "stride", o.stride, 1);
  int("prefetch", "prefetch", o.prefetch, 1);
  int("checkpoint-every", "checkpointEvery", o.checkpointEvery, 1);
  if (o.remoteRatio !== undefined) {
    const r = Number(o.remoteRatio);
    if (!(r >= 0 && r < 1)) {
      throw new ConfigError("remote-ratio", `"${o.remoteRatio}" is not in [0, 1)`, "e.g. 0.33");
    }
    out.remoteRatio = r;
  }
  return out;
}

program.command("plan")
  .description("plan where optimizer state lives from a profile, with predictions and exports")
  .requiredOption(
    "--profile <file>",
    "a result JSON of bench/contention, or a tierbench/profile@1 document",
  )
  .option("--model <name>", `model preset: ${MODEL_NAMES.join(", ")}`, SETUP_DEFAULTS.model)
  .option("--params <n>", "parameter count instead of the preset's (e.g. 7e10)")
  .option("--ranks-per-node <n>", "ranks (GPUs) on the node", String(SETUP_DEFAULTS.ranksPerNode))
  .option("--tp <n>", "tensor-parallel degree", String(SETUP_DEFAULTS.tensorParallel))
  .option("--dp <n>", "data-parallel degree (default: ranks per node / tp)")
  .option(
    "--subgroup-size <n>",
    "elements per optimizer subgroup",
    exponent(SETUP_DEFAULTS.subgroupSize),
  )
  .option("--bytes-per-state <n>", "bytes of each optimizer state per parameter (2 or 4)", "4")
  .option(
    "--adam-rate <n>",
    "CPU Adam parameters per second per rank (default: the profile's, else 1e9)",
  )
  .option("--host-cache <size>", "host memory the optimizer state may use as cache", "64g")
  .option(
    "--deepspeed-version <v>",
    `DeepSpeed version of the export: ${DEEPSPEED_VERSIONS.join(", ")}`,
  )
  .option(
    "--local-dir <dir>",
    "directory of the node-local path on the training nodes (default: the profile's)",
  )
  .option(
    "--remote-dir <dir>",
    "directory of the remote path on the training nodes (default: the profile's)",
  )
  .option("--output <file>", "plan JSON (default results/plan-<run id>.json)")
  .action(async (o) => {
    const setup = resolveSetup({
      model: o.model,
      parameters: o.params,
      ranksPerNode: o.ranksPerNode,
      tensorParallel: o.tp,
      dataParallel: o.dp,
      subgroupSize: o.subgroupSize,
      bytesPerState: o.bytesPerState,
      ...(o.adamRate !== undefined ? { adamRate: o.adamRate } : {}),
    });
    const hostCache = parseSize(o.hostCache);
    if (hostCache === undefined) {
      throw new ConfigError("host-cache", `"${o.hostCache}" is not a size`, "e.g. 64g, 512g, 0");
    }
    const version = o.deepspeedVersion;
    if (version !== undefined && !(DEEPSPEED_VERSIONS as readonly string[]).includes(version)) {
      throw new ConfigError(
        "deepspeed-version",
        `"${version}" has no verified key set`,
        DEEPSPEED_VERSIONS.join(", "),
      );
    }
    const profile = await readProfile(resolvePath(o.profile));
    const dirs: Record<string, string> = {};
    if (o.localDir) dirs.local = o.localDir;
    if (o.remoteDir) dirs.remote = o.remoteDir;
    const plan = await makePlan(profile, setup, {
      hostCacheBytes: hostCache,
      ...(o.adamRate !== undefined ? { adamRate: setup.adamParamsPerSec } : {}),
      ...(version !== undefined ? { deepspeedVersion: version as DeepSpeedVersion } : {}),
      ...(Object.keys(dirs).length > 0 ? { dirs } : {}),
    });
    const output = o.output
      ? resolvePath(o.output)
      : join(userCwd(), "results", `plan-${newRunId()}.json`);
    await Deno.mkdir(dirname(output), { recursive: true });
    await Deno.writeTextFile(output, stringifyResult(plan) + "\n");
    console.log(formatPlan(plan));
    console.log(`plan: ${output}`);
  });

program.command("replay")
  .description("run a plan as a workload on the real tiers and set measured beside predicted")
  .argument("<plan>", "a plan JSON written by `tierbench plan`")
  .requiredOption(
    "--tiers <specs>",
    "comma list: memory:DIR, file:DIR (the plan's local path), pfs:DIR or s3://BUCKET (its remote path)",
  )
  .option("--scale <f>", "factor on every byte count and think time, in (0, 1]", "0.01")
  .option(
    "--activations",
    "also run the activation plan as ssdtrain on the file tier, and every layer offloaded",
    false,
  )
  .option("--iterations <n>", "measured iterations", String(SETUP_DEFAULTS.iterations))
  .option("--warmup <n>", "iterations run first, left out", String(SETUP_DEFAULTS.warmup))
  .option("--endpoint <url>", "s3: endpoint URL (default: $TIERBENCH_S3_ENDPOINT, …)")
  .option("--region <name>", "s3: region (default: $AWS_REGION, else us-east-1)")
  .option("--output <file>", "result JSON (default results/<host>-<run id>.json)")
  .option("--quiet", "no progress line", false)
  .action(async (planFile, o) => {
    const plan = await readPlan(resolvePath(planFile));
    const scale = Number(o.scale);
    if (!(scale > 0 && scale <= 1)) {
      throw new ConfigError("scale", `"${o.scale}" is not in (0, 1]`, "e.g. 0.01");
    }
    const specs = parseTierList(o.tiers);
    const runId = newRunId();
    const output = o.output ? resolvePath(o.output) : defaultOutput(runId);
    const progress = new ProgressLine(o.quiet);
    await withSignals(async (signal) => {
      const outcome = await replayPlan(plan, specs, {
        scale,
        activations: o.activations,
        iterations: Number(o.iterations),
        warmup: Number(o.warmup),
        signal,
        runId,
        onProgress: (p) => progress.updateWorkload("replay", p),
        s3: { endpoint: o.endpoint, region: o.region },
        config: {
          command: "replay",
          plan: resolvePath(planFile),
          tiers: specs.map(formatTierSpec),
          scale,
        },
      });
      progress.stop();
      const r = outcome.doc.replay;
      if (r) console.log(formatReplay(r));
      await finish(outcome, output, signal);
    });
  });

program.command("report")
  .description("a self-contained HTML report with charts, a Markdown summary and CSV tables")
  .argument("<result>", "a result JSON (run, bench, contention, workload, sweep) or a plan JSON")
  .argument("[plan]", "a plan JSON written by `tierbench plan`, drawn beside the result")
  .option(
    "--output <dir>",
    "directory of report.html, report.md and the CSVs (default results/report-<name>)",
  )
  .action(async (result, plan, o) => {
    const files = await writeReport(
      [result, ...(plan === undefined ? [] : [plan])].map(resolvePath),
      { outDir: o.output === undefined ? undefined : resolvePath(o.output), cwd: userCwd() },
    );
    console.log(`report: ${files.html}`);
    console.log(`summary: ${files.markdown}`);
    if (files.csv.length > 0) console.log(`tables: ${files.csv.join(", ")}`);
  });

program.command("compare")
  .description("result files side by side per tier and pattern, with ratios and better/worse marks")
  .argument("<files...>", "two result JSONs or more; the first is the baseline")
  .option("--match <how>", `match runs by: ${MATCH_MODES.join(", ")}`, "pattern")
  .option("--html <file>", "also write an HTML page with the report's charts overlaid")
  .action(async (files, o) => {
    const html = o.html === undefined ? undefined : resolvePath(o.html);
    const { text } = await runCompare(files.map(resolvePath), { match: o.match, html });
    console.log(text);
    if (html !== undefined) console.log(`html: ${html}`);
  });

/** Reads a plan document, or says in one line why it is not one. */
async function readPlan(path: string): Promise<PlanDocument> {
  let json: unknown;
  try {
    json = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    throw new ConfigError(
      "plan",
      `${path}: cannot be read as JSON (${(e as Error).name})`,
      undefined,
      { cause: e },
    );
  }
  // every field replay reads, so a damaged plan is refused naming the field (exit 2)
  return checkPlanDocument(json, path);
}

/** Runs the CLI on `args`. */
export async function main(args: string[]): Promise<void> {
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return; // --help, --version
      // one line: commander puts its "(Did you mean --tiers?)" on a second
      fail(e.message.replace(/^error: /, "").replace(/\s*\n\s*/g, " "), EXIT_USAGE);
    }
    if (e instanceof ConfigError) fail(e.message, EXIT_USAGE);
    fail(e instanceof Error ? e.message : String(e), EXIT_FAILED);
  }
}

if (import.meta.main) await main(Deno.args);
