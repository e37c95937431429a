/**
 * The first pass of a trace replay: reads the whole trace once (refusing it
 * before any I/O when it is cut short, of another version, or names a path
 * no `--map` prefix covers), maps every path onto its tier, and writes each
 * thread's ops as fixed records (engines/trace_ops.ts) to a file of its own,
 * so the replay's hot loop parses nothing and memory stays flat. It also
 * finds what must exist first: files read before the trace writes them, and
 * their sizes.
 *
 * @module
 */

import { dirname, isAbsolute, join } from "node:path";
import { SCRATCH_PREFIX } from "../tiers/scratch.ts";
import { TraceError } from "../trace/errors.ts";
import type { TraceEvent, TraceIocb } from "../trace/events.ts";
import { PhaseCutter } from "../trace/phases.ts";
import { CrossThreadOrder, type Waits } from "./_trace_order.ts";
import type { TraceReader } from "../trace/reader.ts";
import {
  IOCB_DIRECT,
  OP,
  OPEN_CREAT,
  OPEN_DIRECT,
  OPEN_TRUNC,
  REC,
  type ReplayContext,
} from "../engines/trace_ops.ts";

/** One `--map`: a trace path prefix and where its files go. */
export interface MapTarget {
  readonly prefix: string;
  /** The directory the prefix stands for in the replay (a tier's scratch directory). */
  readonly root: string;
  /** Whether the tier honours O_DIRECT (a trace's O_DIRECT opens keep it only then). */
  readonly direct: boolean;
}

/** Records per frame of a thread's ops file. */
const FRAME = 4096;

/** One thread's compiled ops. */
export interface CompiledThread {
  readonly name: string;
  /** Its number in the trace's order of threads (the replay's CTRL.DONE word). */
  readonly index: number;
  /** Whether another thread's op waits on it. */
  waitedOn: boolean;
  readonly process: string;
  readonly path: string;
  ops: number;
  syncBytes: number;
  readonly contexts: Record<number, ReplayContext>;
}

/** What the first pass found. */
export interface Compiled {
  readonly files: string[];
  readonly fileTier: number[];
  readonly threads: CompiledThread[];
  /** Threads in the trace (the CTRL.DONE words the replay needs). */
  readonly threadCount: number;
  /** File index → bytes to lay out before the replay. */
  readonly layout: Map<number, number>;
  /** Phase names by index, and each one's recorded first start and last end (µs). */
  readonly phases: { name: string; start: number; end: number; io: boolean }[];
  readonly ops: Record<string, number>;
  readonly notes: string[];
}

/** A thread's ops file being written, a frame at a time. */
class OpsWriter {
  readonly #file: Deno.FsFile;
  #buf = new Float64Array((FRAME + 1) * REC);
  #n = 0;

  constructor(readonly path: string) {
    this.#file = Deno.openSync(path, { write: true, createNew: true });
  }

