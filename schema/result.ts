/**
 * The result document (`"schema": "tierbench/result@1"`): one JSON file per
 * invocation, the only input of everything downstream. Field names follow
 * fio's JSON output where fio has one.
 *
 * @module
 */

import type { TierFacts } from "../tiers/types.ts";
import type { WorkloadResult } from "./workload.ts";
import type { ReplayResult } from "./replay.ts";
import type { TraceReplayResult } from "./trace_replay.ts";
import type { RunStatus } from "./run_status.ts";
import type { ConcurrencyResult } from "./concurrency.ts";
import type { ContentionResult } from "./contention.ts";
import type { SweepResult } from "./sweep.ts";
import type { ClusterSection } from "./cluster.ts";
import type { ScalingResult } from "./scaling.ts";
import type { HostFacts } from "../core/host.ts";
import type { EncodedLatency, LatencyStats } from "../core/recorder.ts";
import type { RetryCause } from "../core/job_protocol.ts";
import { writeFileAtomic } from "../core/output_file.ts";

/** The schema id written into every result. */
export const RESULT_SCHEMA = "tierbench/result@1";

/**
 * The `$id` of the result document's JSON Schema (schemas/result.schema.json,
 * generated from {@linkcode ResultDocument} by `deno task schemas`), written
 * as `"$schema"` into every result beside `schema`.
 */
export const RESULT_SCHEMA_ID = "https://tierbench.dev/schemas/result-1.json";

/** Bandwidth over a span, for first-done and last-done figures. */
export interface SpanFigures {
  /** Span in ms, from the start of measurement. */
  runtime: number;
  io_bytes: number;
  bw_bytes: number;
  iops: number;
}

/** One direction (read or write) of one run, in fio's terms. */
export interface DirectionResult {
  io_bytes: number;
  /** Bytes per second over `runtime`. */
  bw_bytes: number;
  iops: number;
  /** Measured time in ms (ramp excluded). */
  runtime: number;
  total_ios: number;
  /** Total latency: from preparing an I/O to seeing it complete. */
  lat_ns: LatencyStats;
  /** Completion latency: from submission to completion. */
  clat_ns: LatencyStats;
  /** Submission latency; all zero (N = 0) for engines without a separate submit. */
  slat_ns: LatencyStats;
  /** Up to the moment the first job finished, when every job was still running. */
  first_done: SpanFigures;
  /** Up to the moment the last job finished (the usual aggregate figure). */
  last_done: SpanFigures;
  /** Time to first byte, for requests that have one (S3 GETs). */
  ttfb_ns?: LatencyStats;
  /**
   * HdrHistogram compressed base64 of each latency (ns), merged over jobs;
   * tierbench writes it always, results written before it was added lack it.
   */
  hist?: EncodedLatency;
}

/** Bandwidth and IOPS sampled at a fixed interval during measurement. */
export interface TimeSeries {
  interval_ms: number;
  /** End of each interval, ms since the start of measurement. */
  t_ms: number[];
  read_bw_bytes: number[];
  write_bw_bytes: number[];
  read_iops: number[];
  write_iops: number[];
  /**
   * Under a rate only: how far behind its schedule the job furthest behind
   * was at the end of each interval, ms (0 when on time).
   */
  lag_ms?: number[];
  /**
   * Under a rate only: the mean latency (from intended starts) of the reads,
   * and of the writes, that completed in each interval, ns; null where none did.
   */
  read_lat_ns?: (number | null)[];
  write_lat_ns?: (number | null)[];
  /**
   * Total latency (fio's lat) of the reads that completed in each interval:
   * the 50th and 99th percentiles and the largest, ns, read from the
   * interval's HDR histogram merged over jobs (core/interval_log.ts); null
   * where none did. Absent for a direction that moved nothing, and in
   * results written before they were added.
   */
  read_lat_p50_ns?: (number | null)[];
  read_lat_p99_ns?: (number | null)[];
  read_lat_max_ns?: (number | null)[];
  /** As {@linkcode TimeSeries.read_lat_p50_ns}, for the writes. */
  write_lat_p50_ns?: (number | null)[];
  write_lat_p99_ns?: (number | null)[];
  write_lat_max_ns?: (number | null)[];
}

/**
 * How far a run under a rate kept to its schedule (core/rate.ts), all jobs
 * together: counts summed, lags the worst job's.
 */
export interface ScheduleResult {
  /** Mean ms between a job's intended starts. */
  interval_ms: number;
  /** Requests whose intended start fell in the measured window (up to where each job stopped). */
  intended_ios: number;
  /** Of those, the ones issued. */
  issued_ios: number;
  /** The longest a measured request waited past its intended start (or a job at its end), ms. */
  max_lag_ms: number;
  /** How far behind the furthest-behind job was when it stopped issuing, ms. */
  final_lag_ms: number;
  /** How far behind a job may end and still have met its rate: interval_ms + 10 ms. */
  tolerance_ms: number;
  /** Every job ended within tolerance_ms of its schedule. */
  met: boolean;
}

