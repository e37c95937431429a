/**
 * A training workload run by every process of a {@linkcode Group} at once
 * (`workload` under mpirun, srun or a torchrun-style launcher): each process
 * is one node's share — its node's ranks on its own local tiers, and on the
 * shared remote path under its own scratch name — and every node starts its
 * first iteration at one barrier after its layout. Iterations then run
 * freely per node; the per-path limits (`--readers`, `--writers`) hold per
 * process, and MLP-Offload's read and write locks are flock files under
 * /dev/shm, node-wide as the real system's are. At the
 * end each process's result goes to the root, which writes one document: the
 * aggregate (bench/workload_aggregate.ts) and, in `cluster`, every node's own
 * result.
 *
 * @module
 */

import { type Group, NO_DEADLINE_MS } from "../cluster/types.ts";
import { DEFAULT_TIMEOUT_MS, type TierSpec } from "../core/config.ts";
import { round3 } from "../core/stats.ts";
import type { ClusterWorkload } from "../schema/cluster.ts";
import type { ResultDocument } from "../schema/result.ts";
import { type RunStatus, worstStatus } from "../schema/run_status.ts";
import type { WorkloadResult } from "../schema/workload.ts";
import { newRunId } from "../tiers/scratch.ts";
import type { WorkloadDefinition, WorkloadOptions } from "../workloads/common.ts";
import type { TrainingSetup } from "../workloads/setup.ts";
import {
  clusterProcesses,
  clusterSection,
  failOnLost,
  type LostMember,
  LostMembers,
  removeLostScratch,
  scratchIdOf,
} from "./cluster_document.ts";
import { decodeJson, encodeJson } from "./cluster_phase.ts";
import type { ClusterOutcome } from "./cluster_session.ts";
import { runWorkload, type RunWorkloadOptions, type WorkloadOutcome } from "./workload.ts";
import { removeLockDir, runLockDir } from "./_node_lock.ts";
import { aggregateWorkloads } from "./workload_aggregate.ts";
import { errorLine } from "../core/errors.ts";

/** Options of {@linkcode runClusterWorkload}: those of runWorkload that a group leaves open. */
export type ClusterWorkloadOptions = Omit<
  RunWorkloadOptions,
  "scratchId" | "beforeStart" | "lockDir"
>;

/**
 * How long the start barrier waits for the slowest node's layout: a day. A
 * lost member ends the wait at once.
 */
const START_WAIT_MS = 24 * 60 * 60 * 1000;

/** What a process sends the root at the end. */
interface WorkloadReport {
  status: RunStatus;
  error?: string;
  workload?: WorkloadResult;
}

/**
 * Runs `def` on every process of `group`, each process one node's share,
 * and returns on the root one document. A member lost stops every other one
 * (through `group.lost`); the root (or, when rank 0 was lost, the lowest live
 * rank) writes what it has, and `cluster.lost` names the rank. Every process
 * removes its own scratch, and the survivors a lost member's where they can
 * reach it.
 *
 * @example
 * ```ts ignore
 * const group = await joinGroup(detectLaunch(), { version: VERSION, timeoutMs: 30_000 });
 * const out = await runClusterWorkload(group, zeroInfinity, setup, specs);
 * if (out.root) await writeResult("out.json", out.doc);
 * ```
 */
export async function runClusterWorkload(
  group: Group,
  def: WorkloadDefinition,
  setup: TrainingSetup,
  specs: readonly TierSpec[],
  workloadOptions: WorkloadOptions = {},
  opts: ClusterWorkloadOptions = {},
): Promise<ClusterOutcome> {
  const timeoutMs = DEFAULT_TIMEOUT_MS;
  const runId = decodeJson<string>(
    await group.broadcast(encodeJson(opts.runId ?? newRunId()), timeoutMs),
  );
  const signal = opts.signal ? AbortSignal.any([opts.signal, group.lost]) : group.lost;
  const members = new LostMembers(group);
  const lost = members.list;
  const start = new StartBarrier(group, `the start of workload ${def.name}`);
  // The node's processes share one lock folder (mlp-offload's locks), removed once all are done.
  const lockDir = runLockDir(`${runId}-${group.members[group.rank]!.node}`);
  const outcome = await runWorkload(def, setup, specs, workloadOptions, {
    ...opts,
    runId,
    lockDir,
    signal,
    scratchId: scratchIdOf(runId, group.rank),
    beforeStart: start.meet,
  });
  // What group.lost names first is the cause; a hub that gave up after it may look lost too.
  members.note();
  const broken = await keepInStep(start, members, outcome);
  const doc = outcome.doc;
  const mine: WorkloadReport = {
    status: doc.status,
    ...(doc.error !== undefined ? { error: doc.error } : {}),
    ...(doc.workload ? { workload: doc.workload } : {}),
  };
  const gathered = !broken && lost.length === 0
    ? await gatherReports(group, members, mine, doc)
    : undefined;
  if (gathered) {
    // every process has gathered, so no rank opens a lock file again once this barrier is met
    try {
      await group.barrier(`the end of workload ${def.name}`, timeoutMs);
    } catch (e) {
      members.note(e);
    }
  }
  await removeLockDir(lockDir);
  if (lost.length > 0) {
    const areas = specs.map((tier) => ({
      tier,
      endpoint: opts.s3?.endpoint,
      region: opts.s3?.region,
    }));
    await removeLostScratch(areas, runId, lost);
  }
  // The writer moves off the root only when the root was the first loss seen here.
  const root = members.writes;
  if (!root) {
    if (lost.length === 0) return { ...outcome, doc, root };
    doc.status = "failed";
    doc.error = lost[0]!.error;
    return { doc, root };
  }
  if (writeRootDocument(group, lost, doc, mine, gathered, start)) return { doc, root };
  return { doc, root, ...(outcome.error === undefined ? {} : { error: outcome.error }) };
}

