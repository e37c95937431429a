/**
 * The remote tiers' scaling curves across nodes in a profile: the zod shape
 * of a hand-written profile's `scaling` section, the checks zod cannot make
 * (tier labels, ascending node counts), and the mapping of a result's
 * measured `scaling` section. solver/profile.ts calls these.
 *
 * @module
 */

import { z } from "zod";
import { formatPath } from "../core/zod_issue.ts";
import {
  ProfileError,
  type ProfileScaling,
  type ProfileTier,
  type ScalingPoint,
} from "../schema/profile.ts";
import type { ResultScaling } from "./_result_schema.ts";

/** Tier kinds shared by every node of a job: the only ones a scaling curve may describe. */
export const REMOTE_KINDS = ["pfs", "s3"] as const;

/** Whether a tier is shared by the nodes of a job (pfs, s3). */
export function isRemoteKind(kind: string): boolean {
  return (REMOTE_KINDS as readonly string[]).includes(kind);
}

const rate = z.number().min(1).max(1e15);

/** One point of a hand-written curve; the aggregates default to per node × nodes. */
export const scalingPointSchema = z.strictObject({
  nodes: z.int().positive(),
  read_bw_bytes_per_node: rate,
  write_bw_bytes_per_node: rate,
  read_bw_bytes: rate.optional(),
  write_bw_bytes: rate.optional(),
});

/** One remote tier's curve in a hand-written profile. */
export const scalingTierSchema = z.strictObject({
  bs: z.int().positive(),
  iodepth: z.int().positive(),
  points: z.array(scalingPointSchema).min(1),
  note: z.string().optional(),
});

/** The `scaling` section of a hand-written profile: curves by tier label. */
export const scalingSchema = z.record(z.string(), scalingTierSchema);

/** What the fields of the `scaling` section accept, by name. */
export const SCALING_ALLOWED: Record<string, string> = {
  scaling: 'an object of curves by remote tier label, e.g. { "pfs": { "bs": 1048576, ' +
    '"iodepth": 8, "points": [{ "nodes": 1, … }] } } (see docs/multinode.md)',
  points: "an array of { nodes, read_bw_bytes_per_node, write_bw_bytes_per_node }, " +
    "ascending by nodes",
  nodes: "the nodes doing I/O at once, an integer ≥ 1, each point more than the one before",
  read_bw_bytes_per_node:
    "the read bandwidth each node got, bytes per second, a number from 1 to 1e15",
  write_bw_bytes_per_node:
    "the write bandwidth each node got, bytes per second, a number from 1 to 1e15",
};

/** The fields an object at `path` (starting with `scaling`) may have. */
export function scalingFieldsAt(path: readonly PropertyKey[]): string[] {
  if (path.length === 2) return Object.keys(scalingTierSchema.shape);
  if (path.length === 4 && path[2] === "points") return Object.keys(scalingPointSchema.shape);
  return [];
}

/** What the field at `path` (starting with `scaling`) accepts, where its name does not say. */
export function scalingAllowedAt(path: readonly PropertyKey[]): string | undefined {
  if (path.length === 1) return SCALING_ALLOWED.scaling;
  if (path.length === 2) return "an object { bs, iodepth, points, note }";
  if (path.length === 3 && path[2] === "points") return SCALING_ALLOWED.points;
  if (path.length === 4 && path[2] === "points") {
    return "an object { nodes, read_bw_bytes_per_node, write_bw_bytes_per_node }";
  }
  return undefined;
}

/**
 * The curves of a hand-written profile, checked against its tiers: each
 * label a pfs or s3 tier of the profile, node counts strictly ascending.
 *
 * @throws {ProfileError} naming the JSON path of the first bad field.
 */
export function statedScaling(
  scaling: z.infer<typeof scalingSchema>,
  tiers: Readonly<Record<string, ProfileTier>>,
  source: string,
): Record<string, ProfileScaling> {
  const out: Record<string, ProfileScaling> = {};
  const remote = Object.values(tiers).filter((t) => isRemoteKind(t.kind)).map((t) => t.label);
  const labels = remote.length > 0 ? remote.join(", ") : "none: this profile has no pfs or s3 tier";
  for (const [label, curve] of Object.entries(scaling)) {
    const tier = tiers[label];
    if (!tier || !isRemoteKind(tier.kind)) {
      const problem = tier
        ? `${label} is a ${tier.kind} tier, not a shared one (pfs or s3)`
        : "is not a tier of this profile";
      throw new ProfileError(
        source,
        formatPath(["scaling", label]),
        problem,
        `a pfs or s3 tier's label (${labels})`,
      );
    }
    const points: ScalingPoint[] = [];
    for (const [i, p] of curve.points.entries()) {
      const before = curve.points[i - 1];
      if (before && p.nodes <= before.nodes) {
        throw new ProfileError(
          source,
          formatPath(["scaling", label, "points", i, "nodes"]),
          `${p.nodes} does not follow ${before.nodes} (points[${i - 1}])`,
          SCALING_ALLOWED.nodes,
        );
      }
      points.push({
        nodes: p.nodes,
        read_bw_bytes_per_node: p.read_bw_bytes_per_node,
        write_bw_bytes_per_node: p.write_bw_bytes_per_node,
        read_bw_bytes: p.read_bw_bytes ?? p.read_bw_bytes_per_node * p.nodes,
        write_bw_bytes: p.write_bw_bytes ?? p.write_bw_bytes_per_node * p.nodes,
      });
    }
    out[label] = {
      basis: "stated",
      bs: curve.bs,
      iodepth: curve.iodepth,
      points,
      ...(curve.note !== undefined ? { note: curve.note } : {}),
    };
  }
  return out;
}

/**
 * A result's measured curves, as the profile keeps them: only the profile's
 * pfs and s3 tiers, points that moved bytes each way, ascending by nodes (a
 * repeated count keeps its first point). What is left out is said in `notes`.
 */
export function measuredScaling(
  scaling: ResultScaling,
  tiers: Readonly<Record<string, ProfileTier>>,
  notes: string[],
): Record<string, ProfileScaling> {
  const out: Record<string, ProfileScaling> = {};
  for (const t of scaling.tiers) {
    const tier = tiers[t.label];
    if (!tier || !isRemoteKind(tier.kind)) {
      notes.push(
        `scaling: ${t.label} (${t.tier}) is ${
          tier ? `a ${tier.kind} tier, not a shared one` : "not a tier of this profile"
        }: its curve is left out`,
      );
      continue;
    }
    const points: ScalingPoint[] = [];
    const sorted = [...t.points].sort((a, b) => a.nodes - b.nodes);
    for (const p of sorted) {
      const moved = p.read.bw_bytes_per_node > 0 && p.write.bw_bytes_per_node > 0 &&
        p.read.bw_bytes > 0 && p.write.bw_bytes > 0;
      if (!moved) {
        notes.push(`scaling: ${t.label} at ${p.nodes} nodes moved nothing one way: left out`);
        continue;
      }
      if (points.some((x) => x.nodes === p.nodes)) continue;
      points.push({
        nodes: p.nodes,
        read_bw_bytes_per_node: p.read.bw_bytes_per_node,
        write_bw_bytes_per_node: p.write.bw_bytes_per_node,
        read_bw_bytes: p.read.bw_bytes,
        write_bw_bytes: p.write.bw_bytes,
      });
    }
    if (points.length > 0) {
      out[t.label] = { basis: "measured", bs: t.bs, iodepth: t.iodepth, points };
    }
  }
  return out;
}
