/**
 * `trace stats`: per phase, what a trace did — files, bytes per file group,
 * request sizes, iocbs per io_submit, requests in flight, aio contexts,
 * threads, the order files were used in, failures and padding — computed
 * as the trace streams, in memory bounded by its files, threads and
 * phases, never by its length.
 *
 * A file group is a path with each run of digits written `#`
 * (`…/rank0/exp_avg-0_51.tensor.swp` is in `…/rank#/exp_avg-#_#.tensor.swp`):
 * the files of one kind, whatever their numbers.
 *
 * @module
 */

import type { ReapEvent, SubmitEvent, TraceEvent } from "./events.ts";
import { errnoText } from "./errno.ts";
import { DEFAULT_GAP_US, type Phase, PhaseCutter } from "./phases.ts";
import type { TraceReader } from "./reader.ts";

/**
 * The group of a path: digit runs written `#`.
 *
 * @example
 * ```ts
 * import { fileGroup } from "./stats.ts";
 * console.assert(fileGroup("/d/rank0/0_51_gradient_0_1048576.tensor.swp") === "/d/rank#/#_#_gradient_#_#.tensor.swp");
 * ```
 */
export function fileGroup(path: string): string {
  return path.replace(/[0-9]+/g, "#");
}

/** Counts by value (request sizes, iocbs per submit, …): `{ "1048576": 812 }`. */
export type Counts = Record<string, number>;

/** Bytes and requests of one direction. */
export interface DirectionStats {
  bytes: number;
  /** Requests: synchronous calls and iocbs. */
  ops: number;
  /** Of those, iocbs (the rest synchronous calls). */
  aio_ops: number;
  /** Distinct files. */
  files: number;
  /** Request sizes (bytes asked) → count. */
  sizes: Counts;
}

/** A file group's I/O in a phase. */
export interface GroupStats {
  files: number;
  read: { bytes: number; ops: number };
  write: { bytes: number; ops: number };
  /**
   * Where the group's files end: for each file, the largest offset + length
   * written (and read) in the phase, counted by the largest power of two
   * (up to 1 MiB) that divides it — the padding the writer applied.
   */
  write_end_alignment: Counts;
  read_end_alignment: Counts;
  /**
   * For files both written and read in the trace before this phase ends:
   * the read end minus the write end (bytes), counted — a file read back
   * further than it was written was padded on the way in.
   */
  read_past_write: Counts;
}

/** One aio context's use in a phase. */
export interface ContextStats {
  ctx: number;
  /** Threads that submitted to it and threads that reaped it. */
  submitters: string[];
  reapers: string[];
  submits: number;
  iocbs: number;
  /** The most requests it had in flight after a submit. */
  max_in_flight: number;
}

/** A run of consecutive requests of one thread on one file group in one direction. */
export interface OrderRun {
  op: "read" | "write";
  group: string;
  /** Distinct files in the run, in the order first used. */
  files: number;
  /** Whether each file's numbers follow the one before (ascending), fall (descending), neither. */
  direction: "ascending" | "descending" | "mixed" | "one";
  bytes: number;
}

/** Failures of one kind: a call (or an aio completion) with its errno. */
export interface FailureStats {
  call: string;
  errno: string;
  /** The file group, or the context (`ctx N`) for a completion. */
  where: string;
  count: number;
}

/** What one phase did. */
export interface PhaseStats {
  index: number;
  name: string;
  marker: string;
  /** Seconds from the trace's origin. */
  start_s: number;
  /** From the phase's start to the last end of a call in it, s. */
  time_s: number;
  threads: string[];
  read: DirectionStats;
  write: DirectionStats;
  /** Files opened (successfully) in the phase. */
  opened: number;
  fsyncs: number;
  groups: Record<string, GroupStats>;
  /** iocbs per io_submit → count. */
  iocbs_per_submit: Counts;
  /** Requests in flight on the context right after each submit → count. */
  in_flight: Counts;
  contexts: ContextStats[];
  /** Per thread, its runs in order (at most {@linkcode MAX_RUNS}; `order_cut` says when more). */
  order: Record<string, OrderRun[]>;
  order_cut: boolean;
  /**
   * Per thread, the files it moved bytes of, each time it changed file or
   * direction (`w:/path`, `r:/path`), at most {@linkcode MAX_SEQUENCE}.
   */
  sequence: Record<string, string[]>;
  failures: FailureStats[];
}

/** The whole trace's statistics. */
export interface TraceStats {
  phases: PhaseStats[];
  /** Totals over the phases. */
  read: { bytes: number; ops: number };
  write: { bytes: number; ops: number };
  notes: string[];
  /** The io_uring rings set up: I/O the trace cannot show. */
  io_uring_rings: number;
}

