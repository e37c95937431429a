/**
 * The `cluster` section of a result document written by a run across
 * processes (launched by mpirun, srun or a torchrun-style environment): who
 * took part, each process's own runs, and the aggregate of each run with the
 * rule behind every figure (docs/multinode.md).
 *
 * @module
 */

import type { LatencyStats } from "../core/recorder.ts";
import type { ContentionResult } from "./contention.ts";
import type { RunStatus } from "./run_status.ts";
import type { WorkloadResult } from "./workload.ts";

/**
 * Bytes over a span, across processes: as a run's `first_done`/`last_done`
 * (result.ts's SpanFigures; this file cannot import result.ts, which
 * imports it).
 */
export interface ClusterSpan {
  /** Span in ms, from the earliest start of measurement. */
  runtime: number;
  io_bytes: number;
  bw_bytes: number;
}

/** One process of the run; `Run` is result.ts's RunResult. */
export interface ClusterProcess<Run> {
  rank: number;
  /** The node it counts as (host name, or `host#rank` under TIERBENCH_NODE_PER_RANK=1). */
  node: string;
  host: string;
  pid: number;
  /** Its runs, as a single-node run reports them; times relative to its own start. */
  runs: Run[];
  /**
   * For each run, when its measurement began, ms after the barrier that
   * released every process (the ramp plus this process's own delay).
   */
  start_ms: number[];
  /**
   * `contention` across nodes: this process's own matrix, as it measured it
   * (the document's `contention` sums them).
   */
  contention?: ContentionResult;
}

/** One direction of one run, over every process. */
export interface ClusterDirection {
  /** Bytes every process moved over its whole measured window. */
  io_bytes: number;
  /**
   * Bandwidth summed over the common window: the bytes each process moved
   * while every process was measuring, over that window's length.
   */
  common_bw_bytes: number;
  /** Bytes moved inside the common window, all processes. */
  common_io_bytes: number;
  /** IOR's figure: all bytes over the slowest process's time (from the earliest start). */
  last_done: ClusterSpan;
  /** elbencho's first-done: what all processes moved until the first one finished. */
  first_done: ClusterSpan;
  /** Latency from the processes' HDR histograms merged (never averaged percentiles). */
  lat_ns: LatencyStats;
  clat_ns: LatencyStats;
}

/** The aggregate of one run across processes. */
export interface ClusterRun {
  name: string;
  /** The common window, ms after the barrier: latest start to earliest end. */
  window: { start_ms: number; end_ms: number };
  read: ClusterDirection;
  write: ClusterDirection;
  /** Each process's bandwidth over the common window (these sum to the aggregate). */
  per_process: { rank: number; node: string; read_bw_bytes: number; write_bw_bytes: number }[];
  /** Each node's bandwidth over the common window: its processes summed. */
  per_node: {
    node: string;
    processes: number;
    read_bw_bytes: number;
    write_bw_bytes: number;
  }[];
}

/**
 * One process's own share of a `workload` across processes: its node's
 * ranks, on its own local tiers and its own scratch on the shared remote
 * path, as a single-node `workload` reports them.
 */
export interface ClusterWorkload {
  rank: number;
  node: string;
  status: RunStatus;
  /** One line, when its run did not end ok. */
  error?: string;
  /** Its result; times relative to its own start (every node started at one barrier). */
  workload: WorkloadResult;
}

/** The `cluster` section; `Run` is result.ts's RunResult. */
export interface ClusterSection<Run> {
  /** What started the processes (`openmpi`, `mpich`, `slurm`, `torchrun`). */
  launcher: string;
  /** How they talked (`mpi` or `tcp`). */
  transport: string;
  processes_count: number;
  /** The nodes, in rank order of their first process. */
  nodes: string[];
  /** The hosts, distinct. */
  hosts: string[];
  processes: ClusterProcess<Run>[];
  /** `run`: each run's aggregate; empty for a `workload`. */
  runs: ClusterRun[];
  /** IOR's stonewalling was on: the first process to finish stopped the others. */
  stonewalling?: boolean;
  /**
   * `workload` across processes: each process's own result, in rank order
   * (the document's `workload` is their aggregate: times the slowest node's,
   * bytes summed).
   */
  workloads_per_process?: ClusterWorkload[];
  /** Ranks lost during the run, with the one-line cause. */
  lost?: { rank: number; node: string; error: string }[];
  /**
   * What coordination cost, at the root: each barrier's and the gather's
   * wait, ms (a `workload`: the start barrier, and the gather of the results
   * at the end, which waits for the slowest node). A list is absent when
   * none of its waits ended (not measured): a run stopped, or a rank lost,
   * before its first barrier released or its first gather completed.
   */
  coordination: { barrier_ms?: number[]; gather_ms?: number[] };
}
