/**
 * The timelines a document holds, as one list of spans: a workload's
 * measured iteration (rank × stream), a plan's simulated iterations, a
 * replay's simulated iteration (the plan's × scale) beside its measured one,
 * a trace replay's threads. The report draws them as a Gantt chart
 * (report/_charts.ts); `tierbench trace timeline` writes them as Chrome
 * Trace Event JSON.
 *
 * @module
 */

import type { ChromeTraceWriter, TimelineSummary } from "../trace/chrome_trace.ts";
import type { PlanDocument } from "../schema/plan.ts";
import type { ResultDocument } from "../schema/result.ts";

/** One span of a document's timeline. */
export interface TimelineSpan {
  /** What the spans are: `measured`, `simulated`, `replayed`, `simulated iteration 2`. */
  readonly source: string;
  /** The track's process (`rank 0`, `process 4711`) and thread (`local:read`, `thread 4712`). */
  readonly process: string;
  readonly thread: string;
  /** The op's label (`sg3.m`, `read`) and kind (`read`, `write`, `compute`, …). */
  readonly name: string;
  readonly kind: string;
  readonly bytes: number;
  /** ms from the start of what `source` shows. */
  readonly start_ms: number;
  readonly end_ms: number;
}

const title = (word: string, name: string) => (/^[0-9]+$/.test(name) ? `${word} ${name}` : name);

/**
 * Every timeline span of a result or plan document, in document order;
 * none when it has no timeline.
 *
 * @example
 * ```ts
 * import { timelineSpans } from "./timeline.ts";
 * const doc = {
 *   trace_replay: {
 *     threads: [{ thread: "7", process: "7" }],
 *     timeline: { spans: [["7", "read", 4096, 0, 0.02]] },
 *   },
 * };
 * const [s] = [...timelineSpans(doc as never)];
 * console.assert(s!.process === "process 7" && s!.name === "read" && s!.end_ms === 0.02);
 * ```
 */
export function* timelineSpans(doc: ResultDocument | PlanDocument): Generator<TimelineSpan> {
  if ("placement" in doc) {
    for (
      const [it, rank, stream, kind, label, bytes, s, e] of doc.predictions.plan.timeline?.spans ??
        []
    ) {
      yield rankSpan(`simulated iteration ${it}`, [rank, stream, kind, label, bytes, s, e]);
    }
    return;
  }
  const simulated = doc.replay?.simulated_timeline;
  if (simulated) {
    for (const row of simulated.spans) yield rankSpan("simulated", row);
  }
  for (const row of doc.workload?.timeline?.spans ?? []) yield rankSpan("measured", row);
  const t = doc.trace_replay;
  if (t) {
    const processOf = new Map(t.threads.map((x) => [x.thread, x.process]));
    for (const [thread, op, bytes, s, e] of t.timeline.spans) {
      yield {
        source: "replayed",
        process: title("process", processOf.get(thread) ?? thread),
        thread: title("thread", thread),
        name: op,
        kind: op,
        bytes,
        start_ms: s,
        end_ms: e,
      };
    }
  }
}

/** A rank stream's op (rank, stream, kind, label, bytes, start, end) as a span of `source`. */
function rankSpan(
  source: string,
  [rank, stream, kind, label, bytes, s, e]: readonly [
    number,
    string,
    string,
    string,
    number,
    number,
    number,
  ],
): TimelineSpan {
  return {
    source,
    process: `rank ${rank}`,
    thread: stream,
    name: label,
    kind,
    bytes,
    start_ms: s,
    end_ms: e,
  };
}

/**
 * Writes a document's timelines to `out`, one track per source × process ×
 * thread (`measured · rank 0` / `local:read`); undefined when the document
 * has none.
 *
 * @example
 * ```ts ignore
 * const w = await ChromeTraceWriter.create("replay.timeline.json");
 * await documentTimeline(doc, w);
 * await w.close();
 * ```
 */
export async function documentTimeline(
  doc: ResultDocument | PlanDocument,
  out: ChromeTraceWriter,
): Promise<TimelineSummary | undefined> {
  let spans = 0;
  const tracks = new Set<string>();
  const sources = new Set<string>();
  for (const s of timelineSpans(doc)) sources.add(s.source);
  if (sources.size === 0) return undefined;
  for (const s of timelineSpans(doc)) {
    const process = sources.size > 1 ? `${s.source} · ${s.process}` : s.process;
    const track = await out.track(process, s.thread);
    tracks.add(`${track.pid}/${track.tid}`);
    await out.span(track, s.name, s.kind, s.start_ms * 1000, (s.end_ms - s.start_ms) * 1000, {
      bytes: s.bytes,
    });
    spans++;
  }
  return { events: spans, spans, tracks: tracks.size };
}

