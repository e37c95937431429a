/**
 * `contention` run by every process of a {@linkcode Group} at once (under
 * mpirun, srun or a torchrun-style launcher): every process runs the same
 * matrix on its own node's tiers, its scratch named with the shared run id
 * and its rank, so on a shared tier the nodes contend with each other too.
 * Each phase starts at a barrier; the processes decide together whether to
 * go on or run a group again; at the end the root sums the matrices into one
 * document (docs/multinode.md, "`contention` across nodes").
 *
 * @module
 */

import { type Group, NO_DEADLINE_MS } from "../cluster/types.ts";
import type { TierSpec } from "../core/config.ts";
import { round3 } from "../core/stats.ts";
import type { ClusterProcess, ClusterRun } from "../schema/cluster.ts";
import type { ContentionResult } from "../schema/contention.ts";
import type { ResultDocument, RunResult } from "../schema/result.ts";
import { worstStatus } from "../schema/run_status.ts";
import { newRunId } from "../tiers/scratch.ts";
import { aggregateRun, type ProcessRun } from "./cluster_aggregate.ts";
import {
  clusterSection,
  failOnLost,
  LostMembers,
  removeLostScratch,
  scratchIdOf,
} from "./cluster_document.ts";
import { decodeJson, encodeJson } from "./cluster_phase.ts";
import type { ClusterOutcome } from "./cluster_session.ts";
import {
  type ContentionCoordination,
  type ContentionOptions,
  contentionScratchId,
  runContentionSession,
} from "./contention.ts";
import { aggregateContention } from "./contention_aggregate.ts";
import { tierLabels } from "./contention_groups.ts";
import { errorLine } from "../core/errors.ts";

/** What a process sends the root at the end. */
interface Report {
  contention?: ContentionResult;
  runs: RunResult[];
  startMs: number[];
}

/**
 * Runs the contention matrix over `specs` on every process of `group` at
 * once and returns, on the root, one document: `contention` the processes'
 * matrices summed, `runs` each run's aggregate over the common window, and
 * `cluster` the processes with their own runs and matrices. A failure on
 * one process stops every process at the same point; a member lost or late
 * stops the others at once, and the root (the lowest live rank when rank 0
 * was lost) writes what it has, naming the member. Every process removes
 * its own scratch, and the survivors a lost member's where they can reach it.
 *
 * @example
 * ```ts ignore
 * const out = await runContentionAcross(group, specs, { runtime: "1" }, {}, 30_000);
 * if (out.root) await writeResult("out.json", out.doc);
 * ```
 */
export async function runContentionAcross(
  group: Group,
  specs: readonly TierSpec[],
  o: ContentionOptions,
  config: Record<string, unknown>,
  timeoutMs: number,
): Promise<ClusterOutcome> {
  const runId = decodeJson<string>(
    await group.broadcast(encodeJson(o.runId ?? newRunId()), timeoutMs),
  );
  const signal = o.signal ? AbortSignal.any([o.signal, group.lost]) : group.lost;
  const steps = new Steps(group, timeoutMs);
  const outcome = await runContentionSession(specs, {
    ...o,
    runId,
    scratchId: scratchIdOf(runId, group.rank),
    signal,
    coordinate: steps.coordinate,
  }, config);

  const members = new LostMembers(group);
  const lost = members.list;
  const mine: Report = {
    ...(outcome.doc.contention ? { contention: outcome.doc.contention } : {}),
    runs: outcome.doc.runs,
    startMs: outcome.startMs,
  };
  const reports = await gatherReports(group, members, steps, mine);
  if (lost.length > 0) {
    const labels = tierLabels(specs);
    const areas = specs.map((tier, i) => ({
      tier,
      endpoint: o.endpoint,
      region: o.region,
      scratchId: (rank: number) => contentionScratchId(scratchIdOf(runId, rank), tier, labels[i]!),
    }));
    await removeLostScratch(areas, runId, lost);
  }
  const root = members.writes;
  if (!root) return { ...outcome, root };

  const doc = outcome.doc;
  // Out of step (a member lost or late): only this process's own figures.
  const byRank: (Report | undefined)[] = reports ??
    group.members.map((m) => (m.rank === group.rank ? mine : undefined));
  const runs = reports ? sumReports(group, doc, reports) : [];
  doc.cluster = clusterSection(group, lost, {
    processes: processesOf(group, byRank),
    runs,
    coordination: { barrier_ms: steps.barrierMs, gather_ms: steps.gatherMs },
  });
  if (!failOnLost(doc, lost) && steps.broken && doc.status === "ok") {
    doc.status = "failed";
    doc.error = errorLine(steps.broken.error);
  }
  return {
    doc,
    root,
    ...(outcome.error === undefined ? {} : { error: outcome.error }),
  };
}

