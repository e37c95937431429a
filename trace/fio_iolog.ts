/**
 * fio's iologs, versions 2 and 3 (fio's `write_iolog` writes version 3,
 * `read_iolog` replays both), read as trace events and written from them.
 *
 * ```
 * fio version 3 iolog           fio version 2 iolog
 * 21 /data/f add                /data/f add
 * 118 /data/f open              /data/f open
 * 121 /data/f read 61440 4096   /data/f read 61440 4096
 * 259 /data/f write 0 4096      /data/f wait 15        (ms since the start)
 * 13866 /data/f close           /data/f close
 * ```
 *
 * Version 3 starts each line with the microseconds since the log began.
 * Actions: add, open, close (a file); read, write, sync, datasync, trim
 * (with offset and length); version 2 also has wait. An iolog is one fio
 * job: its events are one thread's, named `fio`. A trim moves no data here:
 * it is counted and left out, said in the header's notes.
 *
 * @module
 */

import { TraceError } from "./errors.ts";
import type { TraceEvent, TraceThread } from "./events.ts";
import { TRACE_SCHEMA, type TraceHeader } from "./format.ts";

/** Whether a file's first line is fio's iolog version line. */
export function isIologHeader(line: string): boolean {
  return /^fio version [0-9]+ iolog\s*$/.test(line);
}

/** The thread an iolog's events are on. */
export const IOLOG_THREAD = "fio";

/** Decodes an iolog's lines into events (the reader's iolog side). */
export class IologDecoder {
  readonly header: TraceHeader;
  readonly threads: Map<string, TraceThread> = new Map([
    [IOLOG_THREAD, { name: IOLOG_THREAD, process: IOLOG_THREAD }],
  ]);
  readonly notes: string[] = [];
  readonly #path: string;
  readonly #version: 2 | 3;
  readonly #added = new Set<string>();
  #t = 0;
  #trims = 0;

  /** The decoder of `path`, whose first line is `head`. */
  constructor(path: string, head: string) {
    this.#path = path;
    const v = Number(/^fio version ([0-9]+) iolog/.exec(head)![1]);
    if (v !== 2 && v !== 3) {
      throw new TraceError(path, 1, `is a fio iolog of version ${v}; versions 2 and 3 are read`);
    }
    this.#version = v;
    this.header = {
      schema: TRACE_SCHEMA,
      source: { kind: "fio-iolog", file: path, tool: `fio iolog version ${v}` },
      origin: "",
      time_unit: "us",
    };
  }

