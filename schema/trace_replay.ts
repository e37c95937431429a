/**
 * The `trace_replay` section of a result document (`tierbench trace
 * replay`): a trace's ops run again on the tiers its paths were mapped to,
 * per tier and direction in fio's terms, with recorded beside replayed time
 * per thread and phase.
 *
 * @module
 */

import type { EncodedLatency, LatencyStats } from "../core/recorder.ts";
import type { TierFacts } from "../tiers/types.ts";

/** One direction of one tier in a replay. */
export interface TraceReplayDirection {
  io_bytes: number;
  /** io_bytes over the replay's whole time, bytes/s. */
  bw_bytes: number;
  iops: number;
  total_ios: number;
  /** Reads that returned fewer bytes than asked (end of file), as the recording may have too. */
  short_reads: number;
  /** Synchronous calls: the call; aio: from io_submit to the io_getevents that returned it. */
  lat_ns: LatencyStats;
  /** aio: from io_submit's return to the completion seen; synchronous calls: as lat. */
  clat_ns: LatencyStats;
  /** aio: io_submit's time; synchronous calls: none (N = 0). */
  slat_ns: LatencyStats;
  /** HdrHistogram compressed base64 of each latency (ns), merged over threads. */
  hist: EncodedLatency;
}

/** One mapped tier of a replay. */
export interface TraceReplayTier {
  /** The trace's path prefix mapped to the tier. */
  prefix: string;
  tier: TierFacts;
  read: TraceReplayDirection;
  write: TraceReplayDirection;
}

/** Recorded beside replayed, for the whole trace, a thread or a phase. */
export interface RecordedReplayed {
  /** From the first op's start to the last op's end in the recording, s. */
  recorded_s: number;
  /** The same in the replay, s. */
  replayed_s: number;
}

/** One thread of the trace as replayed. */
export interface TraceReplayThread extends RecordedReplayed {
  thread: string;
  process: string;
  ops: number;
}

/** One phase of the trace as replayed. */
export interface TraceReplayPhase extends RecordedReplayed {
  name: string;
}

/** The trace_replay section. */
export interface TraceReplayResult {
  /** The trace replayed. */
  trace: string;
  /** `1x`: think times kept; `max`: removed. */
  speed: "max" | "1x";
  /** The whole replay, from the first op's start to the last op's end. */
  total: RecordedReplayed;
  tiers: TraceReplayTier[];
  threads: TraceReplayThread[];
  /** Phases with I/O, in trace order. */
  phases: TraceReplayPhase[];
  /** Ops run, by kind (read, write, submit, iocb, reap, open, …). */
  ops: Record<string, number>;
  /** Files laid out before the replay (read before the trace writes them), unmeasured. */
  layout: { files: number; bytes: number };
  /**
   * The replay's own CPU while its threads ran (every thread of the
   * process, user and system), as % of one core over the replayed time.
   */
  cpu: { usr_pct: number; sys_pct: number };
  /** --verify: bytes read back and checked, and bytes read that no write of the thread covered. */
  verify?: { checked_bytes: number; unchecked_bytes: number };
  /** What differs from the recording, and why. */
  notes: string[];
  /** Every op span of each thread (up to a cap), ms from the replay's start: for timelines. */
  timeline: {
    columns: ["thread", "op", "bytes", "start_ms", "end_ms"];
    spans: [string, string, number, number, number][];
    cut: boolean;
  };
}