/**
 * The processes' steps together (barriers and shares), each one's wait
 * recorded; the first that failed breaks the group for the rest of the run.
 */
class Steps {
  readonly barrierMs: number[] = [];
  readonly gatherMs: number[] = [];
  broken: { error: unknown } | undefined;
  /** The contention matrix's way to step with the other processes. */
  readonly coordinate: ContentionCoordination;

  constructor(group: Group, timeoutMs: number) {
    this.coordinate = {
      rank: group.rank,
      barrier: (label) =>
        this.#step(() => group.barrier(`the start of ${label}`, timeoutMs), this.barrierMs),
      share: <T>(value: T) =>
        this.#step(async () => {
          const all = await group.gather(encodeJson(value), NO_DEADLINE_MS);
          const values = all?.map((bytes) => decodeJson<T>(bytes));
          return decodeJson<T[]>(await group.broadcast(encodeJson(values ?? []), timeoutMs));
        }, this.gatherMs),
      name: (rank) => `rank ${rank} on ${group.members[rank]?.node ?? "an unknown node"}`,
    };
  }

  async #step<T>(fn: () => Promise<T>, waits: number[]): Promise<T> {
    const t0 = performance.now();
    try {
      const out = await fn();
      waits.push(round3(performance.now() - t0));
      return out;
    } catch (error) {
      this.broken ??= { error };
      throw error;
    }
  }
}

/**
 * Every process's report, gathered to the root (undefined elsewhere, and
 * when the group is broken: the loss noted instead).
 */
async function gatherReports(
  group: Group,
  members: LostMembers,
  steps: Steps,
  mine: Report,
): Promise<Report[] | undefined> {
  if (steps.broken) {
    members.note(steps.broken.error);
    return undefined;
  }
  try {
    const all = await group.gather(encodeJson(mine), NO_DEADLINE_MS);
    return all?.map((bytes) => decodeJson<Report>(bytes));
  } catch (error) {
    steps.broken = { error };
    members.note(error);
    return undefined;
  }
}

/** Each process with its own runs and matrix, for `cluster.processes`. */
function processesOf(
  group: Group,
  byRank: readonly (Report | undefined)[],
): ClusterProcess<RunResult>[] {
  return group.members.map((m) => {
    const r = byRank[m.rank];
    return {
      rank: m.rank,
      node: m.node,
      host: m.host,
      pid: m.pid,
      runs: r?.runs ?? [],
      start_ms: (r?.startMs ?? []).map(round3),
      ...(r?.contention ? { contention: r.contention } : {}),
    };
  });
}

/**
 * The root's sums over every process: `contention` the matrices summed,
 * `runs` each run's aggregate, and the document's status the worst of the
 * matrices'. Each run's section for `cluster.runs`.
 */
function sumReports(group: Group, doc: ResultDocument, reports: readonly Report[]): ClusterRun[] {
  const runs: ClusterRun[] = [];
  const matrices = reports.map((r) => r.contention).filter((c) => c !== undefined);
  if (matrices.length === reports.length && matrices.length > 0) {
    doc.contention = aggregateContention(matrices);
  }
  const aggregates: RunResult[] = [];
  const count = Math.min(...reports.map((r) => r.runs.length));
  for (let k = 0; k < count; k++) {
    const parts: ProcessRun[] = reports.map((r, rank) => ({
      rank,
      node: group.members[rank]!.node,
      startMs: r.startMs[k] ?? 0,
      run: r.runs[k]!,
    }));
    const { run, section } = aggregateRun(parts);
    aggregates.push(run);
    runs.push(section);
  }
  doc.runs = aggregates;
  const status = worstStatus([doc.status, ...matrices.map((c) => c.status)]);
  if (status !== doc.status) {
    doc.status = status;
    const error = doc.contention?.error ?? matrices.find((c) => c.error)?.error;
    if (error !== undefined) doc.error ??= error;
  }
  return runs;
}