/** Spans of one track and kind drawn as one bar: near neighbours merged. */
export interface GanttBar {
  readonly source: string;
  /** `process · thread`. */
  readonly track: string;
  readonly kind: string;
  readonly start_ms: number;
  readonly end_ms: number;
  /** Spans merged into the bar, their bytes, and the first one's name. */
  readonly ops: number;
  readonly bytes: number;
  readonly first: string;
}

/** What {@linkcode ganttBars} made. */
export interface GanttBars {
  readonly bars: GanttBar[];
  /** Per source, its tracks in the order drawn. */
  readonly tracks: Map<string, string[]>;
  /** Tracks left out past `maxTracks`, per source. */
  readonly cut: Map<string, number>;
}

/**
 * Bars for a Gantt chart: per source, per track (process · thread) and op
 * kind, spans closer than 1/`resolution` of the source's length merged into
 * one bar, so that a long timeline draws in a bounded number of marks; at
 * most `maxTracks` tracks per source (in natural order: rank 2 before rank 10).
 *
 * @example
 * ```ts
 * import { ganttBars } from "./timeline.ts";
 * const at = (s: number) => ({
 *   source: "measured", process: "rank 0", thread: "local:read", name: `sg${s}`, kind: "read",
 *   bytes: 10, start_ms: s, end_ms: s + 0.9,
 * });
 * const g = ganttBars([at(0), at(1), at(500)], { resolution: 100 });
 * console.assert(g.bars.length === 2 && g.bars[0]!.ops === 2 && g.bars[0]!.end_ms === 1.9);
 * ```
 */
export function ganttBars(
  spans: Iterable<TimelineSpan>,
  o: { resolution?: number; maxTracks?: number } = {},
): GanttBars {
  const resolution = o.resolution ?? 800, maxTracks = o.maxTracks ?? 40;
  const bySource = new Map<string, Map<string, TimelineSpan[]>>();
  for (const s of spans) {
    let tracks = bySource.get(s.source);
    if (!tracks) bySource.set(s.source, tracks = new Map());
    const key = `${s.process} · ${s.thread}`;
    let list = tracks.get(key);
    if (!list) tracks.set(key, list = []);
    list.push(s);
  }
  const bars: GanttBar[] = [];
  const order = new Map<string, string[]>(), cut = new Map<string, number>();
  const natural = new Intl.Collator("en", { numeric: true });
  for (const [source, tracks] of bySource) {
    const all = [...tracks.values()].flat();
    const t0 = Math.min(...all.map((s) => s.start_ms));
    const gap = (Math.max(...all.map((s) => s.end_ms)) - t0) / resolution;
    const names = [...tracks.keys()].sort(natural.compare);
    order.set(source, names.slice(0, maxTracks));
    if (names.length > maxTracks) cut.set(source, names.length - maxTracks);
    for (const track of names.slice(0, maxTracks)) {
      const byKind = new Map<string, TimelineSpan[]>();
      for (const s of tracks.get(track)!) {
        let l = byKind.get(s.kind);
        if (!l) byKind.set(s.kind, l = []);
        l.push(s);
      }
      for (const [kind, list] of byKind) bars.push(...merged(source, track, kind, list, gap));
    }
  }
  return { bars, tracks: order, cut };
}

/** The spans of one track and kind, in time order, merged where the gap is at most `gap`. */
function merged(
  source: string,
  track: string,
  kind: string,
  list: TimelineSpan[],
  gap: number,
): GanttBar[] {
  list.sort((a, b) => a.start_ms - b.start_ms);
  const out: GanttBar[] = [];
  let cur: { start: number; end: number; ops: number; bytes: number; first: string } | undefined;
  const flush = () => {
    if (cur) {
      out.push({
        source,
        track,
        kind,
        start_ms: cur.start,
        end_ms: cur.end,
        ops: cur.ops,
        bytes: cur.bytes,
        first: cur.first,
      });
    }
  };
  for (const s of list) {
    if (cur && s.start_ms - cur.end <= gap) {
      cur.end = Math.max(cur.end, s.end_ms);
      cur.ops++;
      cur.bytes += s.bytes;
      continue;
    }
    flush();
    cur = { start: s.start_ms, end: s.end_ms, ops: 1, bytes: s.bytes, first: s.name };
  }
  flush();
  return out;
}
