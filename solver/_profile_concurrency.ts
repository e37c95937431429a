/**
 * The tiers' concurrency curves in a profile: the zod shape of a
 * hand-written tier's `concurrency` list, the checks zod cannot make
 * (processes ascending from 1, request sizes ascending, mixed figures in
 * pairs), and the mapping of a result's measured `concurrency` section.
 * solver/profile.ts calls these.
 *
 * @module
 */

import { z } from "zod";
import { formatPath } from "../core/zod_issue.ts";
import {
  type ConcurrencyPoint,
  type ProfileConcurrency,
  ProfileError,
  type ProfileTier,
} from "../schema/profile.ts";
import type { ResultConcurrency } from "./_result_schema.ts";

const rate = z.number().min(1).max(1e15);

/** One point of a hand-written curve. */
export const concurrencyPointSchema = z.strictObject({
  processes: z.int().positive(),
  read_bw_bytes: rate,
  write_bw_bytes: rate,
  mixed_read_bw_bytes: rate.optional(),
  mixed_write_bw_bytes: rate.optional(),
});

/** One request size's curve of a hand-written tier. */
export const concurrencyCurveSchema = z.strictObject({
  bs: z.int().positive(),
  iodepth: z.int().positive(),
  points: z.array(concurrencyPointSchema).min(1),
  note: z.string().optional(),
});

/** A hand-written tier's `concurrency`: its curves, ascending by `bs`. */
export const concurrencySchema = z.array(concurrencyCurveSchema).min(1);

const TOTAL = "bytes per second over all the processes together, a number from 1 to 1e15";

/** What the fields of a curve accept, by name. */
export const CONCURRENCY_ALLOWED: Record<string, string> = {
  concurrency: "an array of curves { bs, iodepth, points, note }, one per request size, " +
    "ascending by bs (see docs/profile.md)",
  bs: "every process's request size in bytes, an integer > 0, each curve's larger than " +
    "the one before (e.g. 1048576, then 2097152)",
  iodepth: "the requests in flight per process, an integer ≥ 1 (e.g. 8)",
  points: "an array of { processes, read_bw_bytes, write_bw_bytes }, ascending by " +
    "processes from 1",
  processes: "the processes at once, an integer ≥ 1: 1 in the first point, each point " +
    "more than the one before",
  read_bw_bytes: `all the processes reading, ${TOTAL}`,
  write_bw_bytes: `all the processes writing, ${TOTAL}`,
  mixed_read_bw_bytes: `the reads while as many others write, ${TOTAL}; with mixed_write_bw_bytes`,
  mixed_write_bw_bytes: `the writes while as many others read, ${TOTAL}; with mixed_read_bw_bytes`,
  note: "a string",
};

/** Whether `path` (from the document's root) is inside a tier's `concurrency`. */
export function isConcurrencyPath(path: readonly PropertyKey[]): boolean {
  return path[0] === "tiers" && path[2] === "concurrency";
}

/** The fields an object at `path` (inside a tier's `concurrency`) may have. */
export function concurrencyFieldsAt(path: readonly PropertyKey[]): string[] {
  if (path.length === 4) return Object.keys(concurrencyCurveSchema.shape);
  if (path.length === 6 && path[4] === "points") return Object.keys(concurrencyPointSchema.shape);
  return [];
}

/** What the field at `path` (inside a tier's `concurrency`) accepts. */
export function concurrencyAllowedAt(path: readonly PropertyKey[]): string | undefined {
  if (path.length === 3) return CONCURRENCY_ALLOWED.concurrency;
  if (path.length === 4) return "an object { bs, iodepth, points, note }";
  if (path.length === 5 && path[4] === "points") return CONCURRENCY_ALLOWED.points;
  if (path.length === 6) return "an object { processes, read_bw_bytes, write_bw_bytes, … }";
  const last = path[path.length - 1];
  return typeof last === "string" ? CONCURRENCY_ALLOWED[last] : undefined;
}

/**
 * A hand-written tier's curves, checked: request sizes ascending, each
 * curve's processes ascending from 1, mixed figures given in pairs.
 *
 * @throws {ProfileError} naming the JSON path of the first bad field.
 */
