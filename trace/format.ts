/**
 * The trace format (`"schema": "tierbench/trace@1"`): what a process did to
 * its files, one JSON value per line (JSON Lines, gzipped when the file name
 * ends in `.gz`), so that a trace of any length is written and read in flat
 * memory.
 *
 * - Line 1 is a {@linkcode TraceHeader} object.
 * - Every other line is a record: a JSON array whose first element names its
 *   kind ({@linkcode TraceRecord}). Files and threads are declared once
 *   (`file`, `thread`) and named by number after that.
 * - The last line is the `end` record, with the number of records before it
 *   and the notes learnt at the end: a trace without one was cut short and is
 *   refused.
 *
 * Times (`t`, `dur`) are whole microseconds; `t` counts from the header's
 * `origin`. Records of one thread are in that thread's order; records of
 * different threads are in the order the source reported their ends (strace
 * prints a call when it returns), so `t` may step back a little between
 * threads. A phase starts at its `phase` record and lasts until the next.
 * Results follow the system call's convention: bytes or a descriptor when
 * it succeeded, `-errno` when it failed.
 *
 * schemas/trace.schema.json describes one line (`deno task schemas`
 * generates it from these types).
 *
 * @example
 * ```ts
 * import { TRACE_SCHEMA } from "./format.ts";
 * const lines = [
 *   JSON.stringify({ schema: TRACE_SCHEMA, source: { kind: "generator" }, origin: "", time_unit: "us" }),
 *   JSON.stringify(["thread", 0, "rank0/local:write", "rank0"]),
 *   JSON.stringify(["file", 0, "/mnt/nvme/r0/params"]),
 *   JSON.stringify(["write", 0, 0, 120, 0, 0, 1048576, 1048576]),
 *   JSON.stringify(["end", 3, 120, []]),
 * ];
 * console.assert(lines.length === 5);
 * ```
 *
 * @module
 */

/** The schema name every trace's header carries. */
export const TRACE_SCHEMA = "tierbench/trace@1";

/** The `$id` of schemas/trace.schema.json, written as `"$schema"` into every header. */
export const TRACE_SCHEMA_ID = "https://tierbench.dev/schemas/trace-1.json";

/**
 * A whole number (µs, bytes, an id or a result).
 *
 * @asType integer
 */
export type Int = number;

/** What a trace was made from. */
export interface TraceSource {
  /**
   * `strace`: imported from an strace log (`trace import strace`);
   * `record`: recorded by `trace record`; `fio-iolog`: imported from a fio
   * iolog; `generator`: a workload generator's op stream.
   */
  kind: "strace" | "record" | "fio-iolog" | "generator";
  /** The file it was imported from. */
  file?: string;
  /** `trace record`: the command that ran. */
  command?: string[];
  /** Only files under this path prefix were kept (`--only`). */
  only?: string;
  /** The program that made it and its version, e.g. `tierbench 0.1.0`, `strace 6.1`. */
  tool?: string;
}

/** Line 1 of a trace. */
export interface TraceHeader {
  /** The format's JSON Schema, {@linkcode TRACE_SCHEMA_ID}. */
  $schema?: typeof TRACE_SCHEMA_ID;
  schema: typeof TRACE_SCHEMA;
  source: TraceSource;
  /**
   * The wall-clock time `t` = 0 stands for, as the source gave it
   * (`18:46:48.268273` from strace -tt, an ISO date from `trace record`),
   * or "" when it has none.
   */
  origin: string;
  /** Unit of every `t` and `dur`: microseconds. */
  time_unit: "us";
  /**
   * What a reader should know about the recording: I/O it cannot show (a
   * process that set up an io_uring ring), calls left out, guesses made.
   */
  notes?: string[];
}

/** Declares file `id`: a path as the process named it (absolute, or as given). */
export type FileRecord = [kind: "file", id: Int, path: string];

/**
 * Declares thread `id`: its name (the thread id strace printed, or a
 * generator's `rank0/local:read`) and the process or rank it belongs to.
 */
export type ThreadRecord = [kind: "thread", id: Int, name: string, process: string];

/**
 * A phase starts: from a marker the process wrote (`TBMARK STEP 1 forward`:
 * name `STEP 1 forward`, marker the whole text), or from a generator's phase
 * (marker "").
 */
export type PhaseRecord = [kind: "phase", t: Int, name: string, marker: string];

/** An open (open, openat, creat): its flags as strace spells them (`O_RDONLY|O_DIRECT`). */
export type OpenRecord = [
  kind: "open",
  t: Int,
  thread: Int,
  dur: Int,
  file: Int,
  flags: string,
  res: Int,
];

/** A close of a descriptor open on `file`. */
export type CloseRecord = [
  kind: "close",
  t: Int,
  thread: Int,
  dur: Int,
  file: Int,
  res: Int,
];

