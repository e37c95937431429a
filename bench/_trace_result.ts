/**
 * The `trace_replay` section of a replay's document, built from its threads'
 * reports: per tier and direction, bytes, rates and latency; recorded beside
 * replayed time for the whole trace, each thread and each phase; the notes
 * and the timeline.
 *
 * @module
 */

import {
  encodeLatency,
  histogramsOfCounts,
  type LatencyHistograms,
  latencyStats,
  mergeLatency,
  newLatencyHistograms,
} from "../core/recorder.ts";
import { OP_NAMES } from "../engines/trace_ops.ts";
import type { ThreadDirection, ThreadReplayReport } from "../engines/trace_replay.ts";
import type {
  TraceReplayDirection,
  TraceReplayResult,
  TraceReplayTier,
} from "../schema/trace_replay.ts";
import type { Tier } from "../tiers/types.ts";
import type { Compiled } from "./_trace_compile.ts";

/** User and system CPU time, µs (node:process). */
export type CpuUsage = { user: number; system: number };

/** The laid-out files: [file, bytes]. */
export type LaidOut = [number, number][];

/** What the section takes from the replay's options. */
export interface ResultOptions {
  readonly trace: string;
  readonly maps: readonly { readonly prefix: string }[];
  readonly speed: TraceReplayResult["speed"];
  readonly verify?: boolean;
}

function direction(ds: ThreadDirection[], seconds: number): TraceReplayDirection {
  const h: LatencyHistograms = newLatencyHistograms();
  let bytes = 0, ops = 0, short = 0;
  for (const d of ds) {
    mergeLatency(h, histogramsOfCounts(d.hist));
    bytes += d.bytes;
    ops += d.ops;
    short += d.short;
  }
  return {
    io_bytes: bytes,
    bw_bytes: seconds > 0 ? bytes / seconds : 0,
    iops: seconds > 0 ? ops / seconds : 0,
    total_ios: ops,
    short_reads: short,
    lat_ns: latencyStats(h.lat),
    clat_ns: latencyStats(h.clat),
    slat_ns: latencyStats(h.slat),
    hist: encodeLatency(h),
  };
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;

/** The trace_replay section from the threads' reports. */
export function buildResult(
  o: ResultOptions,
  c: Compiled,
  reports: ThreadReplayReport[],
  tiers: Tier[],
  laid: LaidOut,
  notes: readonly string[],
  cpu: CpuUsage,
): TraceReplayResult {
  const ran = reports.filter((r) => r.ops > 0);
  const start = Math.min(...ran.map((r) => r.start));
  const end = Math.max(...ran.map((r) => r.end));
  const replayed = ran.length > 0 ? (end - start) / 1000 : 0;
  const recStart = Math.min(...ran.map((r) => r.recordedStart));
  const recEnd = Math.max(...ran.map((r) => r.recordedEnd));
  const tierResults: TraceReplayTier[] = o.maps.map((m, i) => ({
    prefix: m.prefix,
    tier: tiers[i]!.describe(),
    read: direction(reports.map((r) => r.tiers[i]!.read), replayed),
    write: direction(reports.map((r) => r.tiers[i]!.write), replayed),
  }));
  const phases = phaseResults(c, reports);
  const spans = timelineSpans(reports, start);
  const extra = replayNotes(notes, c, reports);
  return {
    trace: o.trace,
    speed: o.speed,
    total: {
      recorded_s: ran.length > 0 ? round6((recEnd - recStart) / 1e6) : 0,
      replayed_s: round6(replayed),
    },
    tiers: tierResults,
    threads: threadResults(c, reports),
    phases,
    ops: c.ops,
    layout: { files: laid.length, bytes: laid.reduce((t, [, b]) => t + b, 0) },
    cpu: {
      usr_pct: replayed > 0 ? round6(cpu.user / 1e4 / replayed) : 0,
      sys_pct: replayed > 0 ? round6(cpu.system / 1e4 / replayed) : 0,
    },
    ...(o.verify
      ? {
        verify: {
          checked_bytes: reports.reduce((t, r) => t + r.verified, 0),
          unchecked_bytes: reports.reduce((t, r) => t + r.unverifiable, 0),
        },
      }
      : {}),
    notes: extra,
    timeline: {
      columns: ["thread", "op", "bytes", "start_ms", "end_ms"],
      spans,
      cut: reports.some((r) => r.spansCut),
    },
  };
}

/** Recorded beside replayed time of each phase that did I/O. */
function phaseResults(c: Compiled, reports: ThreadReplayReport[]): TraceReplayResult["phases"] {
  return c.phases.flatMap((p, i) => {
    if (!p.io) return [];
    const s = Math.min(...reports.map((r) => r.phases[i]![0]));
    const e = Math.max(...reports.map((r) => r.phases[i]![1]));
    return [{
      name: p.name,
      recorded_s: round6((p.end - p.start) / 1e6),
      replayed_s: Number.isFinite(s) ? round6((e - s) / 1000) : 0,
    }];
  });
}

/** Every thread's kept spans, thread by thread, times in ms from the replay's `start`. */
function timelineSpans(
  reports: ThreadReplayReport[],
  start: number,
): TraceReplayResult["timeline"]["spans"] {
  const spans: TraceReplayResult["timeline"]["spans"] = [];
  for (const r of reports) {
    for (let k = 0; k < r.spans.length; k += 4) {
      const [a, b, code, bytes] = [r.spans[k]!, r.spans[k + 1]!, r.spans[k + 2]!, r.spans[k + 3]!];
      spans.push([
        r.thread,
        OP_NAMES[code] ?? String(code),
        bytes,
        round3(a - start),
        round3(b - start),
      ]);
    }
  }
  return spans;
}

/** The reader's and compiler's notes, then what the replay did unlike the recording. */
function replayNotes(
  notes: readonly string[],
  c: Compiled,
  reports: ThreadReplayReport[],
): string[] {
  const extra: string[] = [...notes, ...c.notes];
  const late = reports.reduce((t, r) => t + r.lateReaps, 0);
  if (late > 0) {
    extra.push(`${late} completions reaped later than recorded (to free a slot, or at the end)`);
  }
  const refused = reports.reduce((t, r) => t + r.directRefused, 0);
  if (refused > 0) {
    extra.push(`${refused} files opened without O_DIRECT: their file system refused it`);
  }
  const meta = reports.reduce((t, r) => t + r.metaFailed, 0);
  if (meta > 0) {
    extra.push(
      `${meta} metadata calls (open, unlink, mkdir, rename, fallocate) failed here, not in the recording`,
    );
  }
  return extra;
}

/** Each thread's ops and its recorded beside replayed time. */
function threadResults(c: Compiled, reports: ThreadReplayReport[]): TraceReplayResult["threads"] {
  return reports.map((r) => ({
    thread: r.thread,
    process: c.threads.find((t) => t.name === r.thread)?.process ?? r.thread,
    ops: r.ops,
    recorded_s: r.ops > 0 ? round6((r.recordedEnd - r.recordedStart) / 1e6) : 0,
    replayed_s: r.ops > 0 ? round6((r.end - r.start) / 1000) : 0,
  }));
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;
