/**
 * A trace's records as the API hands them out: one object per event, files
 * by path and threads by name (the numbers of the format resolved), so that
 * readers, writers and generators deal in names.
 *
 * @module
 */

/** What every event that a thread did carries. */
export interface ThreadEvent {
  /** Microseconds from the trace's origin. */
  t: number;
  /** The thread's name (see {@linkcode TraceThread}). */
  thread: string;
  /** How long the call took, µs (-1 when the source did not say). */
  dur: number;
}

/** A phase begins. */
export interface PhaseEvent {
  kind: "phase";
  t: number;
  name: string;
  /** The marker text the process wrote, or "" for a phase from elsewhere. */
  marker: string;
}

/** An open of `file`. */
export interface OpenEvent extends ThreadEvent {
  kind: "open";
  file: string;
  /** As strace spells them: `O_WRONLY|O_CREAT|O_DIRECT`. */
  flags: string;
  /** The descriptor, or -errno. */
  res: number;
}

/** A close of a descriptor open on `file`. */
export interface CloseEvent extends ThreadEvent {
  kind: "close";
  file: string;
  res: number;
}

/** A synchronous read or write. */
export interface IoEvent extends ThreadEvent {
  kind: "read" | "write";
  file: string;
  offset: number;
  /** Bytes asked for. */
  length: number;
  /** Bytes moved, or -errno. */
  res: number;
}

/** fsync or fdatasync. */
export interface SyncEvent extends ThreadEvent {
  kind: "fsync" | "fdatasync";
  file: string;
  res: number;
}

/** ftruncate to `length`. */
export interface TruncateEvent extends ThreadEvent {
  kind: "ftruncate";
  file: string;
  length: number;
  res: number;
}

/** fallocate. */
export interface FallocateEvent extends ThreadEvent {
  kind: "fallocate";
  file: string;
  mode: number;
  offset: number;
  length: number;
  res: number;
}

/** unlink or mkdir of `file`. */
export interface PathEvent extends ThreadEvent {
  kind: "unlink" | "mkdir";
  file: string;
  res: number;
}

/** rename of `file` to `to`. */
export interface RenameEvent extends ThreadEvent {
  kind: "rename";
  file: string;
  to: string;
  res: number;
}

/** io_setup of context `ctx`. */
export interface AioSetupEvent extends ThreadEvent {
  kind: "io_setup";
  ctx: number;
  nr: number;
  res: number;
}

/** io_destroy of context `ctx`. */
export interface AioDestroyEvent extends ThreadEvent {
  kind: "io_destroy";
  ctx: number;
  res: number;
}

/** One iocb of a submission. */
export interface TraceIocb {
  op: "read" | "write" | "fsync" | "fdatasync";
  file: string;
  offset: number;
  length: number;
}

/** io_submit of `iocbs` (of `asked`) to context `ctx`; `res` taken, or -errno. */
export interface SubmitEvent extends ThreadEvent {
  kind: "submit";
  ctx: number;
  asked: number;
  res: number;
  iocbs: TraceIocb[];
}

/** io_getevents / io_pgetevents: `res` events (or -errno), each one's result. */
export interface ReapEvent extends ThreadEvent {
  kind: "reap";
  ctx: number;
  min: number;
  max: number;
  res: number;
  results: number[];
}

/** io_uring_setup: I/O the trace cannot show follows. */
export interface UringSetupEvent extends ThreadEvent {
  kind: "io_uring_setup";
  entries: number;
  res: number;
}

/** Any event of a trace. */
export type TraceEvent =
  | PhaseEvent
  | OpenEvent
  | CloseEvent
  | IoEvent
  | SyncEvent
  | TruncateEvent
  | FallocateEvent
  | PathEvent
  | RenameEvent
  | AioSetupEvent
  | AioDestroyEvent
  | SubmitEvent
  | ReapEvent
  | UringSetupEvent;

/** Events a thread did (every kind but `phase`). */
export type ThreadTraceEvent = Exclude<TraceEvent, PhaseEvent>;

/** A thread of a trace: its name and the process (or rank) it belongs to. */
export interface TraceThread {
  /** strace's thread id (`28784`), or a generator's stream (`rank0/local:read`). */
  readonly name: string;
  /** Its process's id, or a rank (`rank0`). */
  readonly process: string;
}

/** The kinds of event that move bytes of a file, synchronously or through aio. */
export function isDataEvent(e: TraceEvent): e is IoEvent {
  return e.kind === "read" || e.kind === "write";
}
