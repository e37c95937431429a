/**
 * Timelines in the Chrome Trace Event format (the JSON that Perfetto,
 * chrome://tracing and speedscope open): a writer that streams events to a
 * file in flat memory, one track per process × thread, and a trace turned
 * into one — each call a span on its thread's track, each aio context's
 * requests in flight a counter, each phase a marker across all tracks.
 *
 * ```
 * {"traceEvents":[
 * {"ph":"M","name":"process_name","pid":1,"args":{"name":"rank 0"}},
 * {"ph":"X","name":"write","cat":"io","pid":1,"tid":1,"ts":1200,"dur":80,"args":{…}},
 * …
 * ],"displayTimeUnit":"ms"}
 * ```
 *
 * @module
 */

import { TextSink } from "./_lines.ts";
import type { TraceEvent } from "./events.ts";
import type { TraceReader } from "./reader.ts";

/** A track: the numbers the format knows a process and a thread by. */
export interface ChromeTrack {
  readonly pid: number;
  readonly tid: number;
}

/**
 * Writes a Chrome Trace Event JSON file as a stream. Tracks are made on
 * first use, named, and ordered as they came.
 *
 * @example
 * ```ts
 * import { ChromeTraceWriter } from "./chrome_trace.ts";
 * const dir = await Deno.makeTempDir();
 * const w = await ChromeTraceWriter.create(`${dir}/t.json`);
 * const track = await w.track("rank 0", "local:read");
 * await w.span(track, "sg0.m", "read", 0, 1500, { bytes: 1 << 20 });
 * await w.close();
 * const doc = JSON.parse(await Deno.readTextFile(`${dir}/t.json`));
 * console.assert(doc.traceEvents.some((e: { ph: string }) => e.ph === "X"));
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class ChromeTraceWriter {
  readonly #sink: TextSink;
  readonly #pids = new Map<string, number>();
  readonly #tracks = new Map<string, ChromeTrack>();
  #tids = 0;
  #first = true;

  private constructor(sink: TextSink) {
    this.#sink = sink;
  }

  /** Starts `path` (gzipped when it ends in `.gz`); refuses one that exists. */
  static async create(path: string, field = "output"): Promise<ChromeTraceWriter> {
    const w = new ChromeTraceWriter(await TextSink.create(path, field));
    w.#sink.push('{"traceEvents":[');
    return w;
  }

  async #event(e: Record<string, unknown>): Promise<void> {
    const text = JSON.stringify(e);
    await this.#sink.line(this.#first ? text : "," + text);
    this.#first = false;
  }

  /** The process `name`'s number, named (and sorted by first use) when new. */
  async process(name: string): Promise<number> {
    let pid = this.#pids.get(name);
    if (pid !== undefined) return pid;
    pid = this.#pids.size + 1;
    this.#pids.set(name, pid);
    await this.#event({ ph: "M", name: "process_name", pid, args: { name } });
    await this.#event({ ph: "M", name: "process_sort_index", pid, args: { sort_index: pid } });
    return pid;
  }

  /** The track of `thread` in `process`, named when new. */
  async track(process: string, thread: string): Promise<ChromeTrack> {
    const key = `${process}\u0000${thread}`;
    let t = this.#tracks.get(key);
    if (t) return t;
    const pid = await this.process(process);
    t = { pid, tid: ++this.#tids };
    this.#tracks.set(key, t);
    await this.#event({ ph: "M", name: "thread_name", pid, tid: t.tid, args: { name: thread } });
    await this.#event({
      ph: "M",
      name: "thread_sort_index",
      pid,
      tid: t.tid,
      args: { sort_index: t.tid },
    });
    return t;
  }

  /** A span on `track`: from `startUs` for `durUs` µs. */
  async span(
    track: ChromeTrack,
    name: string,
    cat: string,
    startUs: number,
    durUs: number,
    args?: Record<string, unknown>,
  ): Promise<void> {
    await this.#event({
      ph: "X",
      name,
      cat,
      pid: track.pid,
      tid: track.tid,
      ts: round3(startUs),
      dur: round3(Math.max(0, durUs)),
      ...(args ? { args } : {}),
    });
  }

  /** A counter of process `pid` named `name`, its series' values from `tUs` on. */
  async counter(pid: number, name: string, tUs: number, values: Record<string, number>) {
    await this.#event({ ph: "C", name, pid, ts: round3(tUs), args: values });
  }

  /** A marker at `tUs` across every track. */
  async marker(name: string, tUs: number, args?: Record<string, unknown>): Promise<void> {
    await this.#event({
      ph: "i",
      s: "g",
      name,
      pid: 0,
      tid: 0,
      ts: round3(tUs),
      ...(args ? { args } : {}),
    });
  }

  /** Ends the document and publishes the file. */
  async close(other: Record<string, unknown> = {}): Promise<void> {
    this.#sink.push(`],"displayTimeUnit":"ms","otherData":${JSON.stringify(other)}}`);
    await this.#sink.close();
  }

  /** Gives the file up. */
  abort(): Promise<void> {
    return this.#sink.abort();
  }
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