/** Runs kept per thread and phase. */
export const MAX_RUNS = 200;
/** File changes kept per thread and phase. */
export const MAX_SEQUENCE = 2000;

const MIB = 1 << 20;

/** The largest power of two (≤ 1 MiB) dividing `n`; 1 MiB for 0. */
export function alignmentOf(n: number): number {
  if (n === 0) return MIB;
  let a = 1;
  while (a < MIB && n % (a * 2) === 0) a *= 2;
  return a;
}

/** The numbers in a path, to order files (`…0_51…` before `…52_60…`). */
function numbersOf(path: string): number[] {
  return (path.match(/[0-9]+/g) ?? []).map(Number);
}

function compareNumbers(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! - b[i]!;
  }
  return a.length - b.length;
}

function bump(c: Counts, key: number | string, by = 1): void {
  c[key] = (c[key] ?? 0) + by;
}

/** A run being built. */
interface RunState {
  run: OrderRun;
  seen: Set<string>;
  last: number[];
  asc: boolean;
  desc: boolean;
}

interface GroupState {
  files: Set<string>;
  read: { bytes: number; ops: number };
  write: { bytes: number; ops: number };
  writeEnd: Map<string, number>;
  readEnd: Map<string, number>;
}

interface DirectionState {
  bytes: number;
  ops: number;
  aio: number;
  files: Set<string>;
  sizes: Counts;
}

interface ContextState {
  submitters: Set<string>;
  reapers: Set<string>;
  submits: number;
  iocbs: number;
  max: number;
}

function direction(): DirectionState {
  return { bytes: 0, ops: 0, aio: 0, files: new Set(), sizes: {} };
}

/** What one phase has gathered so far. */
class PhaseState {
  readonly phase: Phase;
  end: number;
  readonly threads = new Set<string>();
  readonly read = direction();
  readonly write = direction();
  opened = 0;
  fsyncs = 0;
  readonly groups = new Map<string, GroupState>();
  readonly iocbsPerSubmit: Counts = {};
  readonly inFlight: Counts = {};
  readonly contexts = new Map<number, ContextState>();
  readonly runs = new Map<string, OrderRun[]>();
  readonly open = new Map<string, RunState>();
  orderCut = false;
  readonly sequence = new Map<string, string[]>();
  readonly failures = new Map<string, FailureStats>();

  constructor(phase: Phase) {
    this.phase = phase;
    this.end = phase.start;
  }

  group(path: string): GroupState {
    const key = fileGroup(path);
    let g = this.groups.get(key);
    if (!g) {
      g = {
        files: new Set(),
        read: { bytes: 0, ops: 0 },
        write: { bytes: 0, ops: 0 },
        writeEnd: new Map(),
        readEnd: new Map(),
      };
      this.groups.set(key, g);
    }
    return g;
  }

  context(ctx: number): ContextState {
    let c = this.contexts.get(ctx);
    if (!c) {
      c = { submitters: new Set(), reapers: new Set(), submits: 0, iocbs: 0, max: 0 };
      this.contexts.set(ctx, c);
    }
    return c;
  }

  fail(call: string, errno: number, where: string): void {
    const name = errnoText(errno);
    const key = `${call}|${name}|${where}`;
    const f = this.failures.get(key);
    if (f) f.count++;
    else this.failures.set(key, { call, errno: name, where, count: 1 });
  }

  /** One request of `thread`: the order and sequence it extends. */
  order(thread: string, op: "read" | "write", path: string, bytes: number): void {
    const group = fileGroup(path);
    let s = this.open.get(thread);
    if (!s || s.run.op !== op || s.run.group !== group) {
      let runs = this.runs.get(thread);
      if (!runs) this.runs.set(thread, runs = []);
      if (runs.length >= MAX_RUNS) {
        this.orderCut = true;
        this.open.delete(thread);
        return this.#sequence(thread, op, path);
      }
      const run: OrderRun = { op, group, files: 0, direction: "one", bytes: 0 };
      runs.push(run);
      s = { run, seen: new Set(), last: [], asc: true, desc: true };
      this.open.set(thread, s);
    }
    s.run.bytes += bytes;
    if (!s.seen.has(path)) {
      const nums = numbersOf(path);
      if (s.seen.size > 0) {
        const c = compareNumbers(nums, s.last);
        if (c <= 0) s.asc = false;
        if (c >= 0) s.desc = false;
      }
      s.seen.add(path);
      s.last = nums;
      s.run.files = s.seen.size;
      s.run.direction = s.seen.size === 1
        ? "one"
        : s.asc
        ? "ascending"
        : s.desc
        ? "descending"
        : "mixed";
    }
    this.#sequence(thread, op, path);
  }