/** The options a run used, resolved (fio's names where fio has one). */
export interface RunOptions {
  tier: string;
  rw: string;
  rwmixread: number;
  bs: number;
  size: number;
  io_size: number;
  time_based: boolean;
  runtime_ms: number | null;
  ramp_ms: number;
  iodepth: number;
  numjobs: number;
  direct: boolean;
  engine: string;
  /** Where the engine's calls come from (libc, libaio.so.1, or raw system calls). */
  engine_impl: string;
  /**
   * How the engine was chosen when `--iodepth` was above 1 on a file-backed
   * tier and no `--engine` was named: io_uring where the kernel allows it,
   * else libaio, and why. Absent when the engine was named (or is psync).
   */
  engine_choice?: { chosen: string; why: string };
  seed: number;
  log_avg_msec: number;
  nrfiles: number;
  file_layout: string;
  /** fsync of every file at the end of each job, after the measured window (fio's end_fsync). */
  end_fsync: boolean;
  /**
   * How long one request may take (--timeout, default 30 s) before the run
   * fails as timed out, in ms; tierbench writes it always, results written
   * before it was added lack it.
   */
  timeout_ms?: number;
  /** The existing file read jobs shared (--filename), when one was named. */
  filename?: string;
  /** Verify mode (--verify): blocks stamped and checked (bench/verify.ts); absent when off. */
  verify?: boolean;
  /**
   * io_uring only: fio's options as the run used them, and the kernel's
   * io_uring features (io_uring_params.features) by their IORING_FEAT_ names.
   */
  io_uring?: {
    fixedbufs: boolean;
    registerfiles: boolean;
    sqthread_poll: boolean;
    features: string[];
  };
  /** s3 only: object size, part size and multipart threshold in bytes. */
  s3?: { object_size: number; part_size: number; multipart_threshold: number };
  /**
   * Open-loop rate per job (--rate or --rate-iops, --rate-process); absent
   * when closed-loop. The one not given is null.
   */
  rate?: { bytes_per_s: number | null; iops: number | null; process: string };
  /**
   * The CPUs the jobs' threads were pinned to (fio's cpus_allowed, cpumask),
   * as a list (`0-3,8`), and cpus_allowed_policy: shared (every job on every
   * CPU of the list) or split (one CPU each); absent when not pinned.
   */
  cpus_allowed?: { cpus: string; policy: string };
  /**
   * A job from a fio job file: the options in force for it as the file
   * (and the command line) wrote them, its [global]'s and its own, by fio's
   * names. `bs` above is then its largest block size.
   */
  fio?: Record<string, string>;
}

/** One run: one pattern on one tier. */
export interface RunResult {
  name: string;
  status: RunStatus;
  /** The one-line cause when status is not ok. */
  error?: string;
  tier: TierFacts;
  options: RunOptions;
  /** Warm-up before measurement; its I/O is excluded from every figure. */
  ramp: { ms: number; excluded: true };
  /**
   * `bench`: the steady-state criterion the run was stopped by once it held
   * (else it measured its whole runtime), and whether it held; absent where
   * every run measures its whole runtime.
   */
  steady?: { criterion: string; reached: boolean };
  read: DirectionResult;
  write: DirectionResult;
  timeseries: TimeSeries;
  /** Under a rate: how far the run kept to its schedule; absent when closed-loop. */
  schedule?: ScheduleResult;
  /**
   * CPU time of the whole tierbench process during measurement, as % of one
   * core; and `jobs`, the CPU time the jobs' own threads spent from the end of
   * their ramp to their end, summed over jobs, in ns (getrusage RUSAGE_THREAD,
   * what fio's usr_cpu and sys_cpu count for a job): divided by the I/Os, the
   * harness's CPU per I/O. `jobs` is absent in documents written before it
   * was added.
   */
  cpu: { usr_pct: number; sys_pct: number; jobs?: { usr_ns: number; sys_ns: number } };
  /**
   * I/O errors the run counted and went on after (a job file's
   * continue_on_error), per direction, and the first; absent when none.
   */
  io_errors?: { read: number; write: number; first: string; first_errno: number };
  /**
   * Why the run never started, its figures all zero: a job file's job the
   * run ended before (--trigger-timeout, exit_what=all), as fio reports one.
   */
  not_started?: string;
  jobs: {
    job: number;
    read_bytes: number;
    write_bytes: number;
    end_ms: number;
    /** Time of the end-of-job fsync, when end_fsync is on. */
    fsync_ms: number;
    /** Requests retried after transient errors (network tiers). */
    retries: number;
    /**
     * `retries` by cause (core/job_protocol.ts RETRY_CAUSES): throttled
     * (503 SlowDown, 429), server_error (another 5xx), connection (refused,
     * reset or dropped mid-body), timeout (no progress for the idle
     * timeout), other. Absent in results written before it was added.
     */
    retry_causes?: Record<RetryCause, number>;
  }[];
}

/** One phase of a command that runs several, and what it cost. */
export interface PhaseTime {
  /** `patterns`, `contention`, `concurrency`, `workloads`. */
  name: string;
  /** Wall-clock time, ms. */
  wall_ms: number;
  /** CPU time of the whole tierbench process (every thread, user + system), ms. */
  cpu_ms: number;
}

