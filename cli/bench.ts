/**
 * `tierbench bench`: the node profile — a fixed matrix of jobs on each tier,
 * the contention matrix over them, and short training workloads.
 *
 * ```sh
 * deno task bench
 * ```
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import { DEFAULT_MEMORY_DIR, parseTierSpec, parseTimeout, type TierSpec } from "../core/config.ts";
import { ConfigError, InputError } from "../core/errors.ts";
import { resolveEndpoint } from "../tiers/s3_client.ts";
import { type ContentionOptions, runContention } from "../bench/contention.ts";
import { contentionGroups, mixedContentionGroups } from "../bench/contention_groups.ts";
import {
  CONCURRENCY_DEFAULTS,
  planConcurrency,
  runConcurrency,
  shorterTime,
} from "../bench/concurrency.ts";
import {
  profileJobs,
  type ProfileOptions,
  profileTiers,
  REMOTE_HELP,
  remoteFromEnv,
} from "../bench/node_profile.ts";
import { pathsOf, runWorkload } from "../bench/workload.ts";
import { workloadByName } from "../workloads/registry.ts";
import { resolveSetup } from "../workloads/setup.ts";
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
function benchWorkloads(
  tiers: TierSpec[],
  endpoint: string | undefined,
  checks: { timeoutMs: number; verify: boolean },
): AfterRuns {
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
        ...checks,
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

/** What `bench` passes to {@linkcode runConcurrency}. */
type BenchConcurrency = NonNullable<Parameters<typeof runConcurrency>[1]>;

/**
 * `bench`'s step after the contention matrix: each tier's concurrency curves
 * (bench/concurrency.ts) into the profile's `concurrency` field and their runs
 * into `runs`. A failure there fails the profile with the points measured kept.
 */
function benchConcurrency(tiers: TierSpec[], o: BenchConcurrency): AfterRuns {
  return async (doc, signal, onProgress) => {
    const out = await runConcurrency(tiers, { ...o, signal, onProgress });
    doc.concurrency = out.concurrency;
    doc.runs.push(...out.runs);
    doc.finished = new Date().toISOString();
    if (out.concurrency.status === "ok" && out.error === undefined) return { doc };
    doc.status = out.concurrency.status === "ok" ? "failed" : out.concurrency.status;
    const cause = out.error instanceof Error ? out.error.message : out.concurrency.error;
    doc.error = `concurrency: ${cause ?? out.concurrency.status}`;
    return { doc, error: out.error instanceof Error ? out.error : new Error(doc.error) };
  };
}

/**
 * `bench --quick`: each point 0.5 s measured after no warm-up, on 16 MiB
 * files, and no training workloads; the contention matrix stays, and the
 * concurrency curves at 1 MiB only and at 1 and R processes only (unless
 * `--processes` or `--concurrency-bs` says otherwise), so the profile still
 * carries everything `plan` reads. A smoke test of the node
 * and of the binary, not a profile to plan a real run with.
 */
export const QUICK = { runtime: "0.5", ramp: "0", size: "16m" } as const;

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

