/**
 * What every command across processes (`run`, `contention`, `workload`)
 * does the same way around its one document: each process's scratch name,
 * the members lost and the order they were learnt in, which rank writes the
 * document, what lost members left removed, and the head of the `cluster`
 * section.
 *
 * @module
 */

import { RankLostError } from "../cluster/errors.ts";
import type { Group } from "../cluster/types.ts";
import type { TierSpec } from "../core/config.ts";
import type { ClusterProcess, ClusterSection } from "../schema/cluster.ts";
import type { ResultDocument, RunResult } from "../schema/result.ts";
import { cleanScratch } from "../tiers/clean.ts";

/**
 * How long to wait for a lost process on this host to finish exiting: 300 ×
 * 100 ms (a process with many threads, killed on a loaded 2-core machine, has
 * been seen to take longer than 5 s; a dead one ends the wait at once).
 */
const LOST_EXIT_POLLS = 300;
const LOST_EXIT_POLL_MS = 100;

/**
 * The scratch name of one process: the run id and its rank.
 *
 * @example
 * ```ts
 * import { scratchIdOf } from "./cluster_document.ts";
 * console.assert(scratchIdOf("20261124T031758-13625b", 2) === "20261124T031758-13625b-r2");
 * ```
 */
export function scratchIdOf(runId: string, rank: number): string {
  return `${runId}-r${rank}`;
}

/** One member lost, as the `cluster` section lists it. */
export type LostMember = NonNullable<ClusterSection<RunResult>["lost"]>[number];

/** The members lost during a run, in the order this process learnt of them. */
export class LostMembers {
  readonly list: LostMember[] = [];

  constructor(readonly group: Group) {}

  /**
   * Records the loss `group.lost` names — it names the loss as it happened —
   * else the one `e` names; whether there was one. Each rank is listed once.
   */
  note(e?: unknown): boolean {
    const reason = this.group.lost.reason;
    const cause = reason instanceof RankLostError ? reason : e;
    if (!(cause instanceof RankLostError)) return false;
    if (!this.list.some((l) => l.rank === cause.rank)) {
      this.list.push({ rank: cause.rank, node: cause.node, error: cause.message });
    }
    return true;
  }

  /**
   * The rank that writes the one document: the root; or, when the first loss
   * this process learnt of was the root's, the lowest rank not known to be
   * lost (a root that ended its run and exited while this one was still
   * finishing is not a lost root).
   */
  writer(): number {
    const group = this.group;
    if (this.list[0]?.rank !== group.root) return group.root;
    for (const m of group.members) if (!this.list.some((l) => l.rank === m.rank)) return m.rank;
    return group.rank;
  }

  /** Whether this process writes the document. */
  get writes(): boolean {
    return this.group.rank === this.writer();
  }
}

/** A tier a lost member may have left scratch on, and that scratch's name for a rank. */
export interface LostArea {
  readonly tier: TierSpec;
  readonly endpoint?: string | undefined;
  readonly region?: string | undefined;
  /** The scratch name the lost rank used there (default: {@linkcode scratchIdOf}). */
  readonly scratchId?: (rank: number) => string;
}

/**
 * Removes what lost members left under this run's name on the tiers this
 * process can reach: a shared tier's scratch of every lost rank, and on a
 * node-local tier that of the lost ranks of this node. Only areas whose
 * marker names that rank's scratch name are touched; a process killed a
 * moment ago may still be exiting (its marker's pid alive, which `clean`
 * leaves alone), so each area is tried again for up to 5 s.
 */
export async function removeLostScratch(
  areas: readonly LostArea[],
  runId: string,
  lost: readonly { rank: number }[],
): Promise<void> {
  const seen = new Set<string>();
  for (const area of areas) {
    if (area.tier.kind === "null") continue;
    for (const { rank } of lost) {
      const id = area.scratchId?.(rank) ?? scratchIdOf(runId, rank);
      const key = `${JSON.stringify(area.tier)} ${id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const options = {
        runId: id,
        ...(area.endpoint ? { endpoint: area.endpoint } : {}),
        ...(area.region ? { region: area.region } : {}),
      };
      try {
        for (let attempt = 0; attempt < LOST_EXIT_POLLS; attempt++) {
          const report = await cleanScratch(area.tier, options);
          if (!report.skipped.some((s) => s.reason.includes("still running"))) break;
          await new Promise((r) => setTimeout(r, LOST_EXIT_POLL_MS));
        }
      } catch {
        // Unreachable from here (another node's local tier): `tierbench clean` there.
      }
    }
  }
}

/** Every member of the group as the `cluster` section lists it, with no runs yet. */
export function clusterProcesses(group: Group): ClusterProcess<RunResult>[] {
  return group.members.map((m) => ({
    rank: m.rank,
    node: m.node,
    host: m.host,
    pid: m.pid,
    runs: [],
    start_ms: [],
  }));
}

/**
 * The `cluster` section: who took part (from the group) and `rest`; the
 * members lost are listed when there were any, and a coordination list
 * whose waits none ended is left out (not measured, rather than empty).
 */
export function clusterSection(
  group: Group,
  lost: readonly LostMember[],
  rest: Omit<
    ClusterSection<RunResult>,
    "launcher" | "transport" | "processes_count" | "nodes" | "hosts" | "lost"
  >,
): ClusterSection<RunResult> {
  const { coordination, ...sections } = rest;
  return {
    launcher: group.info.launcher,
    transport: group.info.transport,
    processes_count: group.size,
    nodes: [...new Set(group.members.map((m) => m.node))],
    hosts: [...new Set(group.members.map((m) => m.host))],
    ...sections,
    ...(lost.length > 0 ? { lost: [...lost] } : {}),
    coordination: measured(coordination),
  };
}

/** `coordination` without its empty lists. */
function measured(
  coordination: ClusterSection<RunResult>["coordination"],
): ClusterSection<RunResult>["coordination"] {
  return Object.fromEntries(
    Object.entries(coordination).filter(([, waits]) => waits !== undefined && waits.length > 0),
  );
}

/** Fails `doc` naming every lost member; whether there was one. */
export function failOnLost(doc: ResultDocument, lost: readonly LostMember[]): boolean {
  if (lost.length === 0) return false;
  doc.status = "failed";
  doc.error = lost.map((l) => l.error).join("; ");
  return true;
}