  /** Appends `records` (one op, with its iocbs) without cutting them across frames. */
  add(records: number[]): void {
    const count = records.length / REC;
    if (this.#n + count > FRAME && this.#n > 0) this.flush();
    if (count > this.#buf.length / REC - 1) this.#buf = new Float64Array((count + 1) * REC);
    this.#buf.set(records, (1 + this.#n) * REC);
    this.#n += count;
  }

  /** Writes the frame: a header record (its count), then the records. */
  flush(): void {
    if (this.#n === 0) return;
    this.#buf[0] = this.#n;
    const bytes = new Uint8Array(this.#buf.buffer, 0, (1 + this.#n) * REC * 8);
    for (let at = 0; at < bytes.length;) at += this.#file.writeSync(bytes.subarray(at));
    this.#n = 0;
  }

  close(): void {
    this.flush();
    this.#file.close();
  }
}

/** Reads the frames of an ops file back (the replay's Worker does). */
export function* readFrames(path: string): Generator<Float64Array> {
  using f = Deno.openSync(path);
  const head = new Float64Array(REC);
  const readAll = (b: Uint8Array) => {
    for (let at = 0; at < b.length;) {
      const n = f.readSync(b.subarray(at));
      if (n === null) {
        return at === 0 ? false : (() => {
          throw new Error(`${path}: a frame cut short`);
        })();
      }
      at += n;
    }
    return true;
  };
  while (readAll(new Uint8Array(head.buffer))) {
    const body = new Float64Array(head[0]! * REC);
    readAll(new Uint8Array(body.buffer));
    yield body;
  }
}

interface ThreadState {
  readonly out: OpsWriter;
  readonly info: CompiledThread;
  /** Per context: requests in flight now. */
  readonly inflight: Map<number, number>;
}

/** The first pass of one replay. */
export class TraceCompiler {
  readonly #trace: string;
  readonly #maps: readonly MapTarget[];
  readonly #dir: string;
  readonly #files = new Map<string, number>();
  readonly #fileList: string[] = [];
  readonly #fileTier: number[] = [];
  readonly #threads = new Map<string, ThreadState>();
  readonly #cutter = new PhaseCutter();
  readonly #phases: Compiled["phases"] = [];
  /** Per file, the 4 KiB pages the trace wrote so far (a read there needs no layout). */
  readonly #written = new Map<number, PageSet>();
  /** Files the trace truncated or created afresh: what it reads later, it wrote. */
  readonly #fresh = new Set<number>();
  readonly #layout = new Map<number, number>();
  readonly #direct = new Set<number>();
  readonly #ops: Record<string, number> = {};
  #failedInRecording = 0;
  #failedCompletions = 0;
  #foreignReaps = 0;
  readonly #order = new CrossThreadOrder();

  /** A compiler of `trace` onto `maps`, writing ops files into `dir`. */
  constructor(trace: string, maps: readonly MapTarget[], dir: string) {
    // a replay writes only inside its tiers' scratch directories, never beside them
    const loose = maps.find((m) => !isAbsolute(m.root) || !m.root.includes(SCRATCH_PREFIX));
    if (loose) {
      throw new Error(
        `${loose.prefix} maps to "${loose.root}": the replay's files must go in a scratch directory`,
      );
    }
    this.#trace = trace;
    this.#maps = [...maps].sort((a, b) => b.prefix.length - a.prefix.length);
    this.#dir = dir;
  }

  /** The file index of trace path `path`, or the one-line refusal of an unmapped path. */
  #file(path: string): number {
    let id = this.#files.get(path);
    if (id !== undefined) return id;
    const m = this.#maps.find((m) =>
      path === m.prefix || path.startsWith(m.prefix.endsWith("/") ? m.prefix : m.prefix + "/")
    );
    if (!m) {
      throw new TraceError(
        this.#trace,
        0,
        `${path} is under no --map prefix (${this.#maps.map((m) => m.prefix).join(", ")}): ` +
          "map its directory too, or import the trace again with --only",
      );
    }
    id = this.#fileList.length;
    this.#files.set(path, id);
    this.#fileList.push(join(m.root, path.slice(m.prefix.length)));
    this.#fileTier.push(this.#maps.indexOf(m));
    return id;
  }

  #thread(name: string, process: string): ThreadState {
    let s = this.#threads.get(name);
    if (!s) {
      const path = join(this.#dir, `thread-${this.#threads.size}.ops`);
      s = {
        out: new OpsWriter(path),
        info: {
          name,
          index: this.#threads.size,
          waitedOn: false,
          process,
          path,
          ops: 0,
          syncBytes: 0,
          contexts: {},
        },
        inflight: new Map(),
      };
      this.#threads.set(name, s);
    }
    return s;
  }

  /** Compiles every event of `reader`; `onOps` hears how many were read so far. */
  async compile(reader: TraceReader, onOps?: (n: number) => void): Promise<Compiled> {
    let n = 0;
    try {
      for await (const batch of reader.batches()) {
        for (const e of batch) this.#event(e, reader);
        onOps?.(n += batch.length);
      }
    } finally {
      for (const s of this.#threads.values()) s.out.close();
    }
    for (const s of this.#threads.values()) {
      s.info.waitedOn = this.#order.waitedOn.has(s.info.index);
    }
    return {
      files: this.#fileList,
      fileTier: this.#fileTier,
      threads: [...this.#threads.values()].map((s) => s.info).filter((t) => t.ops > 0),
      threadCount: this.#threads.size,
      layout: this.#layout,
      phases: this.#phases,
      ops: this.#ops,
      notes: this.#notes(),
    };
  }

  #notes(): string[] {
    const out: string[] = [];
    if (this.#failedInRecording > 0) {
      out.push(`${this.#failedInRecording} calls that failed in the recording were not replayed`);
    }
    if (this.#failedCompletions > 0) {
      out.push(
        `${this.#failedCompletions} aio completions failed in the recording; their requests are ` +
          "replayed (strace ties no completion to its iocb) and may succeed here",
      );
    }
    if (this.#order.ordered > 0) {
      out.push(
        `${this.#order.ordered} reads of bytes another thread wrote wait for that write, ` +
          "as in the recording",
      );
    }
    if (this.#order.raced > 0) {
      out.push(
        `${this.#order.raced} reads began in the recording before another thread's write of ` +
          "their bytes was seen done (the threads raced, or a third thread reaped the write): " +
          "the replay orders them after that write's issue only, and what they read can vary " +
          "from run to run",
      );
    }
    if (this.#foreignReaps > 0) {
      out.push(
        `${this.#foreignReaps} io_getevents by a thread other than the context's submitter: ` +
          "the submitter reaps those completions when it needs the slots or ends",
      );
    }
    return out;
  }

  #event(e: TraceEvent, reader: TraceReader): void {
    const phase = this.#cutter.place(e);
    if (!this.#phases[phase.index]) {
      this.#phases[phase.index] = {
        name: phase.name,
        start: phase.start,
        end: phase.start,
        io: false,
      };
    }
    if (e.kind === "phase" || e.kind === "io_uring_setup") return;
    if (e.res < 0 && e.kind !== "reap") {
      this.#failedInRecording++;
      return;
    }
    const th = this.#thread(e.thread, reader.threads.get(e.thread)?.process ?? e.thread);
    const recs = this.#records(e, th, phase.index);
    if (recs.length === 0) return;
    const ph = this.#phases[phase.index]!;
    ph.io = true;
    ph.end = Math.max(ph.end, e.t + Math.max(0, e.dur));
    this.#ops[e.kind] = (this.#ops[e.kind] ?? 0) + 1;
    th.out.add(this.#ordered(e, th, recs));
    th.info.ops++;
  }

  /**
   * `recs`, the records of `e` (op number th.info.ops of its thread), after
   * the WAITs on other threads it needs (bench/_trace_order.ts); the
   * writes, drains and cuts it makes noted for the ops after it.
   */
  #ordered(e: Exclude<TraceEvent, { kind: "phase" }>, th: ThreadState, recs: number[]): number[] {
    const o = this.#order, me = th.info.index, op = th.info.ops, end = e.t + Math.max(0, e.dur);
    const waits: Waits = new Map();
    const add = (w: Waits) => {
      for (const [by, n] of w) if (n > (waits.get(by) ?? 0)) waits.set(by, n);
    };
    switch (e.kind) {
      case "read":
        add(o.read(me, this.#file(e.file), e.offset, e.length, e.t));
        break;
      case "write": {
        const f = this.#file(e.file);
        add(o.writeWaits(me, f, e.t));
        o.write(me, f, e.offset, e.length, op, end);
        break;
      }
      case "submit":
        for (const i of e.iocbs.slice(0, e.res)) {
          const f = this.#file(i.file);
          if (i.op === "read") add(o.read(me, f, i.offset, i.length, e.t));
          else add(o.writeWaits(me, f, e.t));
        }
        for (const i of e.iocbs.slice(0, e.res)) {
          if (i.op === "write") o.submitted(me, e.ctx, this.#file(i.file), i.offset, i.length, op);
        }
        break;
      case "reap":
        if (th.inflight.get(e.ctx) === 0) o.drained(me, e.ctx, op, end);
        break;
      case "ftruncate":
        o.cut(me, this.#file(e.file), op, end, e.length);
        break;
      case "unlink":
        o.cut(me, this.#file(e.file), op, end);
        break;
      case "rename":
        o.cut(me, this.#file(e.file), op, end);
        o.cut(me, this.#file(e.to), op, end);
        break;
      case "open":
        if (e.flags.includes("O_TRUNC")) o.cut(me, this.#file(e.file), op, end);
        break;
    }
    if (waits.size === 0) return recs;
    const out: number[] = [];
    for (const [by, n] of waits) out.push(OP.WAIT, e.t, -1, by, n, 0, 0, recs[7]!);
    return out.concat(recs);
  }

  #records(e: Exclude<TraceEvent, { kind: "phase" }>, th: ThreadState, phase: number): number[] {
    const rec = (
      code: number,
      a: number,
      b = 0,
      c = 0,
      d = 0,
    ) => [code, e.t, e.dur, a, b, c, d, phase];
    switch (e.kind) {
      case "read":
      case "write": {
        const f = this.#file(e.file);
        th.info.syncBytes = Math.max(th.info.syncBytes, e.length);
        this.#touch(f, e.kind === "write", e.offset, e.kind === "read" ? e.res : e.length);
        return rec(
          e.kind === "read" ? OP.READ : OP.WRITE,
          f,
          e.offset,
          e.length,
          this.#direct.has(f) ? 1 : 0,
        );
      }
      case "open": {
        const f = this.#file(e.file);
        const direct = e.flags.includes("O_DIRECT") && this.#maps[this.#fileTier[f]!]!.direct;
        if (direct) this.#direct.add(f);
        else this.#direct.delete(f);
        const d = (direct ? OPEN_DIRECT : 0) | (e.flags.includes("O_CREAT") ? OPEN_CREAT : 0) |
          (e.flags.includes("O_TRUNC") ? OPEN_TRUNC : 0);
        if (e.flags.includes("O_TRUNC")) this.#fresh.add(f);
        return rec(OP.OPEN, f, 0, 0, d);
      }
      case "close":
        return rec(OP.CLOSE, this.#file(e.file));
      case "fsync":
        return rec(OP.FSYNC, this.#file(e.file));
      case "fdatasync":
        return rec(OP.FDATASYNC, this.#file(e.file));
      case "ftruncate":
        return rec(OP.FTRUNCATE, this.#file(e.file), e.length);
      case "fallocate":
        return rec(OP.FALLOCATE, this.#file(e.file), e.offset, e.length, e.mode);
      case "unlink": {
        const f = this.#file(e.file);
        this.#fresh.add(f); // made again later: what it reads then, it wrote
        return rec(OP.UNLINK, f);
      }
      case "mkdir":
        return rec(OP.MKDIR, this.#file(e.file));
      case "rename":
        return rec(OP.RENAME, this.#file(e.file), this.#file(e.to));
      case "io_setup":
        return rec(OP.SETUP, e.ctx);
      case "io_destroy":
        return rec(OP.DESTROY, e.ctx);
      case "io_uring_setup":
        return [];
      case "submit":
        return this.#submit(e.iocbs.slice(0, e.res), e.ctx, th, rec(OP.SUBMIT, e.ctx, 0));
      case "reap": {
        for (const r of e.results) if (r < 0) this.#failedCompletions++;
        if (e.res <= 0) return [];
        const now = th.inflight.get(e.ctx);
        if (now === undefined) {
          this.#foreignReaps++;
          return [];
        }
        th.inflight.set(e.ctx, Math.max(0, now - e.res));
        return rec(OP.REAP, e.ctx, e.res);
      }
    }
  }

  #submit(iocbs: TraceIocb[], ctx: number, th: ThreadState, head: number[]): number[] {
    if (iocbs.length === 0) return [];
    const out = head;
    const c = th.info.contexts[ctx] ?? { depth: 1, slotBytes: 4096 };
    let slotBytes = c.slotBytes;
    for (const i of iocbs) {
      const f = this.#file(i.file);
      const code = i.op === "read"
        ? OP.READ
        : i.op === "write"
        ? OP.WRITE
        : i.op === "fsync"
        ? OP.FSYNC
        : OP.FDATASYNC;
      if (code === OP.READ || code === OP.WRITE) {
        slotBytes = Math.max(slotBytes, i.length);
        this.#touch(f, code === OP.WRITE, i.offset, i.length);
      }
      out.push(
        OP.IOCB,
        head[1]!,
        head[2]!,
        f,
        i.offset,
        i.length,
        code + (this.#direct.has(f) ? IOCB_DIRECT : 0),
        head[7]!,
      );
    }
    out[4] = iocbs.length;
    const now = (th.inflight.get(ctx) ?? 0) + iocbs.length;
    th.inflight.set(ctx, now);
    th.info.contexts[ctx] = { depth: Math.max(c.depth, now), slotBytes };
    return out;
  }

  /**
   * A read or write of `length` bytes at `offset` of file `f`: a read of
   * pages the trace has not written yet needs the file laid out that far.
   */
  #touch(f: number, write: boolean, offset: number, length: number): void {
    if (length <= 0) return;
    let pages = this.#written.get(f);
    if (write) {
      if (!pages) this.#written.set(f, pages = new PageSet());
      pages.add(offset, offset + length);
      return;
    }
    const end = offset + length;
    if (this.#fresh.has(f) || end <= (this.#layout.get(f) ?? 0)) return;
    if (!pages?.covers(offset, end)) this.#layout.set(f, end);
  }
}

/**
 * The 4 KiB pages of a file wholly written, as bits: its size follows the
 * file's, not the trace's length. A page written in part counts as not
 * written (a read there is laid out first, then written over as recorded).
 */
export class PageSet {
  #bits = new Uint8Array(64);

  /** Marks the pages that [start, end) covers whole. */
  add(start: number, end: number): void {
    const first = Math.ceil(start / 4096), last = Math.floor(end / 4096);
    if (last <= first) return;
    if (last > this.#bits.length * 8) {
      const grown = new Uint8Array(Math.max(this.#bits.length * 2, Math.ceil(last / 8)));
      grown.set(this.#bits);
      this.#bits = grown;
    }
    for (let p = first; p < last; p++) this.#bits[p >> 3]! |= 1 << (p & 7);
  }

  /** Whether every page [start, end) touches is marked. */
  covers(start: number, end: number): boolean {
    const last = Math.ceil(end / 4096);
    if (last > this.#bits.length * 8) return false;
    for (let p = Math.floor(start / 4096); p < last; p++) {
      if ((this.#bits[p >> 3]! & (1 << (p & 7))) === 0) return false;
    }
    return true;
  }
}

/** The directories the files of a replay need. */
export function directoriesOf(files: readonly string[]): string[] {
  return [...new Set(files.map((f) => dirname(f)))];
}
