/**
 * A trace thread's ops as the replay runs them: fixed records of
 * {@linkcode REC} numbers (a `Float64Array`), made once from the trace by
 * bench/trace_replay.ts and read back by the replay engine
 * (engines/trace_replay.ts), so the hot loop parses nothing.
 *
 * ```
 * [0] code   [1] t (µs, as recorded)   [2] dur (µs, -1 unknown)
 * [3] a      [4] b      [5] c      [6] d      [7] phase index
 *
 * READ, WRITE          a file   b offset   c length   d 1 = O_DIRECT
 * FSYNC, FDATASYNC     a file
 * OPEN                 a file              d 1 = O_DIRECT, 2 = O_CREAT, 4 = O_TRUNC
 * CLOSE, UNLINK, MKDIR a file
 * FTRUNCATE            a file   b length
 * FALLOCATE            a file   b offset   c length   d mode
 * RENAME               a file   b to (a file)
 * SETUP, DESTROY       a ctx
 * SUBMIT               a ctx    b n: the n IOCB records that follow
 * IOCB                 a file   b offset   c length   d op (READ, WRITE, FSYNC, FDATASYNC) + 16 × O_DIRECT
 * REAP                 a ctx    b completions to wait for
 * WAIT                 a thread b ops: wait until that thread has done as many (no op itself)
 * ```
 *
 * @module
 */

/** Numbers per record. */
export const REC = 8;

/** Op codes. */
export const OP = {
  READ: 1,
  WRITE: 2,
  FSYNC: 3,
  FDATASYNC: 4,
  OPEN: 5,
  CLOSE: 6,
  FTRUNCATE: 7,
  FALLOCATE: 8,
  UNLINK: 9,
  MKDIR: 10,
  RENAME: 11,
  SETUP: 12,
  DESTROY: 13,
  SUBMIT: 14,
  IOCB: 15,
  REAP: 16,
  WAIT: 17,
} as const;

/** OPEN's `d` bits, and IOCB's O_DIRECT mark. */
export const OPEN_DIRECT = 1, OPEN_CREAT = 2, OPEN_TRUNC = 4, IOCB_DIRECT = 16;

/** Names of the op codes, for timelines and messages. */
export const OP_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(OP).map(([k, v]) => [v, k.toLowerCase()]),
);

/** One context of a thread: requests in flight at most and the largest request. */
export interface ReplayContext {
  readonly depth: number;
  readonly slotBytes: number;
}

/** What the replay engine of one thread is told before it starts. */
export interface ThreadReplayPlan {
  /** The thread's name in the trace. */
  readonly thread: string;
  /** Its number among the replay's threads: where it says how many ops it has done (CTRL.DONE). */
  readonly index: number;
  /** Whether another thread waits on it (WAIT), so it says how many ops it has done. */
  readonly waitedOn: boolean;
  /** Every file of the replay, by index: its path on the tier. */
  readonly files: readonly string[];
  /** The tier (index in the replay's maps) each file is on. */
  readonly fileTier: readonly number[];
  readonly tiers: number;
  readonly phases: number;
  /** This thread's contexts, by the trace's number. */
  readonly contexts: Readonly<Record<number, ReplayContext>>;
  /** The largest synchronous request, bytes. */
  readonly syncBytes: number;
  /** `1x` keeps the recorded think times, `max` removes them. */
  readonly speed: "max" | "1x";
  /** --verify: writes carry a pattern fixed by file and offset, reads are checked against it. */
  readonly verify: boolean;
  /** Spans kept for the timeline, at most. */
  readonly timelineCap: number;
}

/**
 * Where a replay's control words are in its shared Int32Array: stop, go,
 * and from DONE on, per thread (by its plan's `index`), the ops it has done.
 */
export const CTRL = { STOP: 0, GO: 1, DONE: 2 } as const;

/**
 * Per thread in the shared Float64Array: ops done, bytes read and written,
 * and when the call it is blocked in began (0: none), on which file, where.
 */
export const PROGRESS = {
  OPS: 0,
  READ: 1,
  WRITE: 2,
  BUSY_SINCE: 3,
  BUSY_FILE: 4,
  BUSY_OFFSET: 5,
} as const;
/** Numbers per thread in the progress array. */
export const PROGRESS_SLOTS = 6;
