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
import type { RunResult } from "../schema/result.ts";
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
  const barrierMs: number[] = [];
  const gatherMs: number[] = [];
  let broken: { error: unknown } | undefined;
  const step = async <T>(fn: () => Promise<T>, waits: number[]): Promise<T> => {
    const t0 = performance.now();
    try {
      const out = await fn();
      waits.push(round3(performance.now() - t0));
      return out;
    } catch (error) {
      broken ??= { error };
      throw error;
    }
  };
  const coordinate: ContentionCoordination = {
    rank: group.rank,
    barrier: (label) => step(() => group.barrier(`the start of ${label}`, timeoutMs), barrierMs),
    share: <T>(value: T) =>
      step(async () => {
        const all = await group.gather(encodeJson(value), NO_DEADLINE_MS);
        const values = all?.map((bytes) => decodeJson<T>(bytes));
        return decodeJson<T[]>(await group.broadcast(encodeJson(values ?? []), timeoutMs));
      }, gatherMs),
    name: (rank) => `rank ${rank} on ${group.members[rank]?.node ?? "an unknown node"}`,
  };
  const outcome = await runContentionSession(specs, {
    ...o,
    runId,
    scratchId: scratchIdOf(runId, group.rank),
    signal,
    coordinate,
  }, config);

  const members = new LostMembers(group);
  const lost = members.list;
  const noteLost = (e: unknown) => members.note(e);
  const mine: Report = {
    ...(outcome.doc.contention ? { contention: outcome.doc.contention } : {}),
    runs: outcome.doc.runs,
    startMs: outcome.startMs,
  };
  let reports: Report[] | undefined;
  if (broken) noteLost(broken.error);
  else {
    try {
      const all = await group.gather(encodeJson(mine), NO_DEADLINE_MS);
      reports = all?.map((bytes) => decodeJson<Report>(bytes));
    } catch (error) {
      broken = { error };
      noteLost(error);
    }
  }
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
  const processes: ClusterProcess<RunResult>[] = group.members.map((m) => {
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
  const runs: ClusterRun[] = [];
  if (reports) {
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
  }
  doc.cluster = clusterSection(group, lost, {
    processes,
    runs,
    coordination: { barrier_ms: barrierMs, gather_ms: gatherMs },
  });
  if (!failOnLost(doc, lost) && broken && doc.status === "ok") {
    doc.status = "failed";
    doc.error = messageOf(broken.error);
  }
  return {
    doc,
    root,
    ...(outcome.error === undefined ? {} : { error: outcome.error }),
  };
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