  #sequence(thread: string, op: "read" | "write", path: string): void {
    let seq = this.sequence.get(thread);
    if (!seq) this.sequence.set(thread, seq = []);
    const key = `${op === "read" ? "r" : "w"}:${path}`;
    if (seq[seq.length - 1] === key) return;
    if (seq.length >= MAX_SEQUENCE) {
      this.orderCut = true;
      return;
    }
    seq.push(key);
  }
}

/**
 * Gathers a trace's statistics event by event: {@linkcode StatsCollector.add}
 * each event in trace order, then {@linkcode StatsCollector.finish}.
 *
 * @example
 * ```ts
 * import { StatsCollector } from "./stats.ts";
 * const s = new StatsCollector();
 * s.add({ kind: "phase", t: 0, name: "update", marker: "" });
 * s.add({ kind: "submit", t: 5, thread: "1", dur: 3, ctx: 0, asked: 2, res: 2, iocbs: [
 *   { op: "write", file: "/d/0_1.swp", offset: 0, length: 1 << 20 },
 *   { op: "write", file: "/d/0_1.swp", offset: 1 << 20, length: 1 << 20 },
 * ] });
 * s.add({ kind: "reap", t: 9, thread: "1", dur: 1, ctx: 0, min: 1, max: 8, res: 2, results: [1 << 20, -22] });
 * const st = s.finish();
 * const p = st.phases[0]!;
 * console.assert(p.write.bytes === 2 << 20 && p.iocbs_per_submit["2"] === 1 && p.in_flight["2"] === 1);
 * console.assert(p.failures[0]?.errno === "EINVAL");
 * ```
 */
export class StatsCollector {
  readonly #cutter: PhaseCutter;
  readonly #phases: PhaseState[] = [];
  readonly #byIndex = new Map<number, PhaseState>();
  readonly #inFlight = new Map<number, number>();
  /** Over the whole trace so far: each file's largest write end. */
  readonly #writeEnd = new Map<string, number>();
  #rings = 0;

  /** A collector cutting phases at pauses of `gapUs` where the trace has no markers. */
  constructor(gapUs: number = DEFAULT_GAP_US) {
    this.#cutter = new PhaseCutter(gapUs);
  }

