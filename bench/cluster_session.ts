/**
 * A session run by every process of a {@linkcode Group} at once (`run`
 * under mpirun, srun or a torchrun-style launcher): one run id for all, each
 * process's scratch under its own `<run id>-r<rank>` name, a barrier before
 * each measured phase so every ramp starts together, and the processes'
 * results gathered to the root, which aggregates them into one document.
 *
 * @module
 */

import type { Group } from "../cluster/types.ts";
import { DEFAULT_TIMEOUT_MS, type JobOptions } from "../core/config.ts";
import { round3 } from "../core/stats.ts";
import type { ClusterRun } from "../schema/cluster.ts";
import type { ResultDocument, RunResult } from "../schema/result.ts";
import type { Tier } from "../tiers/types.ts";
import { type RunStatus, worstStatus } from "../schema/run_status.ts";
import { newRunId } from "../tiers/scratch.ts";
import { aggregateRun, type ProcessRun } from "./cluster_aggregate.ts";
import {
  clusterProcesses,
  clusterSection,
  failOnLost,
  LostMembers,
  removeLostScratch,
  scratchIdOf,
} from "./cluster_document.ts";
import {
  decodeJson,
  encodeJson,
  PhaseError,
  type PhaseOutcome,
  runPhase,
} from "./cluster_phase.ts";
import { type Session, type SessionOptions, type SessionOutcome, withSession } from "./session.ts";

/** What a process of a cluster session ends with; `doc` is the one document on the root. */
export interface ClusterOutcome extends SessionOutcome {
  /** Whether this process writes the document (the root). */
  readonly root: boolean;
}

/**
 * Runs `jobs` in order on every process of `group`, each measured phase
 * started together, and returns on the root one document: `runs` holds each
 * run's aggregate (the common window's bandwidth, merged histograms) and
 * `cluster` every process's own runs and the rule behind each figure. Stops
 * at the first run that fails anywhere; a member lost stops every other one
 * (through `group.lost`), and the document names it. With `stonewalling`
 * the first process to finish a run stops every other one (IOR's). Every process removes
 * its own scratch, and the survivors remove a lost member's where they can
 * reach it (a shared tier, or the same node).
 *
 * @example
 * ```ts ignore
 * const group = await joinGroup(detectLaunch(), { version: VERSION, timeoutMs: 30_000 });
 * const out = await runClusterSession(group, jobs, { kind: "run", config: {} });
 * if (out.root) await writeResult("out.json", out.doc);
 * ```
 */
export async function runClusterSession(
  group: Group,
  jobs: readonly JobOptions[],
  opts: SessionOptions,
  stonewalling = false,
): Promise<ClusterOutcome> {
  const timeoutMs = Math.max(...jobs.map((j) => j.timeoutMs ?? DEFAULT_TIMEOUT_MS));
  const runId = decodeJson<string>(
    await group.broadcast(encodeJson(opts.runId ?? newRunId()), timeoutMs),
  );
  const scratchId = scratchIdOf(runId, group.rank);
  const signal = opts.signal ? AbortSignal.any([opts.signal, group.lost]) : group.lost;
  const runs = new ClusterRuns(group, opts, { timeoutMs, scratchId, signal, stonewalling });
  const outcome = await withSession(
    { kind: opts.kind, config: opts.config, runId, signal },
    (session) => runs.runAll(jobs, session),
  );
  const lost = runs.lost;
  if (lost.list.length > 0) {
    const areas = jobs.map((j) => ({
      tier: j.tier,
      endpoint: j.s3?.endpoint,
      region: j.s3?.region,
    }));
    await removeLostScratch(areas, runId, lost.list);
  }
  const root = lost.writes;
  if (!root) return { ...outcome, root };
  const doc = outcome.doc;
  runs.fillRootDocument(doc);
  return { doc, root, ...(outcome.error === undefined ? {} : { error: outcome.error }) };
}

/** What every run of a cluster session shares. */
interface ClusterRunSetup {
  readonly timeoutMs: number;
  /** This process's scratch name. */
  readonly scratchId: string;
  /** The caller's signal, or a member lost. */
  readonly signal: AbortSignal;
  readonly stonewalling: boolean;
}

/** The runs of a cluster session on this process: what each measured and gathered. */
class ClusterRuns {
  readonly lost: LostMembers;
  readonly #group: Group;
  readonly #opts: SessionOptions;
  readonly #setup: ClusterRunSetup;
  readonly #barrierMs: number[] = [];
  readonly #gatherMs: number[] = [];
  /** This process's own results, run by run. */
  readonly #mine: RunResult[] = [];
  readonly #startMs: number[] = [];
  /** On the root: every process's result of each run gathered. */
  readonly #gathered: ProcessRun[][] = [];

