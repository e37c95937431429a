/**
 * The profile document (`tierbench/profile@1`) as types: each tier's
 * bandwidths and latencies with their source, the host, the contention
 * matrix, and the {@linkcode ProfileError} bad input becomes. The solver
 * (solver/profile.ts) reads a hand-written profile or a result into this
 * shape; docs/profile.md describes it.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import { RESULT_SCHEMA } from "./result.ts";

/** The schema id of hand-written profiles. */
export const PROFILE_SCHEMA = "tierbench/profile@1";

/**
 * The `$id` of the hand-written profile's JSON Schema
 * (schemas/profile.schema.json, generated from the zod schema solver/profile.ts
 * checks profiles with, by `deno task schemas`); a profile may name it as
 * `"$schema"` so that editors check and complete it.
 */
export const PROFILE_SCHEMA_ID = "https://tierbench.dev/schemas/profile-1.json";

/** The documents {@linkcode loadProfile} accepts. */
export const ACCEPTED_SCHEMAS = [PROFILE_SCHEMA, RESULT_SCHEMA] as const;

/** Tier kinds a profile may hold (the harness's `null` tier is never one). */
export const PROFILE_TIER_KINDS = ["memory", "file", "pfs", "s3"] as const;
/** One of {@linkcode PROFILE_TIER_KINDS}. */
export type ProfileTierKind = typeof PROFILE_TIER_KINDS[number];

/** The two directions of I/O. */
export const DIRECTIONS = ["read", "write"] as const;
/** One of {@linkcode DIRECTIONS}. */
export type Direction = typeof DIRECTIONS[number];

/** The request size and depth a result's runs must have to give a tier's figures. */
export const PROFILE_PATTERN = { bs: 1048576, iodepth: 8, numjobs: 1 } as const;

/** What a source entry of a hand-written profile rests on. */
export const SOURCE_BASES = [
  "datasheet",
  "documentation",
  "measurement",
  "derived",
  "assumption",
] as const;
/** One of {@linkcode SOURCE_BASES}. */
export type SourceBasis = typeof SOURCE_BASES[number];

/** Where a tier's bandwidths came from. */
export type MeasuredWith =
  /** The result's 1 MiB sequential read and write runs at depth 8 with libaio. */
  | "libaio-runs"
  /** The result's 1 MiB GET and PUT runs of the s3 engine, 8 in flight. */
  | "s3-runs"
  /** The contention matrix's figures of the tier alone. */
  | "contention-alone"
  /** A hand-written profile states them (its `sources` say on what). */
  | "stated";

/** Latency percentiles, microseconds. */
export interface LatencyUs {
  p50: number;
  p99: number;
}

/** One tier of the node. */
export interface ProfileTier {
  /** The tier's label (`memory`, `file`, `pfs`, `s3`, `file2`…), as the contention matrix names it. */
  label: string;
  kind: ProfileTierKind;
  /** Node-wide read bandwidth, bytes/s, at `bs` and `iodepth`. */
  read_bw_bytes: number;
  /** Node-wide write bandwidth, bytes/s, at `bs` and `iodepth`. */
  write_bw_bytes: number;
  /** Request size the bandwidths were measured at, bytes. */
  bs: number;
  /** Requests in flight they were measured at. */
  iodepth: number;
  measured_with: MeasuredWith;
  /** The result's runs the figures came from, by name. */
  runs?: string[];
  /**
   * Bandwidth of each direction while the tier reads and writes at once (half
   * and half, at `bs` and `iodepth`: the bench's randrw point), bytes/s.
   * Absent when not measured: the solver then adds read and write times.
   */
  mixed_read_bw_bytes?: number;
  mixed_write_bw_bytes?: number;
  /** Space for optimizer state, bytes (hand-written profiles only). */
  capacity_bytes?: number;
  read_lat_us?: LatencyUs;
  write_lat_us?: LatencyUs;
  /** Directory (file-backed tiers) or `s3://BUCKET/PREFIX`. */
  path?: string;
  /**
   * How the tier's bandwidth changes with the number of processes (ranks)
   * hitting it at once: one curve per request size, ascending `bs`. Absent:
   * the solver assumes {@linkcode FLAT_CONCURRENCY_NOTE}.
   */
  concurrency?: ProfileConcurrency[];
  note?: string;
}

