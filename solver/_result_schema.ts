/**
 * The parts of a result document (bench, contention or run) the solver reads
 * a profile from, as zod schemas.
 *
 * @module
 */

import { z } from "zod";
import { RESULT_SCHEMA } from "../schema/result.ts";

const percentiles = z.object({ percentile: z.record(z.string(), z.number()).optional() });
const directionSchema = z.object({
  bw_bytes: z.number().nonnegative(),
  lat_ns: percentiles.optional(),
});

export const runSchema = z.object({
  name: z.string(),
  status: z.string(),
  tier: z.object({ kind: z.string(), path: z.string() }),
  options: z.object({
    tier: z.string(),
    rw: z.string(),
    rwmixread: z.number().optional(),
    bs: z.number(),
    iodepth: z.number(),
    numjobs: z.number(),
    engine: z.string(),
    direct: z.boolean().optional(),
  }),
  read: directionSchema,
  write: directionSchema,
});

const nullableRows = z.record(z.string(), z.record(z.string(), z.number().positive().nullable()));

const togetherSchema = z.object({
  key: z.string(),
  members: z.record(
    z.string(),
    z.object({
      read_bw_bytes: z.number().nonnegative(),
      write_bw_bytes: z.number().nonnegative(),
    }),
  ),
});

const resultContentionSchema = z.object({
  status: z.string(),
  pattern: z.object({
    bs: z.number().nonnegative(),
    runtime_ms: z.number().nonnegative(),
    iodepth: z.number().nonnegative(),
    tiers: z.record(z.string(), z.object({ spec: z.string(), direct: z.boolean().optional() })),
  }),
  tiers: z.array(z.string()),
  alone: z.record(
    z.string(),
    z.object({ read_bw_bytes: z.number().nonnegative(), write_bw_bytes: z.number().nonnegative() }),
  ),
  slowdown: z.object({ read: nullableRows, write: nullableRows }),
  self: z.record(
    z.string(),
    z.object({ read_bw_bytes: z.number().nonnegative(), write_bw_bytes: z.number().nonnegative() }),
  ).optional(),
  together: z.array(togetherSchema).optional(),
  together_at: z.array(togetherSchema.extend({ processes: z.number().int().min(2) })).optional(),
});

const scalingDirectionSchema = z.object({
  bw_bytes: z.number().nonnegative(),
  bw_bytes_per_node: z.number().nonnegative(),
});

/** The `scaling` section (schema/scaling.ts): what the solver reads of it. */
const resultScalingSchema = z.object({
  tiers: z.array(z.object({
    label: z.string(),
    tier: z.string(),
    bs: z.number().positive(),
    iodepth: z.number().positive(),
    points: z.array(z.object({
      nodes: z.int().positive(),
      read: scalingDirectionSchema,
      write: scalingDirectionSchema,
    })),
  })),
});

const bw = z.number().nonnegative();

/** The `concurrency` section (schema/concurrency.ts): what the solver reads of it. */
const resultConcurrencySchema = z.object({
  status: z.string(),
  tiers: z.array(z.object({
    label: z.string(),
    tier: z.string(),
    curves: z.array(z.object({
      bs: z.number().positive(),
      iodepth: z.number().positive(),
      points: z.array(z.object({
        processes: z.int().positive(),
        read_bw_bytes: bw,
        write_bw_bytes: bw,
        mixed_read_bw_bytes: bw.optional(),
        mixed_write_bw_bytes: bw.optional(),
        runs: z.array(z.string()),
      })),
    })),
  })),
});

export const resultDocSchema = z.object({
  schema: z.literal(RESULT_SCHEMA),
  kind: z.string(),
  status: z.string(),
  started: z.string(),
  finished: z.string().optional(),
  host: z.object({
    hostname: z.string(),
    cpu_model: z.string().optional(),
    cores: z.int().positive(),
    memory_bytes: z.number().positive(),
  }),
  runs: z.array(runSchema),
  contention: resultContentionSchema.optional(),
  scaling: resultScalingSchema.optional(),
  concurrency: resultConcurrencySchema.optional(),
});

export type ResultDoc = z.infer<typeof resultDocSchema>;
export type ResultRun = z.infer<typeof runSchema>;
export type ResultContention = z.infer<typeof resultContentionSchema>;
export type ResultScaling = z.infer<typeof resultScalingSchema>;
export type ResultConcurrency = z.infer<typeof resultConcurrencySchema>;

/** Result kinds that carry tier figures. */
export const RESULT_KINDS = ["profile", "contention", "run"];