  #state(p: Phase): PhaseState {
    let s = this.#byIndex.get(p.index);
    if (!s) {
      s = new PhaseState(p);
      this.#byIndex.set(p.index, s);
      this.#phases.push(s);
    }
    return s;
  }

  /** Adds one event. */
  add(e: TraceEvent): void {
    const s = this.#state(this.#cutter.place(e));
    if (e.kind === "phase") return;
    s.threads.add(e.thread);
    const end = e.t + Math.max(0, e.dur);
    if (end > s.end) s.end = end;
    switch (e.kind) {
      case "read":
      case "write":
        if (e.res < 0) s.fail(e.kind, -e.res, fileGroup(e.file));
        else this.#request(s, e.thread, e.kind, e.file, e.offset, e.length, e.res, false);
        return;
      case "open":
        if (e.res < 0) s.fail("open", -e.res, fileGroup(e.file));
        else s.opened++;
        return;
      case "fsync":
      case "fdatasync":
        if (e.res < 0) s.fail(e.kind, -e.res, fileGroup(e.file));
        s.fsyncs++;
        return;
      case "close":
      case "ftruncate":
      case "fallocate":
      case "unlink":
      case "mkdir":
      case "rename":
        if (e.res < 0) s.fail(e.kind, -e.res, fileGroup(e.file));
        return;
      case "submit":
        return this.#submit(s, e);
      case "reap":
        return this.#reap(s, e);
      case "io_uring_setup":
        this.#rings++;
        return;
    }
  }

  #request(
    s: PhaseState,
    thread: string,
    op: "read" | "write",
    file: string,
    offset: number,
    length: number,
    bytes: number,
    aio: boolean,
  ): void {
    const d = op === "read" ? s.read : s.write;
    d.bytes += bytes;
    d.ops++;
    if (aio) d.aio++;
    d.files.add(file);
    bump(d.sizes, length);
    const g = s.group(file);
    g.files.add(file);
    g[op].bytes += bytes;
    g[op].ops++;
    const end = offset + length;
    const ends = op === "read" ? g.readEnd : g.writeEnd;
    if (end > (ends.get(file) ?? -1)) ends.set(file, end);
    if (op === "write" && end > (this.#writeEnd.get(file) ?? -1)) this.#writeEnd.set(file, end);
    s.order(thread, op, file, bytes);
  }

  #submit(s: PhaseState, e: SubmitEvent): void {
    const c = s.context(e.ctx);
    c.submitters.add(e.thread);
    c.submits++;
    if (e.res < 0) {
      s.fail("io_submit", -e.res, `ctx ${e.ctx}`);
      return;
    }
    bump(s.iocbsPerSubmit, e.res);
    c.iocbs += e.res;
    for (const i of e.iocbs.slice(0, e.res)) {
      if (i.op === "read" || i.op === "write") {
        this.#request(s, e.thread, i.op, i.file, i.offset, i.length, i.length, true);
      } else s.fsyncs++;
    }
    const now = (this.#inFlight.get(e.ctx) ?? 0) + e.res;
    this.#inFlight.set(e.ctx, now);
    bump(s.inFlight, now);
    if (now > c.max) c.max = now;
  }

  #reap(s: PhaseState, e: ReapEvent): void {
    const c = s.context(e.ctx);
    c.reapers.add(e.thread);
    if (e.res < 0) {
      s.fail(e.kind === "reap" ? "io_getevents" : e.kind, -e.res, `ctx ${e.ctx}`);
      return;
    }
    for (const r of e.results) if (r < 0) s.fail("aio completion", -r, `ctx ${e.ctx}`);
    this.#inFlight.set(e.ctx, Math.max(0, (this.#inFlight.get(e.ctx) ?? 0) - e.res));
  }

  /** The statistics of everything added. */
  finish(notes: readonly string[] = []): TraceStats {
    const phases = this.#phases.map((s) => this.#phaseStats(s));
    const total = (d: "read" | "write") => ({
      bytes: phases.reduce((t, p) => t + p[d].bytes, 0),
      ops: phases.reduce((t, p) => t + p[d].ops, 0),
    });
    return {
      phases,
      read: total("read"),
      write: total("write"),
      notes: [...notes],
      io_uring_rings: this.#rings,
    };
  }

  #phaseStats(s: PhaseState): PhaseStats {
    const dir = (d: DirectionState): DirectionStats => ({
      bytes: d.bytes,
      ops: d.ops,
      aio_ops: d.aio,
      files: d.files.size,
      sizes: d.sizes,
    });
    const groups: Record<string, GroupStats> = {};
    for (const [key, g] of [...s.groups].sort(([a], [b]) => a.localeCompare(b))) {
      groups[key] = this.#groupStats(g);
    }
    return {
      index: s.phase.index,
      name: s.phase.name,
      marker: s.phase.marker,
      start_s: s.phase.start / 1e6,
      time_s: (s.end - s.phase.start) / 1e6,
      threads: [...s.threads],
      read: dir(s.read),
      write: dir(s.write),
      opened: s.opened,
      fsyncs: s.fsyncs,
      groups,
      iocbs_per_submit: s.iocbsPerSubmit,
      in_flight: s.inFlight,
      contexts: [...s.contexts].map(([ctx, c]) => ({
        ctx,
        submitters: [...c.submitters],
        reapers: [...c.reapers],
        submits: c.submits,
        iocbs: c.iocbs,
        max_in_flight: c.max,
      })),
      order: Object.fromEntries(s.runs),
      order_cut: s.orderCut,
      sequence: Object.fromEntries(s.sequence),
      failures: [...s.failures.values()],
    };
  }

  #groupStats(g: GroupState): GroupStats {
    const writeAlign: Counts = {}, readAlign: Counts = {}, past: Counts = {};
    for (const end of g.writeEnd.values()) bump(writeAlign, alignmentOf(end));
    for (const [file, end] of g.readEnd) {
      bump(readAlign, alignmentOf(end));
      const w = this.#writeEnd.get(file);
      if (w !== undefined) bump(past, end - w);
    }
    return {
      files: g.files.size,
      read: g.read,
      write: g.write,
      write_end_alignment: writeAlign,
      read_end_alignment: readAlign,
      read_past_write: past,
    };
  }
}

/** Options of {@linkcode traceStats}. */
export interface StatsOptions {
  /** The pause that starts a phase where the trace has no markers, µs (default 1 s). */
  readonly gapUs?: number;
}

/**
 * The statistics of a whole trace, read as it streams.
 *
 * @example
 * ```ts ignore
 * const stats = await traceStats(await TraceReader.open("run.trace.gz"));
 * for (const p of stats.phases) console.log(p.name, p.write.bytes);
 * ```
 */
export async function traceStats(reader: TraceReader, o: StatsOptions = {}): Promise<TraceStats> {
  const c = new StatsCollector(o.gapUs);
  for await (const batch of reader.batches()) for (const e of batch) c.add(e);
  return c.finish(reader.notes);
}