/**
 * The barrier every node meets at after its layout: the slowest node's
 * layout sets when everyone starts.
 */
class StartBarrier {
  /** Whether this process came to it. */
  met = false;
  /** Whether every process met there. */
  released = false;
  /** How long this process waited there. */
  ms = 0;

  constructor(readonly group: Group, readonly phase: string) {}

  readonly meet = async (): Promise<void> => {
    this.met = true;
    const t0 = performance.now();
    await this.group.barrier(this.phase, START_WAIT_MS);
    this.ms = performance.now() - t0;
    this.released = true;
  };
}

/**
 * After the run, keeps the group in step: a process that ended before its
 * ranks laid out (a tier that would not set up) still meets at the start
 * barrier. Whether the group is broken (a member lost).
 */
async function keepInStep(
  start: StartBarrier,
  members: LostMembers,
  outcome: WorkloadOutcome,
): Promise<boolean> {
  if (!start.met) {
    try {
      await start.meet();
    } catch (e) {
      members.note(e);
      return true;
    }
    return false;
  }
  return outcome.error !== undefined && members.note(outcome.error);
}

/** Every process's report, gathered to the root. */
interface Gathered {
  /** On the root, by rank; elsewhere undefined. */
  readonly reports: WorkloadReport[] | undefined;
  readonly ms: number;
}

/**
 * Gathers every process's report to the root; undefined when the gather
 * failed (the document failed with its error, unless a member was lost).
 */
async function gatherReports(
  group: Group,
  members: LostMembers,
  mine: WorkloadReport,
  doc: ResultDocument,
): Promise<Gathered | undefined> {
  const t0 = performance.now();
  try {
    const reports = (await group.gather(encodeJson(mine), NO_DEADLINE_MS))?.map((b) =>
      decodeJson<WorkloadReport>(b)
    );
    return { reports, ms: performance.now() - t0 };
  } catch (e) {
    if (!members.note(e)) {
      doc.status = "failed";
      doc.error = errorLine(e);
    }
    return undefined;
  }
}

/**
 * The root's document: the aggregate of the processes that ended ok, every
 * process's own result in `cluster`, and the run failed when a member was
 * lost or a process did not end ok. Whether it failed for a member lost.
 */
function writeRootDocument(
  group: Group,
  lost: readonly LostMember[],
  doc: ResultDocument,
  mine: WorkloadReport,
  gathered: Gathered | undefined,
  start: StartBarrier,
): boolean {
  const reports = gathered?.reports;
  // Without a gather (a member lost), this process's own result is all there is.
  const parts = reports ?? group.members.map((_, r) => (r === group.rank ? mine : undefined));
  const shares = sharesOf(group, parts);
  aggregateShares(doc, shares, group.size);
  doc.cluster = clusterSection(group, lost, {
    processes: clusterProcesses(group),
    runs: [],
    workloads_per_process: shares,
    coordination: {
      barrier_ms: start.released ? [round3(start.ms)] : [],
      gather_ms: gathered?.reports ? [round3(gathered.ms)] : [],
    },
  });
  if (failOnLost(doc, lost)) return true;
  const failed = parts.findIndex((p) => p !== undefined && p.status !== "ok");
  if (failed >= 0 && doc.status === "ok") {
    const p = parts[failed]!;
    doc.status = worstStatus(parts.flatMap((x) => (x ? [x.status] : [])));
    doc.error = `rank ${failed} on ${group.members[failed]!.node}: ${p.error ?? p.status}`;
  }
  return false;
}

/** Each process's own result, for `cluster.workloads_per_process`. */
function sharesOf(
  group: Group,
  parts: readonly (WorkloadReport | undefined)[],
): ClusterWorkload[] {
  return parts.flatMap((p, rank) =>
    p?.workload
      ? [{
        rank,
        node: group.members[rank]!.node,
        status: p.status,
        ...(p.error !== undefined ? { error: p.error } : {}),
        workload: p.workload,
      }]
      : []
  );
}

/** The document's `workload`: the aggregate of the shares that ended ok, if any. */
function aggregateShares(doc: ResultDocument, shares: readonly ClusterWorkload[], size: number) {
  const ok = shares.filter((s) => s.status === "ok");
  if (ok.length === 0) return;
  doc.workload = aggregateWorkloads(ok);
  if (ok.length < size) {
    doc.workload.notes.push(
      `the aggregate covers ranks ${ok.map((s) => s.rank).join(", ")} only: ` +
        `the other processes did not end ok`,
    );
  }
}
