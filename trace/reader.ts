/**
 * Reading a trace as a stream of events, in flat memory: the header first,
 * then the records decoded a batch at a time, each checked (kind, arity,
 * numbers, declared files and threads) and the `end` record required. A fio
 * iolog (v2 or v3) is read the same way, converted as it streams
 * (trace/fio_iolog.ts).
 *
 * @module
 */

import { lineBatches } from "./_lines.ts";
import { TraceError } from "./errors.ts";
import type { TraceEvent, TraceIocb, TraceThread } from "./events.ts";
import { RECORD_ARITY, TRACE_SCHEMA, type TraceHeader } from "./format.ts";
import { IologDecoder, isIologHeader } from "./fio_iolog.ts";

/** Something that turns lines into events: the trace format's decoder or fio's iolog's. */
interface LineDecoder {
  readonly header: TraceHeader;
  readonly threads: Map<string, TraceThread>;
  /** The header's notes, then the end record's (complete once every line was read). */
  readonly notes: string[];
  /** Decodes line `no` (from 1) into `out`. */
  line(text: string, no: number, out: TraceEvent[]): void;
  /** At the end of the file: throws when the file ended too soon. */
  finish(lastLine: number): void;
}

/**
 * A trace opened for reading. Iterate {@linkcode TraceReader.batches} (or
 * {@linkcode TraceReader.events}) once.
 *
 * @example
 * ```ts
 * import { TraceReader } from "./reader.ts";
 * import { TraceWriter } from "./writer.ts";
 * const dir = await Deno.makeTempDir();
 * const w = await TraceWriter.create(`${dir}/t.trace.gz`, { source: { kind: "generator" }, origin: "" });
 * await w.write({ kind: "read", t: 3, thread: "r0", dur: 1, file: "/f", offset: 0, length: 8, res: 8 });
 * await w.close();
 * const r = await TraceReader.open(`${dir}/t.trace.gz`);
 * let n = 0;
 * for await (const e of r.events()) if (e.kind === "read") n += e.res;
 * console.assert(n === 8);
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class TraceReader {
  /** The file read. */
  readonly path: string;
  /** Line 1 (for an iolog, one made up from its version line). */
  readonly header: TraceHeader;
  readonly #decoder: LineDecoder;
  readonly #lines: AsyncGenerator<string[]>;
  readonly #first: string[];
  #used = false;

  private constructor(
    path: string,
    decoder: LineDecoder,
    lines: AsyncGenerator<string[]>,
    first: string[],
  ) {
    this.path = path;
    this.header = decoder.header;
    this.#decoder = decoder;
    this.#lines = lines;
    this.#first = first;
  }

  /** The trace's notes: the header's, then (once every event was read) the end record's. */
  get notes(): readonly string[] {
    return this.#decoder.notes;
  }

  /** Threads declared so far, by name (all of them once the events are read). */
  get threads(): ReadonlyMap<string, TraceThread> {
    return this.#decoder.threads;
  }

  /**
   * Opens `path`: a tierbench trace (gzipped or not) or a fio iolog. Throws
   * {@linkcode TraceError} naming what is wrong with its first line.
   */
  static async open(path: string): Promise<TraceReader> {
    const lines = lineBatches(path);
    let first: string[] = [];
    while (first.length === 0) {
      const r = await lines.next();
      if (r.done) throw new TraceError(path, 0, "is empty: not a trace");
      first = r.value;
    }
    const head = first[0]!;
    const decoder = isIologHeader(head) ? new IologDecoder(path, head) : traceDecoder(path, head);
    return new TraceReader(path, decoder, lines, first.slice(1));
  }

  /** The events, a batch at a time (each batch an array the reader does not reuse). */
  async *batches(): AsyncGenerator<TraceEvent[]> {
    if (this.#used) throw new TypeError("a TraceReader is read once");
    this.#used = true;
    let no = 1;
    const decode = (lines: string[]): TraceEvent[] => {
      const out: TraceEvent[] = [];
      for (const text of lines) this.#decoder.line(text, ++no, out);
      return out;
    };
    if (this.#first.length > 0) yield decode(this.#first);
    for await (const lines of this.#lines) yield decode(lines);
    this.#decoder.finish(no);
  }

  /** The events one at a time. */
  async *events(): AsyncGenerator<TraceEvent> {
    for await (const batch of this.batches()) yield* batch;
  }
}

/** A reference to a declared file or thread, or a TraceError. */
function lookup(table: string[], id: unknown, what: string, fail: (m: string) => never): string {
  const v = typeof id === "number" ? table[id] : undefined;
  if (v === undefined) fail(`${what} ${JSON.stringify(id)} is not declared before its use`);
  return v;
}

/** The decoder of the trace format, after checking its header line. */
function traceDecoder(path: string, head: string): LineDecoder {
  let header: TraceHeader;
  try {
    header = JSON.parse(head);
  } catch {
    throw new TraceError(
      path,
      1,
      /^\d+ \d\d:\d\d|^\d+ \d+\.\d+|^\[pid /.test(head)
        ? "is an strace log, not a trace: import it with `tierbench trace import strace`"
        : "is not a tierbench trace (line 1 is not JSON)",
    );
  }
  if (header === null || typeof header !== "object" || Array.isArray(header)) {
    throw new TraceError(path, 1, "is not a tierbench trace (line 1 is not its header)");
  }
  const schema = (header as { schema?: unknown }).schema;
  if (schema !== TRACE_SCHEMA) {
    throw new TraceError(
      path,
      1,
      typeof schema === "string" && schema.startsWith("tierbench/trace@")
        ? `is ${schema}; this tierbench reads ${TRACE_SCHEMA}`
        : `is not a tierbench trace (schema ${JSON.stringify(schema)}, not "${TRACE_SCHEMA}")`,
    );
  }
  return new RecordDecoder(path, header);
}

const OPS = new Set(["read", "write", "fsync", "fdatasync"]);

/** Decodes the records of the trace format, checking each. */
class RecordDecoder implements LineDecoder {
  readonly header: TraceHeader;
  readonly threads: Map<string, TraceThread> = new Map();
  readonly notes: string[];
  readonly #path: string;
  readonly #files: string[] = [];
  readonly #threadNames: string[] = [];
  #records = 0;
  #ended = false;
  #no = 0;

  constructor(path: string, header: TraceHeader) {
    this.#path = path;
    this.header = header;
    this.notes = [...(header.notes ?? [])];
  }

  readonly #fail = (problem: string): never => {
    throw new TraceError(this.#path, this.#no, problem);
  };

  #file(id: unknown): string {
    return lookup(this.#files, id, "file", this.#fail);
  }

  #thread(id: unknown): string {
    return lookup(this.#threadNames, id, "thread", this.#fail);
  }

  line(text: string, no: number, out: TraceEvent[]): void {
    this.#no = no;
    if (text === "") return;
    if (this.#ended) this.#fail("a record after the end record");
    let r: unknown;
    try {
      r = JSON.parse(text);
    } catch {
      this.#fail("is not JSON (a damaged or cut-short trace)");
    }
    if (!Array.isArray(r) || typeof r[0] !== "string") this.#fail("is not a record");
    const rec = r as unknown[];
    const kind = rec[0] as keyof typeof RECORD_ARITY;
    const arity = RECORD_ARITY[kind];
    if (arity === undefined) this.#fail(`unknown record kind ${JSON.stringify(kind)}`);
    if (rec.length !== arity) {
      this.#fail(`a ${kind} record has ${arity} elements, this one ${rec.length}`);
    }
    for (let i = 1; i < arity; i++) {
      const v = rec[i];
      const want = elementType(kind, i);
      const ok = want === "integer"
        ? Number.isSafeInteger(v)
        : want === "array"
        ? Array.isArray(v)
        : typeof v === "string";
      if (!ok) {
        this.#fail(
          `${kind} record: element ${i} (${JSON.stringify(v)}) is not ${
            want === "integer" ? "an integer" : `a ${want}`
          }`,
        );
      }
    }
    if (kind === "end") {
      this.#ended = true;
      const notes = rec[3] as unknown[];
      if (!notes.every((x) => typeof x === "string")) {
        this.#fail("end record: notes are not strings");
      }
      this.notes.push(...(notes as string[]));
      if (rec[1] !== this.#records) {
        this.#fail(`the end record counts ${rec[1]} records, the trace has ${this.#records}`);
      }
      return;
    }
    this.#records++;
    const e = this.#decode(kind, rec);
    if (e) out.push(e);
  }

  #decode(kind: string, r: unknown[]): TraceEvent | undefined {
    const n = (i: number) => r[i] as number;
    switch (kind) {
      case "file":
        if (n(1) !== this.#files.length) this.#fail(`file ${n(1)} declared out of order`);
        this.#files.push(String(r[2]));
        return undefined;
      case "thread": {
        if (n(1) !== this.#threadNames.length) this.#fail(`thread ${n(1)} declared out of order`);
        const name = String(r[2]);
        this.#threadNames.push(name);
        this.threads.set(name, { name, process: String(r[3]) });
        return undefined;
      }
      case "phase":
        return { kind: "phase", t: n(1), name: String(r[2]), marker: String(r[3]) };
    }
    const base = { t: n(1), thread: this.#thread(r[2]), dur: n(3) };
    switch (kind) {
      case "open":
        return { kind, ...base, file: this.#file(r[4]), flags: String(r[5]), res: n(6) };
      case "close":
      case "fsync":
      case "fdatasync":
      case "unlink":
      case "mkdir":
        return { kind, ...base, file: this.#file(r[4]), res: n(5) };
      case "read":
      case "write":
        return { kind, ...base, file: this.#file(r[4]), offset: n(5), length: n(6), res: n(7) };
      case "ftruncate":
        return { kind, ...base, file: this.#file(r[4]), length: n(5), res: n(6) };
      case "fallocate":
        return {
          kind,
          ...base,
          file: this.#file(r[4]),
          mode: n(5),
          offset: n(6),
          length: n(7),
          res: n(8),
        };
      case "rename":
        return { kind, ...base, file: this.#file(r[4]), to: this.#file(r[5]), res: n(6) };
      case "io_setup":
        return { kind, ...base, ctx: n(4), nr: n(5), res: n(6) };
      case "io_destroy":
        return { kind, ...base, ctx: n(4), res: n(5) };
      case "io_uring_setup":
        return { kind, ...base, entries: n(4), res: n(5) };
      case "submit":
        return { kind, ...base, ctx: n(4), asked: n(5), res: n(6), iocbs: this.#iocbs(r[7]) };
      case "reap":
        return {
          kind,
          ...base,
          ctx: n(4),
          min: n(5),
          max: n(6),
          res: n(7),
          results: this.#numbers(r[8]),
        };
    }
    return undefined;
  }

  #iocbs(v: unknown): TraceIocb[] {
    if (!Array.isArray(v)) this.#fail("submit record: its iocbs are not an array");
    return (v as unknown[]).map((x) => {
      const i = x as unknown[];
      if (!Array.isArray(i) || i.length !== 4 || !OPS.has(i[0] as string)) {
        this.#fail(`submit record: iocb ${JSON.stringify(x)} is not [op, file, offset, length]`);
      }
      if (!Number.isSafeInteger(i[2]) || !Number.isSafeInteger(i[3])) {
        this.#fail(`submit record: iocb ${JSON.stringify(x)} has a non-integer offset or length`);
      }
      return {
        op: i[0] as TraceIocb["op"],
        file: this.#file(i[1]),
        offset: i[2] as number,
        length: i[3] as number,
      };
    });
  }

  #numbers(v: unknown): number[] {
    if (!Array.isArray(v) || !v.every((x) => Number.isSafeInteger(x))) {
      this.#fail("reap record: its results are not an array of integers");
    }
    return v as number[];
  }

  finish(lastLine: number): void {
    if (!this.#ended) {
      throw new TraceError(
        this.#path,
        0,
        `is truncated: it ends at line ${lastLine} without its end record`,
      );
    }
  }
}

/** What element `i` of a `kind` record holds. */
function elementType(kind: string, i: number): "integer" | "string" | "array" {
  switch (kind) {
    case "file":
      return i === 2 ? "string" : "integer";
    case "thread":
    case "phase":
      return i >= 2 ? "string" : "integer";
    case "open":
      return i === 5 ? "string" : "integer";
    case "submit":
      return i === 7 ? "array" : "integer";
    case "reap":
      return i === 8 ? "array" : "integer";
    case "end":
      return i === 3 ? "array" : "integer";
  }
  return "integer";
}