/** The `bench` command. */
export function benchCommand() {
  const cmd = new Command("bench")
    .description(
      "profile this node's tiers: a fixed matrix, the contention matrix, each tier's " +
        "concurrency curves, short workloads (several minutes)",
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
      "a quick profile (seconds, not minutes): --runtime 0.5 --ramp 0 --size 16m unless " +
        "given, the concurrency curves at 1 MiB and at 1 and R processes only, and no " +
        "training workloads; for a smoke test, not for planning",
    );
  const measured = addMeasureOptions(addConcurrencyOptions(cmd), {
    runtime: ["measured time per point", "3"],
    ramp: ["warm-up per point, excluded", "1"],
    size: ["file size per job", "256m"],
  });
  const checked = addCheckOptions(
    measured,
    "stamp every block written and check every block read, in every pattern where that holds " +
      "(the randrw points at depth 16 run unchecked); the workloads check every object read back",
  );
  return addOutputOptions(checked, "profile JSON (default results/<host>-<run id>.json)")
    .addOption(outputFormatOption())
    .action(async (options, command) => {
      checkOutputTarget(options);
      const o = { ...options };
      if (o.quick) {
        for (const key of ["runtime", "ramp", "size"] as const) {
          if (command.getOptionValueSource(key) === "default") o[key] = QUICK[key];
        }
      }
      o.ramp = rampOf(o);
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
        timeout: o.timeout,
        verify: o.verify,
      };
      checkBenchInput(o, profile, { pfs: o.pfs === undefined, s3: o.s3 === undefined });
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
      const quickCurves = o.quick && command.getOptionValueSource("processes") === undefined;
      const processes = quickCurves ? [...new Set(["1", o.ranksPerNode])].join(",") : o.processes;
      const contention = tiers.length >= 2
        ? benchContention(tiers, {
          runtime: o.runtime,
          ramp: o.ramp,
          size: o.size,
          endpoint: profile.endpoint,
          timeout: o.timeout,
          verify: o.verify,
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
      if (!o.quiet) {
        console.error(
          contention
            ? `tierbench: then the contention matrix over ${tiers.length} tiers ` +
              `(${contentionGroups(tiers).length} groups, each reading and writing, and ` +
              `${
                mixedContentionGroups(tiers).length
              } pairs with one reading while the other writes)`
            : "tierbench: no contention matrix: it needs two tiers or more",
        );
      }
      const curves = o.concurrency
        ? benchConcurrency(tiers, {
          ranksPerNode: o.ranksPerNode,
          processes,
          bs: o.quick && command.getOptionValueSource("concurrencyBs") === "default"
            ? "1m"
            : o.concurrencyBs,
          runtime: shorterTime(o.runtime, CONCURRENCY_DEFAULTS.runtime),
          ramp: shorterTime(o.ramp, CONCURRENCY_DEFAULTS.ramp),
          size: o.size,
          endpoint: profile.endpoint,
          timeout: o.timeout,
          verify: o.verify,
        })
        : undefined;
      if (!o.quiet) {
        console.error(
          curves
            ? `tierbench: then each tier's concurrency curves (${
              o.processes ?? (quickCurves ? `1 and ${o.ranksPerNode}` : `1 … ${o.ranksPerNode}`)
            } processes, reading, writing and both, at ${
              o.quick && command.getOptionValueSource("concurrencyBs") === "default"
                ? "1m"
                : o.concurrencyBs
            })`
            : "tierbench: --no-concurrency: no concurrency curves",
        );
      }
      const checks = { timeoutMs: parseTimeout(o.timeout), verify: o.verify };
      const workloads = o.quick ? undefined : benchWorkloads(tiers, profile.endpoint, checks);
      if (!o.quiet && !workloads) {
        console.error("tierbench: --quick: no training workloads");
      } else if (!o.quiet) {
        console.error(`tierbench: then ${BENCH_WORKLOADS.join(", ")} (${BENCH_SETUP_TEXT})`);
      }
      const after: AfterRuns = async (doc, signal, onProgress) => {
        let out = contention ? await contention(doc, signal, onProgress) : { doc };
        if (out.doc.status !== "ok" || signal.aborted) return out;
        out = curves ? await curves(out.doc, signal, onProgress) : out;
        if (out.doc.status !== "ok" || signal.aborted) return out;
        return workloads ? await workloads(out.doc, signal, onProgress) : out;
      };
      const remote = { configured: configured !== "", note };
      const launch = launchedBy();
      if (!launch) return await runAndReport(jobs, "profile", o, remote, after);
      const shared = tiers.filter((t) => t.kind === "pfs" || t.kind === "s3");
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
        after,
        tiers: shared,
        scaling: {
          runtime: o.runtime,
          ramp: o.ramp,
          size: o.size,
          endpoint: profile.endpoint,
          verify: o.verify,
        },
      }, o);
    });
}