  constructor(group: Group, opts: SessionOptions, setup: ClusterRunSetup) {
    this.#group = group;
    this.#opts = opts;
    this.#setup = setup;
    this.lost = new LostMembers(group);
  }

  /** The session's body: `jobs` in order, until one fails anywhere. */
  async runAll(jobs: readonly JobOptions[], { doc, tier: open }: Session): Promise<RunStatus> {
    if (this.#opts.remote) doc.remote = this.#opts.remote;
    for (const [i, job] of jobs.entries()) {
      if (this.#setup.signal.aborted) return statusOnAbort(this.lost.note());
      const tier = await open(job.tier, job.s3, this.#setup.scratchId);
      this.#opts.onRunStart?.(job, i);
      const status = await this.#runOne(doc, tier, job, i);
      if (status !== "ok") return status;
    }
    return "ok";
  }

  /** Runs `job` on every process, started together; whether everyone may go on. */
  async #runOne(doc: ResultDocument, tier: Tier, job: JobOptions, i: number): Promise<RunStatus> {
    const phase = await this.#phase(doc, tier, job);
    if (phase === undefined) return "failed";
    this.#mine.push(phase.run!);
    this.#startMs.push(phase.startMs);
    this.#barrierMs.push(phase.barrierMs);
    this.#gatherMs.push(phase.gatherMs);
    if (phase.parts) this.#gathered.push(phase.parts);
    const result = phase.run!;
    const reports = phase.parts;
    // The root decides for everyone: go on only when every process's run was ok.
    const verdict = reports ? worstStatus(reports.map((p) => p.run.status)) : "ok";
    let status: RunStatus;
    try {
      status = decodeJson<RunStatus>(
        await this.#group.broadcast(encodeJson(verdict), this.#setup.timeoutMs),
      );
    } catch (e) {
      if (this.lost.note(e)) return "failed";
      throw e;
    }
    if (status !== "ok") {
      const failed = this.#gathered[i]?.find((p) => p.run.error !== undefined);
      if (failed) doc.error = `rank ${failed.rank} on ${failed.node}: ${failed.run.error}`;
      else if (result.error !== undefined) doc.error = result.error;
    }
    return status;
  }

  /**
   * The phase of `job` on this process; undefined when it failed (what this
   * process ran is kept, and the document names the failure unless a member
   * was lost).
   */
  async #phase(
    doc: ResultDocument,
    tier: Tier,
    job: JobOptions,
  ): Promise<PhaseOutcome | undefined> {
    const { timeoutMs, signal, stonewalling } = this.#setup;
    const onProgress = this.#opts.onProgress;
    try {
      return await runPhase(this.#group, {
        name: `the start of run ${job.name}`,
        tier,
        job,
        timeoutMs,
        hooks: { signal, ...(onProgress ? { onProgress } : {}) },
        ...(stonewalling ? { stonewalling } : {}),
      });
    } catch (e) {
      if (!(e instanceof PhaseError)) throw e;
      if (e.run) {
        this.#mine.push(e.run);
        this.#startMs.push(0);
      }
      if (this.lost.note(e.cause)) return undefined;
      doc.error = e.message;
      return undefined;
    }
  }

  /**
   * The root's document: each run's aggregate in `runs`, every process's own
   * runs in `cluster`, and the run failed when a member was lost.
   */
  fillRootDocument(doc: ResultDocument): void {
    const group = this.#group;
    const processes = clusterProcesses(group);
    const runs: ClusterRun[] = [];
    const aggregates: RunResult[] = [];
    for (const parts of this.#gathered) {
      for (const p of parts) {
        processes[p.rank]!.runs.push(p.run);
        processes[p.rank]!.start_ms.push(round3(p.startMs));
      }
      const { run, section } = aggregateRun(parts);
      aggregates.push(run);
      runs.push(section);
    }
    // A run that was not gathered (a member lost during it): this process's own figures only.
    for (const [i, run] of this.#mine.entries()) {
      if (i < this.#gathered.length) continue;
      processes[group.rank]!.runs.push(run);
      processes[group.rank]!.start_ms.push(round3(this.#startMs[i] ?? 0));
    }
    doc.runs = aggregates;
    const stonewalling = this.#setup.stonewalling;
    doc.cluster = clusterSection(group, this.lost.list, {
      processes,
      runs,
      ...(stonewalling ? { stonewalling } : {}),
      coordination: {
        barrier_ms: this.#barrierMs.map(round3),
        gather_ms: this.#gatherMs.map(round3),
      },
    });
    failOnLost(doc, this.lost.list);
  }
}

function statusOnAbort(wasLost: boolean): RunStatus {
  return wasLost ? "failed" : "interrupted";
}