/** The whole document. */
export interface ResultDocument {
  /** The document's JSON Schema, {@linkcode RESULT_SCHEMA_ID}; absent in results written before it was added. */
  $schema?: typeof RESULT_SCHEMA_ID;
  schema: typeof RESULT_SCHEMA;
  tool: { name: "tierbench"; version: string; deno: string; peak_rss_bytes: number };
  run_id: string;
  kind: "run" | "profile" | "workload" | "contention" | "sweep" | "trace-replay";
  started: string;
  finished: string;
  status: RunStatus;
  error?: string;
  host: HostFacts;
  /** The full resolved configuration of the invocation. */
  config: Record<string, unknown>;
  runs: RunResult[];
  /** Remote tiers (S3, PFS) and what was said about them. */
  remote?: { configured: boolean; note: string };
  /**
   * Not written by tierbench: read from fio's JSON (schema/fio_json_read.ts),
   * its format and fio's version; `host` says whose facts `host` holds.
   */
  read_from?: { format: "fio-json" | "fio-json+"; fio_version: string; host: string };
  /** `tierbench workload`: the training workload's figures (workloads/result.ts). */
  workload?: WorkloadResult;
  /** `tierbench replay`: the plan's predicted update phase beside the measured one. */
  replay?: ReplayResult;
  /** `tierbench trace replay`: a trace run again on the tiers, recorded beside replayed. */
  trace_replay?: TraceReplayResult;
  /** `tierbench bench`: the short training workloads of the node profile. */
  workloads?: WorkloadResult[];
  /**
   * `tierbench contention`, and `bench` after its points: each tier's
   * slowdown when other tiers do I/O at the same time (bench/contention.ts).
   */
  contention?: ContentionResult;
  /**
   * `bench` and `contention`: each tier's bandwidth with 1, 2, … R processes
   * at once, reading, writing and both, per request size
   * (schema/concurrency.ts, bench/concurrency.ts); its runs are in `runs`.
   */
  concurrency?: ConcurrencyResult;
  /** `bench`: how long each of its phases took, in order (the patterns, the matrix, …). */
  phases?: PhaseTime[];
  /**
   * A run across processes (mpirun, srun, torchrun-style): who took part,
   * each one's runs and the aggregate. `runs` then holds the aggregates.
   */
  cluster?: ClusterSection<RunResult>;
  /** `tierbench sweep`: the bs × iodepth × numjobs grid per tier, its best point and aio block (bench/sweep.ts). */
  sweep?: SweepResult;
  /**
   * `bench` across nodes: each remote tier's per-node and aggregate bandwidth
   * at 1, 2, 4 … nodes at once (schema/scaling.ts); the planner reads it for
   * `plan --nodes` (docs/multinode.md).
   */
  scaling?: ScalingResult;
}

/**
 * Writes a result document as pretty JSON, creating the parent directory;
 * atomically (a temporary file beside it, renamed over it).
 *
 * @example
 * ```ts ignore
 * await writeResult("results/x.json", doc);
 * ```
 */
export async function writeResult(path: string, doc: ResultDocument): Promise<void> {
  await writeFileAtomic(path, stringifyResult(doc) + "\n");
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isFlat(v: unknown): boolean {
  return v === null || typeof v !== "object";
}

function isFlatArray(v: unknown): boolean {
  return Array.isArray(v) && v.every(isFlat);
}

/**
 * JSON as `JSON.stringify(value, null, 2)` reads it, but with each array of
 * numbers or strings on one line, and each row of an array of such arrays
 * (a timeline, a time series) on a line of its own: a workload's timeline
 * takes a line per op instead of nine.
 *
 * @example
 * ```ts
 * import { stringifyResult } from "./result.ts";
 * const text = stringifyResult({ t_ms: [1, 2, 3], spans: [[0, "a"], [1, "b"]] });
 * console.assert(text.includes('"t_ms": [1,2,3]'));
 * console.assert(JSON.parse(text).spans[1][1] === "b");
 * ```
 */
export function stringifyResult(value: unknown, indent = ""): string {
  // let JSON decide what a value serializes to (dropping undefined, calling toJSON, …)
  const v = JSON.parse(JSON.stringify(value) ?? "null") as Json;
  return format(v, indent);
}

function format(v: Json, indent: string): string {
  if (isFlat(v)) return JSON.stringify(v);
  const inner = indent + "  ";
  if (Array.isArray(v)) {
    if (v.length === 0 || isFlatArray(v)) return JSON.stringify(v);
    if (v.every(isFlatArray)) {
      return `[\n${v.map((row) => inner + JSON.stringify(row)).join(",\n")}\n${indent}]`;
    }
    return `[\n${v.map((x) => inner + format(x, inner)).join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(v as Record<string, Json>);
  if (entries.length === 0) return "{}";
  const body = entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${format(x, inner)}`);
  return `{\n${body.join(",\n")}\n${indent}}`;
}
