/**
 * A shared (remote) tier's bandwidth per node when N nodes of a job use it
 * at once, from the profile's scaling curve across nodes.
 *
 * @module
 */

import type { Direction, Profile, ProfileTier, ScalingPoint } from "../schema/profile.ts";
import type { RemoteShareUsed, ShareBasis } from "../schema/plan.ts";
import { isRemoteKind } from "./_profile_scaling.ts";

/** A tier's per-node bandwidth at N nodes and how it was found. */
export interface RemoteShare {
  /** Bytes/s one node gets. */
  bw: number;
  basis: ShareBasis;
  /** One sentence: which points it came from, or that it was not measured across nodes. */
  note: string;
}

function gbps(x: number): string {
  return `${(x / 1e9).toFixed(2)} GB/s`;
}

/**
 * The bandwidth, bytes/s, one node gets from the remote tier `label` doing
 * `direction` while `nodes` nodes do the same: the curve's point at `nodes`
 * where measured; between two counts, per-node bandwidth interpolated
 * linearly in the node count; past the largest count, that point's
 * aggregate held and shared by `nodes` (per node = aggregate / N, no more
 * than the last point's per-node figure) — the conservative reading, since
 * the tier is not assumed to grow past what was seen; without a curve, the
 * tier's single-node figure. Below the curve's first count, the tier's
 * single-node figure stands as the point at 1 node.
 *
 * A curve stated in a hand-written profile is read the same way; the note
 * says "stated" instead of "measured" then.
 *
 * @throws {RangeError} when `nodes` is not an integer ≥ 1, or `label` is not a tier of the profile.
 *
 * @example
 * ```ts
 * import { loadProfile } from "./profile.ts";
 * import { remoteShare } from "./remote_share.ts";
 * const p = loadProfile({
 *   schema: "tierbench/profile@1",
 *   created: "2026-11-21",
 *   host: { name: "n1", memory_bytes: 2 ** 39, cpus: 64 },
 *   tiers: { pfs: { kind: "pfs", read_bw_bytes: 4e9, write_bw_bytes: 2e9, bs: 1048576, iodepth: 8 } },
 *   scaling: { pfs: { bs: 1048576, iodepth: 8, points: [
 *     { nodes: 1, read_bw_bytes_per_node: 4e9, write_bw_bytes_per_node: 2e9 },
 *     { nodes: 4, read_bw_bytes_per_node: 1e9, write_bw_bytes_per_node: 5e8 },
 *   ] } },
 * }, "inline");
 * console.assert(remoteShare(p, "pfs", "read", 4).basis === "measured");
 * console.assert(remoteShare(p, "pfs", "read", 2).bw === 3e9);
 * console.assert(remoteShare(p, "pfs", "read", 8).bw === 5e8);
 * ```
 */
export function remoteShare(
  profile: Profile,
  label: string,
  direction: Direction,
  nodes: number,
): RemoteShare {
  if (!Number.isInteger(nodes) || nodes < 1) {
    throw new RangeError(`nodes must be an integer ≥ 1, got ${nodes}`);
  }
  const tier = profile.tiers[label];
  if (!tier) throw new RangeError(`${label} is not a tier of ${profile.source}`);
  const single = direction === "read" ? tier.read_bw_bytes : tier.write_bw_bytes;
  const curve = profile.scaling?.[label];
  if (!curve || curve.points.length === 0) {
    return {
      bw: single,
      basis: "single-node",
      note: nodes === 1
        ? `${label}: its single-node ${direction} figure (${gbps(single)})`
        : `${label}: not measured across nodes: its single-node ${direction} figure ` +
          `(${gbps(single)}) at ${nodes} nodes, as if the others took nothing from it`,
    };
  }
  const how = curve.basis === "measured" ? "measured" : "stated";
  const perNode = (p: ScalingPoint) =>
    direction === "read" ? p.read_bw_bytes_per_node : p.write_bw_bytes_per_node;
  const aggregate = (p: ScalingPoint) => direction === "read" ? p.read_bw_bytes : p.write_bw_bytes;
  const exact = curve.points.find((p) => p.nodes === nodes);
  if (exact) {
    return {
      bw: perNode(exact),
      basis: "measured",
      note: `${label}: ${direction} ${gbps(perNode(exact))} per node ${how} at ${nodes} node${
        nodes === 1 ? "" : "s"
      }`,
    };
  }
  // the tier's own figure stands as the point at 1 node where the curve starts later
  const first = curve.points[0]!;
  if (nodes === 1) {
    return {
      bw: single,
      basis: "single-node",
      note: `${label}: its single-node ${direction} figure (${gbps(single)}); the curve starts ` +
        `at ${first.nodes} nodes`,
    };
  }
  const points: { nodes: number; bw: number; from: string }[] = [
    ...(first.nodes > 1 ? [{ nodes: 1, bw: single, from: "the single-node figure" }] : []),
    ...curve.points.map((p) => ({ nodes: p.nodes, bw: perNode(p), from: `${p.nodes} nodes` })),
  ];
  const last = curve.points[curve.points.length - 1]!;
  if (nodes > last.nodes) {
    const bw = Math.min(perNode(last), aggregate(last) / nodes);
    return {
      bw,
      basis: "extrapolated",
      note: `${label}: ${direction} ${gbps(bw)} per node extrapolated past the curve's last ` +
        `point (${last.nodes} nodes): its aggregate ${
          gbps(aggregate(last))
        } held and shared by ${nodes} nodes (conservative: the tier is not assumed to grow)`,
    };
  }
  const hi = points.findIndex((p) => p.nodes > nodes);
  const a = points[hi - 1]!;
  const b = points[hi]!;
  const bw = a.bw + (b.bw - a.bw) * (nodes - a.nodes) / (b.nodes - a.nodes);
  return {
    bw,
    basis: "interpolated",
    note: `${label}: ${direction} ${
      gbps(bw)
    } per node interpolated between ${a.from} and ${b.from}`,
  };
}

