/**
 * `bench`'s steps after its points — the contention matrix, the concurrency
 * curves, the training workloads — and the clock that times each phase.
 *
 * @module
 */

import process from "node:process";
import type { TierSpec } from "../core/config.ts";
import { type ContentionOptions, runContention } from "../bench/contention.ts";
import { runConcurrency } from "../bench/concurrency.ts";
import { pathsOf, runWorkload } from "../bench/workload.ts";
import type { ResultDocument } from "../schema/result.ts";
import { workloadByName } from "../workloads/registry.ts";
import { resolveSetup } from "../workloads/setup.ts";
import type { AfterRuns } from "./_session.ts";

/** The training workloads of the node profile: an optimizer and an activation workload. */
export const BENCH_WORKLOADS = ["zero-infinity", "mlp-offload", "ssdtrain"] as const;
/** Their setup: the 70B shape, scaled down to run in seconds. */
const BENCH_SETUP = { model: "70b", scale: 0.0005, iterations: 2, warmup: 1 } as const;
/** The setup in words, for the line that says what `bench` runs. */
export const BENCH_SETUP_TEXT =
  `${BENCH_SETUP.model} at scale ${BENCH_SETUP.scale}, ${BENCH_SETUP.iterations} iterations ` +
  "after a warm-up; mlp-offload only with a remote tier";

/**
 * `bench`'s step after the curves: short training workloads on the profiled
 * tiers, into the profile's `workloads` field; those whose paths the node
 * lacks (mlp-offload without a remote tier) are left out.
 */
export function benchWorkloads(
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
 * `bench`'s step after its points: the contention matrix over the tiers it
 * profiled, into the profile's `contention` field. A failure there fails the
 * profile (exit 1) with the points already measured kept.
 */
export function benchContention(tiers: TierSpec[], o: ContentionOptions): AfterRuns {
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
export function benchConcurrency(tiers: TierSpec[], o: BenchConcurrency): AfterRuns {
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
 * Times `bench`'s phases: wall-clock time and the process's CPU time (every
 * thread, so every job's Worker) since the clock was made or last lapped,
 * into the document's `phases`.
 *
 * @example
 * ```ts ignore
 * const clock = new PhaseClock();
 * // … the patterns run …
 * clock.lap(doc, "patterns"); // doc.phases: [{ name: "patterns", wall_ms, cpu_ms }]
 * ```
 */
export class PhaseClock {
  #wall = performance.now();
  #cpu = process.cpuUsage();

  /** Ends the phase `name` now and starts the next. */
  lap(doc: ResultDocument, name: string): void {
    const wall = performance.now();
    const cpu = process.cpuUsage(this.#cpu);
    (doc.phases ??= []).push({
      name,
      wall_ms: Math.round(wall - this.#wall),
      cpu_ms: Math.round((cpu.user + cpu.system) / 1000),
    });
    this.#wall = wall;
    this.#cpu = process.cpuUsage();
  }
}