/** What {@linkcode traceTimeline} wrote. */
export interface TimelineSummary {
  readonly events: number;
  readonly spans: number;
  readonly tracks: number;
}

/** A process or thread name as a track's title: numbers (strace's ids) get their word. */
function title(word: string, name: string): string {
  return /^[0-9]+$/.test(name) ? `${word} ${name}` : name;
}

/**
 * Writes the trace `reader` reads as a timeline: per thread (within its
 * process) each call a span — synchronous reads and writes, io_submit,
 * io_getevents, opens, syncs —, per aio context the requests in flight as a
 * counter (up at each submit, down at each reap), each phase a marker.
 * Calls without a duration are drawn 0 µs long.
 *
 * @example
 * ```ts ignore
 * const w = await ChromeTraceWriter.create("ds.timeline.json");
 * await traceTimeline(await TraceReader.open("ds.trace.gz"), w);
 * await w.close();
 * ```
 */
export async function traceTimeline(
  reader: TraceReader,
  out: ChromeTraceWriter,
): Promise<TimelineSummary> {
  const tracks = new Map<string, ChromeTrack>();
  const inFlight = new Map<number, { pid: number; n: number }>();
  let events = 0, spans = 0;
  const trackOf = async (thread: string): Promise<ChromeTrack> => {
    let t = tracks.get(thread);
    if (!t) {
      const process = reader.threads.get(thread)?.process ?? thread;
      t = await out.track(title("process", process), title("thread", thread));
      tracks.set(thread, t);
    }
    return t;
  };
  for await (const batch of reader.batches()) {
    for (const e of batch) {
      events++;
      if (e.kind === "phase") {
        await out.marker(e.name, e.t, e.marker ? { marker: e.marker } : undefined);
        continue;
      }
      const track = await trackOf(e.thread);
      const [name, cat, args] = describe(e);
      await out.span(track, name, cat, e.t, e.dur, args);
      spans++;
      if ((e.kind === "submit" || e.kind === "reap") && e.res > 0) {
        const c = inFlight.get(e.ctx) ?? { pid: track.pid, n: 0 };
        c.n = Math.max(0, c.n + (e.kind === "submit" ? e.res : -e.res));
        inFlight.set(e.ctx, c);
        const at = e.kind === "submit" ? e.t : e.t + Math.max(0, e.dur);
        await out.counter(c.pid, `ctx ${e.ctx} in flight`, at, { requests: c.n });
      }
    }
  }
  return { events, spans, tracks: tracks.size };
}

/** A span's name, category and arguments for one event. */
function describe(
  e: Exclude<TraceEvent, { kind: "phase" }>,
): [string, string, Record<string, unknown>] {
  switch (e.kind) {
    case "read":
    case "write":
      return [e.kind, "io", { file: e.file, offset: e.offset, length: e.length, res: e.res }];
    case "submit": {
      const bytes = e.iocbs.reduce((t, i) => t + i.length, 0);
      const files = [...new Set(e.iocbs.map((i) => i.file))];
      return [`io_submit ×${e.iocbs.length}`, "aio", {
        ctx: e.ctx,
        iocbs: e.iocbs.length,
        res: e.res,
        bytes,
        ops: [...new Set(e.iocbs.map((i) => i.op))].join(","),
        files: files.length === 1 ? files[0] : `${files.length} files`,
        first_offset: e.iocbs[0]?.offset ?? 0,
      }];
    }
    case "reap":
      return [`io_getevents ${Math.max(0, e.res)}`, "aio", {
        ctx: e.ctx,
        min: e.min,
        res: e.res,
        failed: e.results.filter((r) => r < 0).length,
      }];
    case "io_setup":
      return ["io_setup", "aio", { ctx: e.ctx, nr: e.nr, res: e.res }];
    case "io_destroy":
      return ["io_destroy", "aio", { ctx: e.ctx, res: e.res }];
    case "io_uring_setup":
      return ["io_uring_setup", "meta", {
        entries: e.entries,
        note: "its I/O goes through shared memory: not in the trace",
      }];
    case "open":
      return ["open", "meta", { file: e.file, flags: e.flags, res: e.res }];
    case "rename":
      return ["rename", "meta", { file: e.file, to: e.to, res: e.res }];
    case "ftruncate":
      return ["ftruncate", "meta", { file: e.file, length: e.length, res: e.res }];
    case "fallocate":
      return ["fallocate", "meta", {
        file: e.file,
        mode: e.mode,
        offset: e.offset,
        length: e.length,
        res: e.res,
      }];
    default:
      return [e.kind, e.kind === "fsync" || e.kind === "fdatasync" ? "sync" : "meta", {
        file: e.file,
        res: e.res,
      }];
  }
}