/** The less certain of two bases (a direction interpolated makes the tier interpolated). */
function weaker(a: ShareBasis, b: ShareBasis): ShareBasis {
  const order: ShareBasis[] = ["measured", "interpolated", "extrapolated", "single-node"];
  return order[Math.max(order.indexOf(a), order.indexOf(b))]!;
}

/**
 * The profile as the solver sees it at `nodes` nodes: every remote (pfs,
 * s3) tier's bandwidths replaced by its {@linkcode remoteShare} — its mixed
 * bandwidths and measured `together` rates scaled by the same factor each
 * way — and the local tiers (memory, file) as they are; with the share each
 * remote tier got, by label.
 *
 * @throws {RangeError} when `nodes` is not an integer ≥ 1.
 *
 * @example
 * ```ts ignore
 * const { profile: at8, shares } = profileAtNodes(profile, 8);
 * console.log(shares.pfs?.basis);
 * ```
 */
export function profileAtNodes(
  profile: Profile,
  nodes: number,
): { profile: Profile; shares: Record<string, RemoteShareUsed> } {
  const shares: Record<string, RemoteShareUsed> = {};
  const tiers = { ...profile.tiers };
  const factors: Record<string, { read: number; write: number }> = {};
  for (const t of Object.values(profile.tiers)) {
    if (!isRemoteKind(t.kind)) continue;
    const read = remoteShare(profile, t.label, "read", nodes);
    const write = remoteShare(profile, t.label, "write", nodes);
    shares[t.label] = {
      read_bw_bytes: read.bw,
      write_bw_bytes: write.bw,
      basis: weaker(read.basis, write.basis),
      notes: [read.note, write.note],
    };
    const f = { read: read.bw / t.read_bw_bytes, write: write.bw / t.write_bw_bytes };
    factors[t.label] = f;
    tiers[t.label] = sharedTier(t, read.bw, write.bw, f);
  }
  const out: Profile = { ...profile, tiers };
  const contention = sharedContention(profile, factors);
  if (contention) out.contention = contention;
  return { profile: out, shares };
}

/**
 * Remote tier `t` at its share: bandwidths `read` and `write`, its mixed
 * bandwidths and concurrency curves scaled by `f` each way (a node's
 * processes at once, each curve scaled as the node's share is).
 */
function sharedTier(
  t: ProfileTier,
  read: number,
  write: number,
  f: { read: number; write: number },
): ProfileTier {
  return {
    ...t,
    read_bw_bytes: read,
    write_bw_bytes: write,
    ...(t.mixed_read_bw_bytes !== undefined
      ? { mixed_read_bw_bytes: t.mixed_read_bw_bytes * f.read }
      : {}),
    ...(t.mixed_write_bw_bytes !== undefined
      ? { mixed_write_bw_bytes: t.mixed_write_bw_bytes * f.write }
      : {}),
    ...(t.concurrency
      ? {
        concurrency: t.concurrency.map((c) => ({
          ...c,
          points: c.points.map((p) => ({
            ...p,
            read_bw_bytes: p.read_bw_bytes * f.read,
            write_bw_bytes: p.write_bw_bytes * f.write,
            ...(p.mixed_read_bw_bytes !== undefined
              ? { mixed_read_bw_bytes: p.mixed_read_bw_bytes * f.read }
              : {}),
            ...(p.mixed_write_bw_bytes !== undefined
              ? { mixed_write_bw_bytes: p.mixed_write_bw_bytes * f.write }
              : {}),
          })),
        })),
      }
      : {}),
  };
}

/**
 * The profile's contention with the pairs' measured rates (`together`,
 * `together_at`) scaled as their members' are by `factors`, by label;
 * undefined where the profile measured no pair together.
 */
function sharedContention(
  profile: Profile,
  factors: Readonly<Record<string, { read: number; write: number }>>,
): Profile["contention"] | undefined {
  const scaleMembers = (
    members: Record<string, { read_bw_bytes: number; write_bw_bytes: number }>,
  ) =>
    Object.fromEntries(
      Object.entries(members).map(([label, x]) => {
        const f = factors[label] ?? { read: 1, write: 1 };
        return [label, {
          read_bw_bytes: x.read_bw_bytes * f.read,
          write_bw_bytes: x.write_bw_bytes * f.write,
        }];
      }),
    );
  const together = profile.contention?.together;
  if (!profile.contention || !together) return undefined;
  const contention = {
    ...profile.contention,
    together: Object.fromEntries(
      Object.entries(together).map(([key, members]) => [key, scaleMembers(members)]),
    ),
  };
  const at = profile.contention.together_at;
  if (at) {
    contention.together_at = Object.fromEntries(
      Object.entries(at).map((
        [key, g],
      ) => [key, { processes: g.processes, members: scaleMembers(g.members) }]),
    );
  }
  return contention;
}