  line(text: string, no: number, out: TraceEvent[]): void {
    const f = text.trim().split(/\s+/);
    if (f.length === 1 && f[0] === "") return;
    const fail = (problem: string): never => {
      throw new TraceError(this.#path, no, problem);
    };
    if (this.#version === 3) {
      const t = Number(f.shift());
      if (!Number.isSafeInteger(t) || t < 0) fail(`"${text}": no time (µs) first`);
      this.#t = t;
    }
    const [file, action, off, len] = f as [string, string | undefined, string?, string?];
    const base = { t: this.#t, thread: IOLOG_THREAD, dur: -1 };
    const need = (n: number) => {
      if (f.length !== n) {
        fail(`"${text}": ${action} takes ${n === 2 ? "no" : "an offset and a"} length`);
      }
    };
    switch (action) {
      case "add":
        need(2);
        this.#added.add(file);
        return;
      case "open":
      case "close":
        need(2);
        this.#known(file, fail);
        out.push(
          action === "open"
            ? { kind: "open", ...base, file, flags: "", res: 0 }
            : { kind: "close", ...base, file, res: 0 },
        );
        return;
      case "wait":
        if (this.#version === 3) fail(`"${text}": wait is version 2 only`);
        need(4);
        this.#t = Math.max(this.#t, number(off, fail) * 1000);
        return;
    }
    need(4);
    this.#known(file, fail);
    const offset = number(off, fail), length = number(len, fail);
    switch (action) {
      case "read":
      case "write":
        out.push({ kind: action, ...base, file, offset, length, res: length });
        return;
      case "sync":
        out.push({ kind: "fsync", ...base, file, res: 0 });
        return;
      case "datasync":
        out.push({ kind: "fdatasync", ...base, file, res: 0 });
        return;
      case "trim":
        this.#trims++;
        return;
    }
    fail(`"${text}": unknown action ${JSON.stringify(action)}`);
  }

  #known(file: string, fail: (m: string) => never): void {
    if (!this.#added.has(file)) fail(`${file} is used before its add line`);
  }

  finish(): void {
    if (this.#trims > 0) {
      this.notes.push(`${this.#trims} trims of the iolog left out`);
    }
  }
}

function number(text: string | undefined, fail: (m: string) => never): number {
  const n = Number(text);
  if (text === undefined || !/^[0-9]+$/.test(text) || !Number.isSafeInteger(n)) {
    fail(`${JSON.stringify(text)} is not a whole number of bytes`);
  }
  return n;
}

/**
 * The iolog lines of events: version 3 as fio's `write_iolog` writes it
 * (each line led by µs since the log began), or version 2, where the time
 * goes on `wait` lines (ms since the job began, whole ms: a wait line each
 * time the next event is a ms or more later).
 */
export class IologEncoder {
  readonly #added = new Set<string>();
  readonly #open = new Set<string>();
  readonly #version: 2 | 3;
  #first: number | undefined;
  #waitedMs = 0;

  /** An encoder of iolog `version` (3 by default). */
  constructor(version: 2 | 3 = 3) {
    this.#version = version;
  }

  /** The version line. */
  header(): string {
    return `fio version ${this.#version} iolog`;
  }

  /** A line of action `rest` on `file` at `t` µs. */
  #line(t: number, file: string, rest: string, out: string[]): void {
    if (this.#version === 3) return void out.push(`${t} ${file} ${rest}`);
    this.#first ??= t;
    const ms = Math.floor((t - this.#first) / 1000);
    if (ms > this.#waitedMs && this.#added.has(file)) {
      this.#waitedMs = ms;
      out.push(`${file} wait ${ms} 0`);
    }
    out.push(`${file} ${rest}`);
  }

  /** The lines of one event (none for what an iolog cannot say). */
  encode(e: TraceEvent): string[] {
    if (e.kind === "phase") return [];
    const t = Math.max(0, e.t);
    const out: string[] = [];
    const use = (file: string, opening: boolean) => {
      if (!this.#added.has(file)) {
        this.#line(t, file, "add", out);
        this.#added.add(file);
      }
      if (!opening && !this.#open.has(file)) {
        this.#open.add(file);
        this.#line(t, file, "open", out);
      }
    };
    switch (e.kind) {
      case "open":
        if (e.res < 0) return out;
        use(e.file, true);
        if (!this.#open.has(e.file)) {
          this.#open.add(e.file);
          this.#line(t, e.file, "open", out);
        }
        return out;
      case "close":
        if (this.#open.delete(e.file)) this.#line(t, e.file, "close", out);
        return out;
      case "read":
      case "write":
        if (e.res < 0 || e.length === 0) return out;
        use(e.file, false);
        this.#line(t, e.file, `${e.kind} ${e.offset} ${e.length}`, out);
        return out;
      case "fsync":
      case "fdatasync":
        use(e.file, false);
        this.#line(t, e.file, `${e.kind === "fsync" ? "sync" : "datasync"} 0 0`, out);
        return out;
      case "submit":
        for (const i of e.iocbs.slice(0, Math.max(0, e.res))) {
          use(i.file, false);
          this.#line(
            t,
            i.file,
            i.op === "read" || i.op === "write"
              ? `${i.op} ${i.offset} ${i.length}`
              : `${i.op === "fsync" ? "sync" : "datasync"} 0 0`,
            out,
          );
        }
        return out;
    }
    return out;
  }

  /** Closes what is still open, at `t`. */
  finish(t: number): string[] {
    const out: string[] = [];
    for (const f of this.#open) this.#line(t, f, "close", out);
    this.#open.clear();
    return out;
  }
}