export function statedConcurrency(
  curves: z.infer<typeof concurrencySchema>,
  label: string,
  source: string,
): ProfileConcurrency[] {
  const at = (...keys: (string | number)[]) => formatPath(["tiers", label, "concurrency", ...keys]);
  return curves.map((c, i) => {
    const before = curves[i - 1];
    if (before && c.bs <= before.bs) {
      throw new ProfileError(
        source,
        at(i, "bs"),
        `${c.bs} does not follow ${before.bs} (concurrency[${i - 1}])`,
        CONCURRENCY_ALLOWED.bs,
      );
    }
    const points: ConcurrencyPoint[] = c.points.map((p, j) => {
      const prev = c.points[j - 1];
      if (j === 0 && p.processes !== 1) {
        throw new ProfileError(
          source,
          at(i, "points", 0, "processes"),
          `${p.processes}: the first point must be 1 process`,
          CONCURRENCY_ALLOWED.processes,
        );
      }
      if (prev && p.processes <= prev.processes) {
        throw new ProfileError(
          source,
          at(i, "points", j, "processes"),
          `${p.processes} does not follow ${prev.processes} (points[${j - 1}])`,
          CONCURRENCY_ALLOWED.processes,
        );
      }
      const mixedRead = p.mixed_read_bw_bytes, mixedWrite = p.mixed_write_bw_bytes;
      if ((mixedRead === undefined) !== (mixedWrite === undefined)) {
        const missing = mixedRead === undefined ? "mixed_read_bw_bytes" : "mixed_write_bw_bytes";
        const given = mixedRead === undefined ? "mixed_write_bw_bytes" : "mixed_read_bw_bytes";
        throw new ProfileError(
          source,
          at(i, "points", j, missing),
          `is missing, and ${given} is given`,
          CONCURRENCY_ALLOWED[missing],
        );
      }
      return {
        processes: p.processes,
        read_bw_bytes: p.read_bw_bytes,
        write_bw_bytes: p.write_bw_bytes,
        ...(mixedRead !== undefined && mixedWrite !== undefined
          ? { mixed_read_bw_bytes: mixedRead, mixed_write_bw_bytes: mixedWrite }
          : {}),
      };
    });
    return {
      basis: "stated" as const,
      bs: c.bs,
      iodepth: c.iodepth,
      points,
      ...(c.note !== undefined ? { note: c.note } : {}),
    };
  });
}

/**
 * A result's measured curves, onto the profile's tiers: points that moved
 * bytes each way, ascending by processes (a repeated count keeps its first),
 * the mixed figures where both moved bytes; a curve whose points do not start
 * at 1 process is left out. What is left out is said in `notes`.
 */
export function measuredConcurrency(
  section: ResultConcurrency,
  tiers: Record<string, ProfileTier>,
  notes: string[],
): void {
  if (section.status !== "ok") {
    notes.push(`concurrency: the curves' status is ${section.status}: points so far`);
  }
  for (const t of section.tiers) {
    const tier = tiers[t.label];
    if (!tier) {
      notes.push(`concurrency: ${t.label} (${t.tier}) is not a tier of this profile: left out`);
      continue;
    }
    const curves: ProfileConcurrency[] = [];
    for (const c of [...t.curves].sort((a, b) => a.bs - b.bs)) {
      if (curves.some((x) => x.bs === c.bs)) continue;
      const points: ConcurrencyPoint[] = [];
      for (const p of [...c.points].sort((a, b) => a.processes - b.processes)) {
        if (!(p.read_bw_bytes > 0 && p.write_bw_bytes > 0)) {
          notes.push(
            `concurrency: ${t.label} at ${c.bs} B × ${p.processes} processes moved nothing ` +
              "one way: left out",
          );
          continue;
        }
        if (points.some((x) => x.processes === p.processes)) continue;
        const mixed = (p.mixed_read_bw_bytes ?? 0) > 0 && (p.mixed_write_bw_bytes ?? 0) > 0;
        points.push({
          processes: p.processes,
          read_bw_bytes: p.read_bw_bytes,
          write_bw_bytes: p.write_bw_bytes,
          ...(mixed
            ? {
              mixed_read_bw_bytes: p.mixed_read_bw_bytes!,
              mixed_write_bw_bytes: p.mixed_write_bw_bytes!,
            }
            : {}),
        });
      }
      if (points[0]?.processes !== 1) {
        notes.push(
          `concurrency: ${t.label}'s curve at ${c.bs} B has no point at 1 process: left out`,
        );
        continue;
      }
      curves.push({ basis: "measured", bs: c.bs, iodepth: c.iodepth, points });
    }
    if (curves.length > 0) tier.concurrency = curves;
  }
}

/** The names of a result's concurrency runs (they are no tier's own points). */
export function concurrencyRunNames(section: ResultConcurrency | undefined): Set<string> {
  return new Set(
    (section?.tiers ?? []).flatMap((t) => t.curves.flatMap((c) => c.points.flatMap((p) => p.runs))),
  );
}
