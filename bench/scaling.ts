/**
 * `bench`'s remote scaling curve across nodes: each shared tier (pfs, s3)
 * written, then read, by 1, 2, 4, … and finally all N nodes at once — one
 * process per node, the lowest rank of each — with the aggregate over the
 * common window and each node's share at every count. What a planner needs
 * to know how much of a shared tier one node gets when the whole job uses it.
 *
 * @module
 */

import type { Group } from "../cluster/types.ts";
import { formatTierSpec, type JobOptions, parseJobOptions, type TierSpec } from "../core/config.ts";
import type { ScalingResult } from "../schema/scaling.ts";
import type { Tier } from "../tiers/types.ts";
import { aggregateRun } from "./cluster_aggregate.ts";
import { runPhase } from "./cluster_phase.ts";
import type { RunProgress } from "./runner.ts";

/** The request size and depth of the curve: the profile's 1 MiB × 8 pattern. */
export const SCALING_PATTERN = { bs: "1m", iodepth: "8" } as const;

/**
 * The node counts of the curve: powers of two below `nodes`, then `nodes`.
 *
 * @example
 * ```ts
 * import { scalingCounts } from "./scaling.ts";
 * console.assert(scalingCounts(3).join() === "1,2,3");
 * console.assert(scalingCounts(8).join() === "1,2,4,8");
 * console.assert(scalingCounts(1).join() === "1");
 * ```
 */
export function scalingCounts(nodes: number): number[] {
  if (!Number.isInteger(nodes) || nodes < 1) {
    throw new RangeError(`scalingCounts: nodes must be an integer >= 1, got ${nodes}`);
  }
  const counts: number[] = [];
  for (let k = 1; k < nodes; k *= 2) counts.push(k);
  counts.push(nodes);
  return counts;
}

/** The nodes of a group in rank order of their first process, and that process (the leader). */
export function nodeLeaders(group: Group): { node: string; leader: number }[] {
  const seen = new Map<string, number>();
  for (const m of group.members) if (!seen.has(m.node)) seen.set(m.node, m.rank);
  return [...seen].map(([node, leader]) => ({ node, leader }));
}

/** Options of {@linkcode measureScaling}. */
export interface ScalingOptions {
  readonly runtime: string;
  readonly ramp: string;
  readonly size: string;
  readonly endpoint?: string | undefined;
  /** How long a member may be late at a barrier, ms; also how long one request may take. */
  readonly timeoutMs: number;
  /** `--verify`: every block written stamped, every block read checked. */
  readonly verify?: boolean | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly onProgress?: ((p: RunProgress) => void) | undefined;
  /** Opens (once) and sets up a tier under this process's scratch name. */
  readonly open: (job: JobOptions) => Promise<Tier>;
}

function jobOf(spec: TierSpec, rw: "read" | "write", o: ScalingOptions, nodes: number) {
  const s3 = spec.kind === "s3";
  return parseJobOptions({
    tier: formatTierSpec(spec),
    rw,
    ...SCALING_PATTERN,
    ...(s3 ? {} : { engine: "libaio" }),
    runtime: o.runtime,
    ramp: o.ramp,
    size: o.size,
    timeout: String(o.timeoutMs / 1000),
    verify: o.verify,
    ...(s3 && o.endpoint !== undefined ? { endpoint: o.endpoint } : {}),
    name: `${spec.kind}-${rw}-${SCALING_PATTERN.bs}-d${SCALING_PATTERN.iodepth}-n${nodes}`,
  });
}

/**
 * Measures the scaling curve of each shared tier in `tiers` on every
 * process of `group` (each must call it with the same arguments). Returns
 * the curve on the root and undefined elsewhere. Stops at the first point
 * that fails or is interrupted: the result holds the points measured and the
 * status says why it ended.
 */
export async function measureScaling(
  group: Group,
  tiers: readonly TierSpec[],
  o: ScalingOptions,
): Promise<ScalingResult | undefined> {
  const leaders = nodeLeaders(group);
  const myNode = leaders.findIndex((l) => l.leader === group.rank);
  const result: ScalingResult = { status: "ok", nodes: leaders.length, tiers: [] };
  for (const spec of tiers.filter((t) => t.kind === "pfs" || t.kind === "s3")) {
    const curve: ScalingResult["tiers"][number] = {
      label: spec.kind,
      tier: formatTierSpec(spec),
      bs: 1048576,
      iodepth: Number(SCALING_PATTERN.iodepth),
      points: [],
    };
    result.tiers.push(curve);
    for (const nodes of scalingCounts(leaders.length)) {
      const point: ScalingResult["tiers"][number]["points"][number] = {
        nodes,
        processes: nodes,
        read: { bw_bytes: 0, bw_bytes_per_node: 0, per_node: [] },
        write: { bw_bytes: 0, bw_bytes_per_node: 0, per_node: [] },
      };
      for (const rw of ["write", "read"] as const) {
        const job = jobOf(spec, rw, o, nodes);
        const taking = myNode >= 0 && myNode < nodes;
        const out = await runPhase(group, {
          name: `the start of ${job.name}`,
          tier: taking ? await o.open(job) : undefined,
          job,
          timeoutMs: o.timeoutMs,
          hooks: {
            ...(o.signal ? { signal: o.signal } : {}),
            ...(o.onProgress ? { onProgress: o.onProgress } : {}),
          },
        });
        if (!out.parts) continue;
        const { run, section } = aggregateRun(out.parts);
        point[rw] = {
          bw_bytes: section[rw].common_bw_bytes,
          bw_bytes_per_node: Math.round(section[rw].common_bw_bytes / nodes),
          per_node: section.per_node.map((n) => ({ node: n.node, bw_bytes: n[`${rw}_bw_bytes`] })),
        };
        if (run.status !== "ok") {
          result.status = run.status;
          if (run.error !== undefined) result.error = run.error;
        }
      }
      curve.points.push(point);
      // Every process learns from the root whether to go on.
      if (await stopAll(group, result.status ?? "ok", o.timeoutMs)) {
        return group.rank === group.root ? result : undefined;
      }
    }
  }
  return group.rank === group.root ? result : undefined;
}

/** The root's status sent to every process: whether to stop here. */
async function stopAll(group: Group, status: string, timeoutMs: number): Promise<boolean> {
  const bytes = await group.broadcast(new TextEncoder().encode(status), timeoutMs);
  return new TextDecoder().decode(bytes) !== "ok";
}
