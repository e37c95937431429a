/**
 * strace logs as traces: `strace -f -tt -T` output (the DeepSpeed
 * recordings' form; `-ttt`, `-y` and `-s` of any length too) read line by
 * line into trace events, per thread, in flat memory.
 *
 * What it keeps, for files under `only` (every file without it): opens
 * (path, flags), closes, reads and writes of every flavour (pread64,
 * pwrite64, read, write, preadv, pwritev, readv, writev and their 2
 * variants: for read and write the offset is the descriptor's position,
 * moved by lseek), fsync and fdatasync, ftruncate and truncate, fallocate,
 * unlink, mkdir and rename; the libaio calls — io_setup, io_destroy,
 * io_submit with each iocb decoded, io_getevents and io_pgetevents with each
 * completion's result, failures included — and io_uring_setup, whose I/O
 * strace cannot see (said in the notes). Descriptors are followed through
 * opens, dups and closes, per process (trace/_fd_table.ts); strace's `-y`
 * paths are used where present.
 *
 * A write that starts with `TBMARK ` (to any descriptor) is a marker: it
 * starts a phase named by its words (`TBMARK STEP 1 forward t=9.385` starts
 * `STEP 1 forward`; `key=value` words are left out of the name). The same
 * text written twice in a row (the recordings write each marker to a file
 * and to stdout) is one marker.
 *
 * @module
 */

import { FdTables } from "./_fd_table.ts";
import {
  arrayArg,
  classifyLine,
  fdArg,
  parseCall,
  type StraceCall,
  stringArg,
  structFields,
} from "./_strace_syntax.ts";
import { errnoNumber } from "./errno.ts";
import { TraceError } from "./errors.ts";
import type { TraceEvent, TraceIocb } from "./events.ts";

/** What the marker writes start with. */
export const MARKER_PREFIX = "TBMARK ";

const DAY_US = 86_400e6;

/** Options of an import. */
export interface StraceOptions {
  /** Keep only files whose path starts with this. */
  readonly only?: string | undefined;
}

/** One call, with the thread and time it started. */
interface Call extends StraceCall {
  readonly tid: number;
  readonly t: number;
}

const FALLOC: Record<string, number> = {
  FALLOC_FL_KEEP_SIZE: 1,
  FALLOC_FL_PUNCH_HOLE: 2,
  FALLOC_FL_NO_HIDE_STALE: 4,
  FALLOC_FL_COLLAPSE_RANGE: 8,
  FALLOC_FL_ZERO_RANGE: 16,
  FALLOC_FL_INSERT_RANGE: 32,
  FALLOC_FL_UNSHARE_RANGE: 64,
};

/** A number argument (decimal, hex, or flag names for fallocate's mode). */
function num(arg: string | undefined): number {
  if (arg === undefined) return NaN;
  const n = Number(arg);
  if (!Number.isNaN(n)) return n;
  return arg.split("|").reduce((t, f) => t + (FALLOC[f] ?? NaN), 0);
}

/** The result of a call as a trace keeps it: the value, or -errno. */
function res(c: StraceCall): number {
  if (c.ret === -1 && c.errno !== "") return -(errnoNumber(c.errno) || 1);
  return c.ret;
}

/** Whether a path `-y` printed is a file (not `socket:[…]`, `pipe:[…]`, `anon_inode:…`). */
function isFilePath(p: string): boolean {
  return !/^[a-z_]+:/.test(p);
}

/** The total `iov_len` of an iovec array argument, and whether it was cut short. */
function iovLength(arg: string | undefined): { length: number; cut: boolean } {
  const { items, cut } = arrayArg(arg);
  let length = 0;
  for (const it of items) length += Number(structFields(it).get("iov_len") ?? 0);
  return { length, cut };
}

/** `dir` joined with a relative `path` (an absolute path stays). */
function under(dir: string | undefined, path: string): string {
  if (path.startsWith("/") || dir === undefined || dir === "") return path;
  return dir.endsWith("/") ? dir + path : `${dir}/${path}`;
}

/**
 * Turns an strace log's lines into trace events: feed it each line with
 * {@linkcode StraceImporter.line}; the events come out in the order strace
 * reported each call's end, with the time it started.
 *
 * @example
 * ```ts
 * import { StraceImporter } from "./strace.ts";
 * import type { TraceEvent } from "./events.ts";
 * const imp = new StraceImporter("x.txt");
 * const out: TraceEvent[] = [];
 * imp.line('7 10:00:00.000000 openat(AT_FDCWD, "/d/f", O_RDONLY|O_DIRECT) = 3 <0.000010>', 1, out);
 * imp.line('7 10:00:00.000100 pread64(3, "", 4096, 8192) = 4096 <0.000050>', 2, out);
 * console.assert(out[1]?.kind === "read" && out[1].file === "/d/f" && out[1].offset === 8192 && out[1].t === 100);
 * ```
 */