/**
 * One point of a tier's concurrency curve: `processes` processes at once,
 * each one job of the curve's `bs` × `iodepth`; every figure is the total
 * over all of them, bytes/s.
 */
export interface ConcurrencyPoint {
  /** Processes hitting the tier at once (1, 2, … R). */
  processes: number;
  /** All `processes` reading. */
  read_bw_bytes: number;
  /** All `processes` writing. */
  write_bw_bytes: number;
  /** `processes` reading while `processes` others write: the reads' total. */
  mixed_read_bw_bytes?: number;
  /** The same run: the writes' total. */
  mixed_write_bw_bytes?: number;
}

/** A tier's bandwidth as a function of concurrent processes, at one request size. */
export interface ProfileConcurrency {
  /** `measured` (bench/contention's processes phase) or `stated` (hand-written). */
  basis: "measured" | "stated";
  /** Request size of every job, bytes. */
  bs: number;
  /** Requests in flight per job. */
  iodepth: number;
  /** Ascending `processes`, starting at 1; no number twice. */
  points: ConcurrencyPoint[];
  note?: string;
}

/**
 * What the solver assumes for a tier without a concurrency curve: n
 * processes share the tier's one measured figure (the total does not change
 * with n).
 */
export const FLAT_CONCURRENCY_NOTE =
  "no concurrency curve: n processes at once share the tier's one figure (its total does not change with n)";

/** The node's compute side. */
export interface ProfileHost {
  /** Host memory, bytes. */
  memory_bytes: number;
  /** Logical CPUs. */
  cpus: number;
  cpu_model?: string;
  gpus_per_node?: number;
  gpu_model?: string;
  /** Host↔GPU copy bandwidth of one GPU, one direction, bytes/s. */
  pcie_bytes_per_s?: number;
  /** Adam update rate of one GPU, parameters/s. */
  gpu_adam_params_per_s?: number;
  /** CPU Adam update rate of one rank, parameters/s (as the workloads' `--adam-rate`). */
  cpu_adam_params_per_s?: number;
}

/**
 * `slowdown[direction][tier][others]`: the tier's bandwidth alone over its
 * bandwidth while the others do I/O; `others` names each other tier by its
 * label when it does the same direction and by `label:read` / `label:write`
 * when it does the other, joined with `+` in the profile's tier order
 * (docs/results.md). `null`: the tier moved nothing in that group (starved)
 * or nothing alone.
 */
export type SlowdownMatrix = Record<Direction, Record<string, Record<string, number | null>>>;

/** The contention matrix as the solver needs it. */
export interface ProfileContention {
  /** `measured` from a result's `contention` section, `stated` in a hand-written profile. */
  basis: "measured" | "stated";
  /** Tier labels in key order. */
  tiers: string[];
  slowdown: SlowdownMatrix;
  /** Each tier alone, bytes/s (measured matrices). */
  alone?: Record<string, { read_bw_bytes: number; write_bw_bytes: number }>;
  /** Request size of the matrix, bytes (measured matrices). */
  bs?: number;
  /** Measured window of each group, ms (measured matrices). */
  runtime_ms?: number;
  /** How the matrix ended (measured matrices). */
  status?: string;
  /**
   * Pairs of tiers each reading and writing at once (measured matrices):
   * by the pair's key (`file+pfs`), each member's bandwidths there, bytes/s.
   */
  together?: Record<string, Record<string, { read_bw_bytes: number; write_bw_bytes: number }>>;
  /**
   * The same pairs with each member's read job and write job `processes`
   * processes each (measured with the concurrency curves): by the pair's
   * key, each member's totals there, bytes/s.
   */
  together_at?: Record<string, ProfileTogetherAt>;
  note?: string;
}

/** A pair of tiers each reading and writing at once, every job `processes` processes. */
export interface ProfileTogetherAt {
  /** Processes of each member's read job and of its write job. */
  processes: number;
  /** Each member's totals over its processes, bytes/s. */
  members: Record<string, { read_bw_bytes: number; write_bw_bytes: number }>;
}

/** A remote tier's bandwidth at one count of nodes doing the same I/O at once. */
export interface ScalingPoint {
  /** Nodes doing I/O at once. */
  nodes: number;
  /** Bandwidth each node got, bytes/s (the aggregate over `nodes`). */
  read_bw_bytes_per_node: number;
  write_bw_bytes_per_node: number;
  /** All the nodes together over their common window, bytes/s. */
  read_bw_bytes: number;
  write_bw_bytes: number;
}

