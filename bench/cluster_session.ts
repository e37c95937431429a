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
import type { RunResult } from "../schema/result.ts";
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
import { type SessionOptions, type SessionOutcome, withSession } from "./session.ts";

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
  const barrierMs: number[] = [];
  const gatherMs: number[] = [];
  const mine: RunResult[] = [];
  const startMs: number[] = [];
  const gathered: ProcessRun[][] = [];
  const lost = new LostMembers(group);

  const outcome = await withSession(
    { kind: opts.kind, config: opts.config, runId, signal },
    async ({ doc, tier: open }) => {
      if (opts.remote) doc.remote = opts.remote;
      for (const [i, job] of jobs.entries()) {
        if (signal.aborted) return statusOnAbort(lost.note());
        const tier = await open(job.tier, job.s3, scratchId);
        opts.onRunStart?.(job, i);
        let phase: PhaseOutcome;
        try {
          phase = await runPhase(group, {
            name: `the start of run ${job.name}`,
            tier,
            job,
            timeoutMs,
            hooks: { signal, ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) },
            ...(stonewalling ? { stonewalling } : {}),
          });
        } catch (e) {
          if (!(e instanceof PhaseError)) throw e;
          if (e.run) {
            mine.push(e.run);
            startMs.push(0);
          }
          if (lost.note(e.cause)) return "failed";
          doc.error = e.message;
          return "failed";
        }
        mine.push(phase.run!);
        startMs.push(phase.startMs);
        barrierMs.push(phase.barrierMs);
        gatherMs.push(phase.gatherMs);
        if (phase.parts) gathered.push(phase.parts);
        const result = phase.run!;
        const reports = phase.parts;
        // The root decides for everyone: go on only when every process's run was ok.
        const verdict = reports ? worstStatus(reports.map((p) => p.run.status)) : "ok";
        let status: RunStatus;
        try {
          status = decodeJson<RunStatus>(await group.broadcast(encodeJson(verdict), timeoutMs));
        } catch (e) {
          if (lost.note(e)) return "failed";
          throw e;
        }
        if (status !== "ok") {
          const failed = gathered[i]?.find((p) => p.run.error !== undefined);
          if (failed) doc.error = `rank ${failed.rank} on ${failed.node}: ${failed.run.error}`;
          else if (result.error !== undefined) doc.error = result.error;
          return status;
        }
      }
      return "ok";
    },
  );
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
  const processes = clusterProcesses(group);
  const runs: ClusterRun[] = [];
  const aggregates: RunResult[] = [];
  for (const parts of gathered) {
    for (const p of parts) {
      processes[p.rank]!.runs.push(p.run);
      processes[p.rank]!.start_ms.push(round3(p.startMs));
    }
    const { run, section } = aggregateRun(parts);
    aggregates.push(run);
    runs.push(section);
  }
  // A run that was not gathered (a member lost during it): this process's own figures only.
  for (const [i, run] of mine.entries()) {
    if (i < gathered.length) continue;
    processes[group.rank]!.runs.push(run);
    processes[group.rank]!.start_ms.push(round3(startMs[i] ?? 0));
  }
  doc.runs = aggregates;
  doc.cluster = clusterSection(group, lost.list, {
    processes,
    runs,
    ...(stonewalling ? { stonewalling } : {}),
    coordination: { barrier_ms: barrierMs.map(round3), gather_ms: gatherMs.map(round3) },
  });
  failOnLost(doc, lost.list);
  return { doc, root, ...(outcome.error === undefined ? {} : { error: outcome.error }) };
}

function statusOnAbort(wasLost: boolean): RunStatus {
  return wasLost ? "failed" : "interrupted";
}
