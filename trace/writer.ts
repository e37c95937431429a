/**
 * Writing a trace: events in, the compact format out (trace/format.ts), in
 * flat memory. Files and threads are declared the first time an event names
 * them.
 *
 * @module
 */

import { TextSink } from "./_lines.ts";
import type { TraceEvent } from "./events.ts";
import {
  type Iocb,
  TRACE_SCHEMA,
  TRACE_SCHEMA_ID,
  type TraceHeader,
  type TraceRecord,
} from "./format.ts";

/** The header a writer starts with (schema fields added by the writer). */
export type HeaderInput = Omit<TraceHeader, "$schema" | "schema" | "time_unit">;

/**
 * Encodes events into records, numbering files and threads as they come.
 * {@linkcode TraceWriter} writes what it returns; tests and converters may
 * use it alone.
 *
 * @example
 * ```ts
 * import { RecordEncoder } from "./writer.ts";
 * const enc = new RecordEncoder();
 * const out = enc.encode({ kind: "read", t: 5, thread: "7", dur: 2, file: "/a", offset: 0, length: 4096, res: 4096 });
 * console.assert(JSON.stringify(out) === '[["thread",0,"7","7"],["file",0,"/a"],["read",5,0,2,0,0,4096,4096]]');
 * ```
 */
export class RecordEncoder {
  readonly #files = new Map<string, number>();
  readonly #threads = new Map<string, number>();
  #out: TraceRecord[] = [];

  /** Declares thread `name` of `process` (else its process is its own name). */
  thread(name: string, process: string): TraceRecord[] {
    this.#out = [];
    this.#thread(name, process);
    return this.#out;
  }

  #thread(name: string, process = name): number {
    let id = this.#threads.get(name);
    if (id === undefined) {
      id = this.#threads.size;
      this.#threads.set(name, id);
      this.#out.push(["thread", id, name, process]);
    }
    return id;
  }

  #file(path: string): number {
    let id = this.#files.get(path);
    if (id === undefined) {
      id = this.#files.size;
      this.#files.set(path, id);
      this.#out.push(["file", id, path]);
    }
    return id;
  }

  /** The records of one event: the declarations it needs, then its own. */
  encode(e: TraceEvent): TraceRecord[] {
    this.#out = [];
    const rec = this.#record(e);
    this.#out.push(rec);
    return this.#out;
  }

  #record(e: TraceEvent): TraceRecord {
    if (e.kind === "phase") return ["phase", e.t, e.name, e.marker];
    const th = this.#thread(e.thread);
    switch (e.kind) {
      case "open":
        return ["open", e.t, th, e.dur, this.#file(e.file), e.flags, e.res];
      case "close":
        return ["close", e.t, th, e.dur, this.#file(e.file), e.res];
      case "read":
      case "write":
        return [e.kind, e.t, th, e.dur, this.#file(e.file), e.offset, e.length, e.res];
      case "fsync":
      case "fdatasync":
        return [e.kind, e.t, th, e.dur, this.#file(e.file), e.res];
      case "ftruncate":
        return ["ftruncate", e.t, th, e.dur, this.#file(e.file), e.length, e.res];
      case "fallocate":
        return [
          "fallocate",
          e.t,
          th,
          e.dur,
          this.#file(e.file),
          e.mode,
          e.offset,
          e.length,
          e.res,
        ];
      case "unlink":
      case "mkdir":
        return [e.kind, e.t, th, e.dur, this.#file(e.file), e.res];
      case "rename":
        return ["rename", e.t, th, e.dur, this.#file(e.file), this.#file(e.to), e.res];
      case "io_setup":
        return ["io_setup", e.t, th, e.dur, e.ctx, e.nr, e.res];
      case "io_destroy":
        return ["io_destroy", e.t, th, e.dur, e.ctx, e.res];
      case "submit": {
        const iocbs: Iocb[] = e.iocbs.map((i) => [i.op, this.#file(i.file), i.offset, i.length]);
        return ["submit", e.t, th, e.dur, e.ctx, e.asked, e.res, iocbs];
      }
      case "reap":
        return ["reap", e.t, th, e.dur, e.ctx, e.min, e.max, e.res, e.results];
      case "io_uring_setup":
        return ["io_uring_setup", e.t, th, e.dur, e.entries, e.res];
    }
  }
}

/**
 * A trace being written: {@linkcode TraceWriter.write} each event in order
 * (per thread, in that thread's order), then {@linkcode TraceWriter.close},
 * which adds the `end` record and gives the file its name (until then it is
 * a temporary file beside it; {@linkcode TraceWriter.abort} removes it).
 *
 * @example
 * ```ts
 * import { TraceWriter } from "./writer.ts";
 * const dir = await Deno.makeTempDir();
 * const w = await TraceWriter.create(`${dir}/t.trace`, { source: { kind: "generator" }, origin: "" });
 * w.thread("rank0/local:write", "rank0");
 * await w.write({ kind: "phase", t: 0, name: "update", marker: "" });
 * await w.write({ kind: "write", t: 0, thread: "rank0/local:write", dur: 90, file: "/nvme/r0/m", offset: 0, length: 1 << 20, res: 1 << 20 });
 * await w.close();
 * console.assert((await Deno.readTextFile(`${dir}/t.trace`)).trimEnd().endsWith('["end",4,90,[]]'));
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class TraceWriter {
  readonly #sink: TextSink;
  readonly #enc = new RecordEncoder();
  #records = 0;
  #last = 0;

  private constructor(sink: TextSink) {
    this.#sink = sink;
  }

  /** Starts a trace at `path` (gzipped when it ends in `.gz`); refuses an existing file. */
  static async create(path: string, header: HeaderInput, field?: string): Promise<TraceWriter> {
    const sink = await TextSink.create(path, field);
    const w = new TraceWriter(sink);
    const full: TraceHeader = {
      $schema: TRACE_SCHEMA_ID,
      schema: TRACE_SCHEMA,
      source: header.source,
      origin: header.origin,
      time_unit: "us",
      ...(header.notes && header.notes.length > 0 ? { notes: header.notes } : {}),
    };
    await sink.line(JSON.stringify(full));
    return w;
  }

  /** Where the trace goes. */
  get path(): string {
    return this.#sink.path;
  }

  /** How many records were written so far. */
  get records(): number {
    return this.#records;
  }

  /** Declares a thread and the process or rank it belongs to, before its first event. */
  thread(name: string, process: string): void {
    for (const r of this.#enc.thread(name, process)) {
      this.#records++;
      this.#sink.push(JSON.stringify(r));
    }
  }

  /** Writes one event (and the declarations it needs). */
  async write(e: TraceEvent): Promise<void> {
    for (const r of this.#enc.encode(e)) {
      this.#records++;
      await this.#sink.line(JSON.stringify(r));
    }
    const end = e.kind === "phase" ? e.t : e.t + Math.max(0, e.dur);
    if (end > this.#last) this.#last = end;
  }

  /** Adds the `end` record (with `notes` learnt at the end) and publishes the file. */
  async close(notes: readonly string[] = []): Promise<void> {
    await this.#sink.line(JSON.stringify(["end", this.#records, this.#last, notes]));
    await this.#sink.close();
  }

  /** Removes what was written. */
  async abort(): Promise<void> {
    await this.#sink.abort();
  }
}