/**
 * A shared (remote) tier's per-node bandwidth as a function of how many nodes
 * use it at once: `bench`'s remote scaling curve across nodes, or stated.
 */
export interface ProfileScaling {
  /** `measured` from a multi-node `bench`, `stated` in a hand-written profile. */
  basis: "measured" | "stated";
  /** Request size and requests in flight per node the points were measured at. */
  bs: number;
  iodepth: number;
  /** By node count, ascending; the first is usually 1. */
  points: ScalingPoint[];
  note?: string;
}

/** A source entry of a hand-written profile. */
export interface ProfileSource {
  /** JSON paths of the figures it accounts for; a path covers everything under it. */
  fields: string[];
  basis: SourceBasis;
  /** The figure or claim, in the profile author's words. */
  what: string;
  /** Document, section, table or page. */
  citation?: string;
  url?: string;
  /** How the figure follows from the cited ones, and which factors are assumptions. */
  derivation?: string;
}

/** The normalized profile: what the solver reads. */
export interface Profile {
  /** Where the document came from (a file path, or any name the caller gave). */
  source: string;
  /** The schema of the document it was read from. */
  schema: typeof ACCEPTED_SCHEMAS[number];
  /** A result's kind (`profile`, `contention`, `run`); absent for hand-written profiles. */
  kind?: string;
  host_name: string;
  /** When the figures were measured or written down (ISO 8601). */
  created: string;
  description?: string;
  tiers: Record<string, ProfileTier>;
  /** Absent when the document has no matrix: every lookup is then unmeasured. */
  contention?: ProfileContention;
  /**
   * Shared tiers' scaling curves across nodes, by tier label (`pfs`, `s3`).
   * Absent for a single-node profile: the solver then assumes a tier's
   * per-node bandwidth does not fall with the node count, and says so.
   */
  scaling?: Record<string, ProfileScaling>;
  host: ProfileHost;
  /** A hand-written profile's sources ([] for results). */
  sources: ProfileSource[];
  /** What was left out or is doubtful (a tier without usable runs, a failed matrix). */
  notes: string[];
}

/**
 * A profile that cannot be used: names the document, the JSON path of the
 * bad field and what is allowed. A {@linkcode ConfigError} on the field
 * `profile`, so the CLI exits with status 2 for it.
 *
 * @example
 * ```ts
 * import { ProfileError } from "./profile.ts";
 * const e = new ProfileError("p.json", "tiers.file.bs", "0 is too small (must be > 0)", "an integer > 0");
 * console.assert(e.message === "--profile: p.json: tiers.file.bs: 0 is too small (must be > 0); use an integer > 0");
 * ```
 */
export class ProfileError extends ConfigError {
  override name = "ProfileError";
  /** The document. */
  readonly source: string;
  /** The JSON path of the bad field (`tiers.file.read_bw_bytes`); `""` for the whole document. */
  readonly path: string;

  constructor(
    source: string,
    path: string,
    problem: string,
    allowed?: string,
    options?: ErrorOptions,
  ) {
    const where = path ? `${path}: ` : "";
    super(
      "profile",
      `${source}: ${where}${problem}${allowed ? `; use ${allowed}` : ""}`,
      undefined,
      options,
    );
    this.source = source;
    this.path = path;
  }
}

// ---------------------------------------------------------------- JSON paths

const PATH_TOKEN = /\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]/y;

/**
 * The keys of a path written as `formatPath` (core/zod_issue.ts) writes it; undefined
 * when it is not one.
 *
 * @example
 * ```ts
 * import { parsePath } from "./profile.ts";
 * console.assert(JSON.stringify(parsePath('tiers.file["x:y"][0]')) === '["tiers","file","x:y",0]');
 * console.assert(parsePath("tiers..file") === undefined);
 * ```
 */
export function parsePath(text: string): (string | number)[] | undefined {
  const out: (string | number)[] = [];
  PATH_TOKEN.lastIndex = 0;
  while (PATH_TOKEN.lastIndex < text.length) {
    const start = PATH_TOKEN.lastIndex;
    const m = PATH_TOKEN.exec(text);
    if (!m || (start === 0 && text.startsWith("."))) return undefined;
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    else out.push(JSON.parse(`"${m[3]}"`) as string);
  }
  return text.length > 0 ? out : undefined;
}