export class StraceImporter {
  readonly #path: string;
  readonly #only: string | undefined;
  readonly #fds = new FdTables();
  readonly #pending = new Map<number, { us: number; text: string }>();
  readonly #contexts = new Map<string, number>();
  /** Contexts that an iocb on a kept file went to: their reaps are kept. */
  readonly #keptContexts = new Set<number>();
  #origin = NaN;
  #originText = "";
  #dayShift = 0;
  #lastUs = 0;
  #lastMarker = "";
  #unknownFd = 0;
  #cutArrays = 0;
  #calls = 0;
  readonly #rings: string[] = [];

  constructor(path: string, options: StraceOptions = {}) {
    this.#path = path;
    this.#only = options.only;
  }

  /** The wall-clock time of the first line, as strace printed it ("" before it). */
  get origin(): string {
    return this.#originText;
  }

  /** How many system calls were read. */
  get calls(): number {
    return this.#calls;
  }

  /** The process thread `name` (a thread id) belongs to, as far as the log said. */
  processOf(name: string): string {
    return String(this.#fds.processOf(Number(name)));
  }

  /** What a reader of the trace should know, once every line was fed. */
  notes(): string[] {
    const out: string[] = [];
    for (const r of this.#rings) {
      out.push(
        `${r} set up an io_uring ring: its I/O goes through memory shared with the kernel, ` +
          "which strace cannot see, and is not in this trace",
      );
    }
    if (this.#unknownFd > 0) {
      out.push(
        `${this.#unknownFd} reads and writes on descriptors of no known file ` +
          "(pipes, sockets, inherited) left out",
      );
    }
    if (this.#cutArrays > 0) {
      out.push(
        `${this.#cutArrays} io_submit or io_getevents arrays were cut short by strace ` +
          "(its -s limit): their other elements are not in the trace",
      );
    }
    return out;
  }

  /** Feeds line `no` (from 1) of the log; pushes the events it completes to `out`. */
  line(text: string, no: number, out: TraceEvent[]): void {
    const l = classifyLine(text);
    if (!l) {
      if (no === 1) {
        throw new TraceError(
          this.#path,
          1,
          "is not an strace log with times (record with strace -f -tt -T)",
        );
      }
      return;
    }
    const us = this.#clock(l.us, text);
    switch (l.kind) {
      case "unfinished":
        this.#pending.set(l.tid, { us, text: l.text });
        return;
      case "resumed": {
        const p = this.#pending.get(l.tid);
        if (!p) return; // began before the log did
        this.#pending.delete(l.tid);
        this.#call(l.tid, p.us, p.text + l.text, out);
        return;
      }
      case "call":
        this.#call(l.tid, us, l.text, out);
        return;
      case "exit":
        this.#pending.delete(l.tid);
        return;
    }
  }

  /** µs since the origin, across midnight for -tt times. */
  #clock(us: number, text: string): number {
    if (Number.isNaN(this.#origin)) {
      this.#origin = us;
      this.#originText = text.replace(/^(?:\[pid\s+\d+\]\s+|\d+\s+)?/, "").split(/\s/)[0]!;
    }
    if (us + this.#dayShift < this.#lastUs - DAY_US / 2 && us < DAY_US) this.#dayShift += DAY_US;
    const abs = us + this.#dayShift;
    this.#lastUs = abs;
    return abs - this.#origin;
  }

  #call(tid: number, t: number, text: string, out: TraceEvent[]): void {
    const c = parseCall(text);
    if (!c || Number.isNaN(c.ret)) return;
    this.#calls++;
    const call: Call = { ...c, tid, t };
    const handler = HANDLERS[c.name];
    if (handler) handler(this, call, out);
  }

  // --- what the handlers share -----------------------------------------------------------------

  /** Whether events on `path` are kept. */
  keeps(path: string): boolean {
    return isFilePath(path) && (this.#only === undefined || path.startsWith(this.#only));
  }

  /** The fields every thread event has. */
  base(c: Call): { t: number; thread: string; dur: number } {
    return { t: c.t, thread: String(c.tid), dur: c.dur };
  }

  /** The file a descriptor argument names (its `-y` path, else the table's), or undefined. */
  fileOf(
    tid: number,
    arg: string | undefined,
  ): { path: string; desc: { pos: number } } | undefined {
    const { fd, path } = fdArg(arg);
    let desc = this.#fds.get(tid, fd);
    if (path !== undefined && (!desc || desc.path !== path)) {
      if (!isFilePath(path)) return undefined;
      desc = { path, flags: "", pos: desc?.pos ?? 0 };
      this.#fds.open(tid, fd, desc);
    }
    return desc ? { path: desc.path, desc } : undefined;
  }

  /** A directory argument (`AT_FDCWD</home>`, `3</d>`, or a tracked descriptor) as a path. */
  dirOf(tid: number, arg: string | undefined): string | undefined {
    const { fd, path } = fdArg(arg);
    if (path !== undefined) return path;
    return fd === -100 ? undefined : this.#fds.get(tid, fd)?.path;
  }

  get fds(): FdTables {
    return this.#fds;
  }

  /** The trace's number of the context at `addr`. */
  context(addr: string | undefined): number {
    const a = (addr ?? "").replace(/^\[|\]$/g, "");
    let id = this.#contexts.get(a);
    if (id === undefined) this.#contexts.set(a, id = this.#contexts.size);
    return id;
  }

  keepContext(ctx: number): void {
    this.#keptContexts.add(ctx);
  }

  keptContext(ctx: number): boolean {
    return this.#keptContexts.has(ctx);
  }

  countUnknownFd(): void {
    this.#unknownFd++;
  }

  countCut(): void {
    this.#cutArrays++;
  }

  ring(tid: number): void {
    this.#rings.push(`thread ${tid}`);
  }

  /** A marker write: a phase event, unless it repeats the last marker. */
  marker(t: number, text: string, out: TraceEvent[]): void {
    const marker = text.trim();
    if (marker === this.#lastMarker) return;
    this.#lastMarker = marker;
    const name = marker.slice(MARKER_PREFIX.length).split(/\s+/)
      .filter((w) => w !== "" && !w.includes("=") && w !== "...").join(" ");
    out.push({ kind: "phase", t, name, marker });
  }
}

type Handler = (imp: StraceImporter, c: Call, out: TraceEvent[]) => void;

// --- opens, closes, descriptors -------------------------------------------------------------

function openCall(pathArg: number, flagsArg: number, dirArg?: number): Handler {
  return (imp, c, out) => {
    const raw = stringArg(c.args[pathArg]);
    if (raw === undefined) return;
    const dir = dirArg === undefined ? undefined : imp.dirOf(c.tid, c.args[dirArg]);
    const path = c.retPath ?? under(dir, raw);
    let flags = c.args[flagsArg] ?? "";
    if (flags.startsWith("{")) flags = structFields(flags).get("flags") ?? "";
    if (c.name === "creat") flags = "O_WRONLY|O_CREAT|O_TRUNC";
    if (c.ret >= 0) imp.fds.open(c.tid, c.ret, { path, flags, pos: 0 });
    if (!imp.keeps(path) || flags.includes("O_DIRECTORY")) return;
    out.push({ kind: "open", ...imp.base(c), file: path, flags, res: res(c) });
  };
}

const close: Handler = (imp, c, out) => {
  const { fd, path } = fdArg(c.args[0]);
  const desc = imp.fds.close(c.tid, fd);
  const file = path ?? desc?.path;
  if (file === undefined || !imp.keeps(file) || desc?.flags.includes("O_DIRECTORY")) return;
  out.push({ kind: "close", ...imp.base(c), file, res: res(c) });
};

function dupCall(newArg: number | "ret"): Handler {
  return (imp, c) => {
    if (c.ret < 0) return;
    if (c.name === "fcntl" && !/^F_DUPFD/.test(c.args[1] ?? "")) return;
    const to = newArg === "ret" ? c.ret : fdArg(c.args[newArg]).fd;
    imp.fds.dup(c.tid, fdArg(c.args[0]).fd, to);
  };
}

const lseek: Handler = (imp, c) => {
  const f = imp.fileOf(c.tid, c.args[0]);
  if (f && c.ret >= 0) f.desc.pos = c.ret;
};

function cloneCall(flagsOf: (c: Call) => string): Handler {
  return (imp, c) => {
    if (c.ret <= 0) return;
    const flags = flagsOf(c);
    imp.fds.clone(c.tid, c.ret, /CLONE_THREAD|CLONE_FILES/.test(flags));
  };
}

const execve: Handler = (imp, c) => {
  if (c.ret === 0) imp.fds.exec(c.tid);
};

// --- reads and writes ----------------------------------------------------------------------

/** Where the bytes of a read/write call are: `length`, and `offset` (-1 for the position). */
interface Transfer {
  readonly write: boolean;
  readonly length: (c: Call) => number;
  readonly offset: (c: Call) => number;
}

function transfer(x: Transfer): Handler {
  return (imp, c, out) => {
    if (x.write && c.name === "write") {
      const s = stringArg(c.args[1]);
      if (s !== undefined && s.startsWith(MARKER_PREFIX)) {
        imp.marker(c.t, s, out);
        return;
      }
    }
    const f = imp.fileOf(c.tid, c.args[0]);
    if (!f) {
      imp.countUnknownFd();
      return;
    }
    let offset = x.offset(c);
    const moves = offset < 0;
    if (moves) offset = f.desc.pos;
    const r = res(c);
    if (moves && r > 0) f.desc.pos += r;
    if (!imp.keeps(f.path)) return;
    let length = x.length(c);
    if (Number.isNaN(length)) length = Math.max(0, r);
    out.push({
      kind: x.write ? "write" : "read",
      ...imp.base(c),
      file: f.path,
      offset,
      length,
      res: r,
    });
  };
}

const plain = (write: boolean): Handler =>
  transfer({ write, length: (c) => num(c.args[2]), offset: () => -1 });
const positioned = (write: boolean): Handler =>
  transfer({ write, length: (c) => num(c.args[2]), offset: (c) => num(c.args[3]) });
const vectored = (write: boolean, at: boolean): Handler =>
  transfer({
    write,
    length: (c) => {
      const { length, cut } = iovLength(c.args[1]);
      return cut ? Math.max(length, c.ret) : length;
    },
    offset: (c) => (at ? num(c.args[3]) : -1),
  });

// --- syncs, sizes, names -------------------------------------------------------------------

function onFile(make: (c: Call, file: string) => TraceEvent): Handler {
  return (imp, c, out) => {
    const f = imp.fileOf(c.tid, c.args[0]);
    if (f && imp.keeps(f.path)) out.push(make(c, f.path));
  };
}

/** ftruncate(fd, length) and truncate(path, length): the file cut to (or grown to) `length`. */
function truncated(c: Call, file: string): TraceEvent {
  return {
    kind: "ftruncate",
    t: c.t,
    thread: String(c.tid),
    dur: c.dur,
    file,
    length: num(c.args[1]),
    res: res(c),
  };
}

function onPath(
  pathArg: number,
  dirArg: number | undefined,
  make: (c: Call, file: string) => TraceEvent,
): Handler {
  return (imp, c, out) => {
    const raw = stringArg(c.args[pathArg]);
    if (raw === undefined) return;
    const path = under(dirArg === undefined ? undefined : imp.dirOf(c.tid, c.args[dirArg]), raw);
    if (imp.keeps(path)) out.push(make(c, path));
  };
}

function renameCall(from: number, to: number, fromDir?: number, toDir?: number): Handler {
  return (imp, c, out) => {
    const a = stringArg(c.args[from]), b = stringArg(c.args[to]);
    if (a === undefined || b === undefined) return;
    const file = under(fromDir === undefined ? undefined : imp.dirOf(c.tid, c.args[fromDir]), a);
    const dest = under(toDir === undefined ? undefined : imp.dirOf(c.tid, c.args[toDir]), b);
    if (imp.keeps(file) || imp.keeps(dest)) {
      out.push({ kind: "rename", ...imp.base(c), file, to: dest, res: res(c) });
    }
  };
}

// --- libaio ---------------------------------------------------------------------------------

const IOCB_OPS: Record<string, TraceIocb["op"]> = {
  IOCB_CMD_PREAD: "read",
  IOCB_CMD_PREADV: "read",
  IOCB_CMD_PWRITE: "write",
  IOCB_CMD_PWRITEV: "write",
  IOCB_CMD_FSYNC: "fsync",
  IOCB_CMD_FDSYNC: "fdatasync",
};

const ioSubmit: Handler = (imp, c, out) => {
  const ctx = imp.context(c.args[0]);
  const { items, cut } = arrayArg(c.args[2]);
  if (cut) imp.countCut();
  const iocbs: TraceIocb[] = [];
  for (const item of items) {
    const f = structFields(item);
    const op = IOCB_OPS[f.get("aio_lio_opcode") ?? ""];
    const file = imp.fileOf(c.tid, f.get("aio_fildes"));
    if (op === undefined || !file || !imp.keeps(file.path)) continue;
    const buf = f.get("aio_buf") ?? "";
    const length = buf.startsWith("[") ? iovLength(buf).length : num(f.get("aio_nbytes"));
    iocbs.push({ op, file: file.path, offset: num(f.get("aio_offset") ?? "0"), length });
  }
  if (iocbs.length === 0) return;
  imp.keepContext(ctx);
  out.push({ kind: "submit", ...imp.base(c), ctx, asked: num(c.args[1]), res: res(c), iocbs });
};

const ioReap: Handler = (imp, c, out) => {
  const ctx = imp.context(c.args[0]);
  if (!imp.keptContext(ctx)) return;
  const { items, cut } = arrayArg(c.args[3]);
  if (cut && c.ret > items.length) imp.countCut();
  const results = items.map((e) => num(structFields(e).get("res")));
  out.push({
    kind: "reap",
    ...imp.base(c),
    ctx,
    min: num(c.args[1]),
    max: num(c.args[2]),
    res: res(c),
    results: results.filter((r) => !Number.isNaN(r)),
  });
};

const HANDLERS: Record<string, Handler> = {
  open: openCall(0, 1),
  openat: openCall(1, 2, 0),
  openat2: openCall(1, 2, 0),
  creat: openCall(0, 1),
  close,
  dup: dupCall("ret"),
  dup2: dupCall(1),
  dup3: dupCall(1),
  fcntl: dupCall("ret"),
  lseek,
  clone: cloneCall((c) => c.args.find((a) => a.startsWith("flags="))?.slice(6) ?? ""),
  clone3: cloneCall((c) => structFields(c.args[0] ?? "").get("flags") ?? ""),
  fork: cloneCall(() => ""),
  vfork: cloneCall(() => ""),
  execve,
  read: plain(false),
  write: plain(true),
  pread64: positioned(false),
  pwrite64: positioned(true),
  readv: vectored(false, false),
  writev: vectored(true, false),
  preadv: vectored(false, true),
  pwritev: vectored(true, true),
  preadv2: vectored(false, true),
  pwritev2: vectored(true, true),
  fsync: onFile((c, file) => ({
    kind: "fsync",
    t: c.t,
    thread: String(c.tid),
    dur: c.dur,
    file,
    res: res(c),
  })),
  fdatasync: onFile((c, file) => ({
    kind: "fdatasync",
    t: c.t,
    thread: String(c.tid),
    dur: c.dur,
    file,
    res: res(c),
  })),
  ftruncate: onFile(truncated),
  fallocate: onFile((c, file) => ({
    kind: "fallocate",
    t: c.t,
    thread: String(c.tid),
    dur: c.dur,
    file,
    mode: num(c.args[1]),
    offset: num(c.args[2]),
    length: num(c.args[3]),
    res: res(c),
  })),
  truncate: onPath(0, undefined, truncated),
  unlink: onPath(
    0,
    undefined,
    (c, file) => ({ kind: "unlink", t: c.t, thread: String(c.tid), dur: c.dur, file, res: res(c) }),
  ),
  unlinkat: onPath(
    1,
    0,
    (c, file) => ({ kind: "unlink", t: c.t, thread: String(c.tid), dur: c.dur, file, res: res(c) }),
  ),
  mkdir: onPath(
    0,
    undefined,
    (c, file) => ({ kind: "mkdir", t: c.t, thread: String(c.tid), dur: c.dur, file, res: res(c) }),
  ),
  mkdirat: onPath(
    1,
    0,
    (c, file) => ({ kind: "mkdir", t: c.t, thread: String(c.tid), dur: c.dur, file, res: res(c) }),
  ),
  rename: renameCall(0, 1),
  renameat: renameCall(1, 3, 0, 2),
  renameat2: renameCall(1, 3, 0, 2),
  io_setup: (imp, c, out) =>
    out.push({
      kind: "io_setup",
      ...imp.base(c),
      ctx: c.ret < 0 ? -1 : imp.context(c.args[1]),
      nr: num(c.args[0]),
      res: res(c),
    }),
  io_destroy: (imp, c, out) =>
    out.push({ kind: "io_destroy", ...imp.base(c), ctx: imp.context(c.args[0]), res: res(c) }),
  io_submit: ioSubmit,
  io_getevents: ioReap,
  io_pgetevents: ioReap,
  io_uring_setup: (imp, c, out) => {
    imp.ring(c.tid);
    out.push({ kind: "io_uring_setup", ...imp.base(c), entries: num(c.args[0]), res: res(c) });
  },
};

/** The system calls an import reads (`trace record` asks strace for these). */
export const STRACE_CALLS: readonly string[] = Object.keys(HANDLERS);