/**
 * A synchronous read or write (pread64, pwrite64, read, write, preadv,
 * pwritev, readv, writev): `length` bytes asked for at `offset` (for read and
 * write, the descriptor's position as tracked), `res` bytes moved.
 */
export type IoRecord = [
  kind: "read" | "write",
  t: Int,
  thread: Int,
  dur: Int,
  file: Int,
  offset: Int,
  length: Int,
  res: Int,
];

/** fsync or fdatasync. */
export type SyncRecord = [
  kind: "fsync" | "fdatasync",
  t: Int,
  thread: Int,
  dur: Int,
  file: Int,
  res: Int,
];

/** ftruncate (or truncate) to `length`. */
export type TruncateRecord = [
  kind: "ftruncate",
  t: Int,
  thread: Int,
  dur: Int,
  file: Int,
  length: Int,
  res: Int,
];

/** fallocate with its mode. */
export type FallocateRecord = [
  kind: "fallocate",
  t: Int,
  thread: Int,
  dur: Int,
  file: Int,
  mode: Int,
  offset: Int,
  length: Int,
  res: Int,
];

/** unlink, unlinkat or mkdir of `file`. */
export type PathRecord = [
  kind: "unlink" | "mkdir",
  t: Int,
  thread: Int,
  dur: Int,
  file: Int,
  res: Int,
];

/** rename of `file` to `to`. */
export type RenameRecord = [
  kind: "rename",
  t: Int,
  thread: Int,
  dur: Int,
  file: Int,
  to: Int,
  res: Int,
];

/** io_setup: context `ctx` (numbered in the trace) of `nr` events. */
export type AioSetupRecord = [
  kind: "io_setup",
  t: Int,
  thread: Int,
  dur: Int,
  ctx: Int,
  nr: Int,
  res: Int,
];

/** io_destroy of context `ctx`. */
export type AioDestroyRecord = [
  kind: "io_destroy",
  t: Int,
  thread: Int,
  dur: Int,
  ctx: Int,
  res: Int,
];

/** One iocb of an io_submit: what it asks, on which file, where and how much. */
export type Iocb = [
  op: "read" | "write" | "fsync" | "fdatasync",
  file: Int,
  offset: Int,
  length: Int,
];

/**
 * io_submit of `iocbs` to context `ctx`: `res` of them taken (or `-errno`).
 * `asked` is how many the call passed: more than `iocbs` holds when strace
 * cut the array short, or when some were on files the trace left out.
 */
export type SubmitRecord = [
  kind: "submit",
  t: Int,
  thread: Int,
  dur: Int,
  ctx: Int,
  asked: Int,
  res: Int,
  iocbs: Iocb[],
];

/**
 * io_getevents or io_pgetevents on context `ctx`, waiting for at least
 * `min` of at most `max` completions: `res` events (or `-errno`), and each
 * event's result (bytes, or `-errno` for a failed I/O).
 */
export type ReapRecord = [
  kind: "reap",
  t: Int,
  thread: Int,
  dur: Int,
  ctx: Int,
  min: Int,
  max: Int,
  res: Int,
  results: Int[],
];

/**
 * io_uring_setup: a ring of `entries`. Its I/O goes through shared memory,
 * which strace cannot see; the trace says so in its notes.
 */
export type UringSetupRecord = [
  kind: "io_uring_setup",
  t: Int,
  thread: Int,
  dur: Int,
  entries: Int,
  res: Int,
];

/**
 * The last line: how many records came before it (header excluded), the
 * last time, and what was learnt only at the end (notes as the header's).
 */
export type EndRecord = [kind: "end", records: Int, t: Int, notes: string[]];

/** Every record a trace may hold after its header. */
export type TraceRecord =
  | FileRecord
  | ThreadRecord
  | PhaseRecord
  | OpenRecord
  | CloseRecord
  | IoRecord
  | SyncRecord
  | TruncateRecord
  | FallocateRecord
  | PathRecord
  | RenameRecord
  | AioSetupRecord
  | AioDestroyRecord
  | SubmitRecord
  | ReapRecord
  | UringSetupRecord
  | EndRecord;

/** One line of a trace: the header (line 1) or a record. */
export type TraceLine = TraceHeader | TraceRecord;

/** The number of elements of each record kind. */
export const RECORD_ARITY: Readonly<Record<TraceRecord[0], number>> = {
  file: 3,
  thread: 4,
  phase: 4,
  open: 7,
  close: 6,
  read: 8,
  write: 8,
  fsync: 6,
  fdatasync: 6,
  ftruncate: 7,
  fallocate: 9,
  unlink: 6,
  mkdir: 6,
  rename: 7,
  io_setup: 7,
  io_destroy: 6,
  submit: 8,
  reap: 9,
  io_uring_setup: 6,
  end: 4,
};
