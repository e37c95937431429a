/**
 * What the runner (main thread) and a job Worker share: the job plan, the
 * messages, and the layout of the shared counters.
 *
 * Counters live in SharedArrayBuffers so the main thread can draw progress
 * and sample the bandwidth time series without any per-op messages; the
 * memory they take is fixed by the number of jobs, not by the bytes moved.
 *
 * @module
 */

import type { Engine, IoUringOptions, RwMode, TierKind } from "./config.ts";
import type { EncodedDirection } from "./latency_buckets.ts";
import type { IntervalSnapshots } from "./interval_log.ts";
import type { JobSchedule, RatePlan } from "./rate.ts";
import type { VerifyPlan } from "./verify.ts";
import type { IoPattern } from "./io_pattern.ts";
import type { FioData, FioErrors, FioLayout, FioThinktime } from "./fio_job.ts";
import type { CpuTimes } from "./libc.ts";

/** Where the s3 engine of one job puts and gets its objects. */
export interface S3Target {
  readonly endpoint: string | undefined;
  readonly region: string;
  readonly bucket: string;
  /**
   * Key prefix of the objects this job reads (`obj<k>`), inside the run's
   * scratch prefix (ends with "/"); laid out before the clock starts.
   */
  readonly prefix: string;
  /** Key prefix of the fresh objects this job writes (`o<n>`), ends with "/"; `""` if none. */
  readonly writePrefix: string;
  readonly objectSize: number;
  readonly partSize: number;
  readonly multipartThreshold: number;
}

/** What one job does its I/O on, as a tier prepared it. */
export interface JobTarget {
  /** The job's files; blocks go round-robin over them when several. Empty for null and s3. */
  readonly paths: readonly string[];
  /** Offset of the job's region in its file (shared-file layout); 0 otherwise. */
  readonly regionOffset: number;
  /** How the target is made ready: written whole, blocks reserved, or used as is. */
  readonly layout: "prefill" | "fallocate" | "none";
  /** For the s3 tier. */
  readonly s3?: S3Target;
  /** An existing file the user named (--filename): opened read-only, never created. */
  readonly existing?: boolean;
  /** A job file's files: how each is made ready, as fio's setup_files does. */
  readonly fio?: FioTargetLayout;
}

/** How a job file's clone makes its files ready (tiers/file_backed.ts decides, engines do it). */
export interface FioTargetLayout {
  /** The size each file must have. */
  readonly sizes: readonly number[];
  /**
   * Per file: written whole with data (fio lays out files that are read),
   * allocated only (files a write job creates), or used as they are.
   */
  readonly actions: readonly ("data" | "allocate" | "none")[];
  /** Per file: whether this clone makes it ready (a file clones share is made once). */
  readonly owner: readonly boolean[];
  /** How many clones of the run own a file: each waits for all of them before opening. */
  readonly owners: number;
  readonly layout: FioLayout;
}

/** fio's logs one clone writes, and how. */
export interface IoLogPlan {
  /** Paths of the logs to write: fio's NAME_bw.N.log and so on; absent: not written. */
  readonly bw?: string;
  readonly iops?: string;
  readonly lat?: string;
  readonly clat?: string;
  readonly slat?: string;
  /** 0: an entry per I/O; N: a mean (or max) per N ms window. */
  readonly avgMsec: number;
  readonly offset: boolean;
  readonly max: boolean;
  /** The block size averaged bandwidth entries name (fio: the job's, when fixed; else 0). */
  readonly bs: readonly [number, number];
  /** Append to the files (one log per job name, per_job_logs=0) instead of writing them anew. */
  readonly append: boolean;
}

/** Everything one job Worker needs, structured-clone friendly. */
export interface JobPlan {
  readonly job: number;
  readonly tier: TierKind;
  readonly target: JobTarget;
  readonly engine: Engine | "noop" | "s3";
  readonly direct: boolean;
  readonly rw: RwMode;
  readonly rwmixread: number;
  readonly bs: number;
  readonly size: number;
  /** Bytes to move after the ramp when not time-based; 0 when time-based. */
  readonly ioSize: number;
  readonly iodepth: number;
  readonly seed: number;
  /** Buffer alignment in bytes (the page size, enough for O_DIRECT). */
  readonly alignment: number;
  /** fsync every file when the job ends (fio's end_fsync). */
  readonly endFsync: boolean;
  /** How long one request may take (--timeout); the s3 engine enforces it per request. */
  readonly timeoutMs?: number;
  /** Verify mode (--verify): stamp blocks written, check blocks read. */
  readonly verify?: VerifyPlan;
  /** The io_uring engine's options; absent for other engines. */
  readonly ioUring?: IoUringOptions;
  /** Open-loop rate (--rate, --rate-iops): requests go at intended starts; absent: closed loop. */
  readonly rate?: RatePlan;
  /**
   * The time series' interval in ms (--log-avg-msec): the job snapshots its
   * latency histograms at each interval's end; absent: no snapshots.
   */
  readonly logAvgMsec?: number;
  /** A job file's I/O pattern for this clone (core/io_pattern.ts); absent: rw and bs. */
  readonly pattern?: IoPattern;
  /** A job file's write buffer contents. */
  readonly data?: FioData;
  /** Errors the job goes on after. */
  readonly errors?: FioErrors;
  /** Open the files O_SYNC or O_DSYNC. */
  readonly openSync?: "sync" | "dsync";
  /** fsync each file as the job closes it. */
  readonly fsyncOnClose?: boolean;
  /** fio's logs this clone writes. */
  readonly log?: IoLogPlan;
  /** Token flow: the flow's shared [I/Os, total weight], this job's weight and wait. */
  readonly flow?: {
    readonly shared: BigInt64Array<SharedArrayBuffer>;
    readonly weight: number;
    readonly sleepUs: number;
  };
  readonly thinktime?: FioThinktime;
  /** Lay the files out and do no I/O (create_only). */
  readonly createOnly?: boolean;
  /** The CPUs the job's thread is pinned to (fio's cpus_allowed); absent: not pinned. */
  readonly cpus?: readonly number[];
}

/** Indices in the Int32 control array. */
export const CTL = {
  /** 0 while jobs wait at the start barrier, 1 once they may go. */
  GO: 0,
  /** Non-zero once jobs must stop (end of run, error, or signal). */
  STOP: 1,
  /** 0 until the first job finishes, then that job's index + 1. */
  FIRST_DONE: 2,
  /** How many clones have made the job file's files they own ready (FioTargetLayout). */
  LAID_OUT: 3,
  LENGTH: 4,
} as const;

/** Indices of run-wide values in the Float64 array. */
export const RUN = {
  /**
   * monoNow() (CLOCK_MONOTONIC, one clock for every thread) at which the
   * runner opened the barrier, plus the ramp: the run's measured window
   * starts here for every job, however late its thread wakes. 0 outside a
   * run (a warm-up's or a test's runtime): the job's own wake plus the ramp.
   */
  MEASURE_START: 0,
  /** The ramp in ms. */
  RAMP_MS: 1,
  /** The measured time of a time-based run in ms; Infinity when size-based. */
  RUNTIME_MS: 2,
  LENGTH: 4,
} as const;

/** Per-job slots in the Float64 array, at RUN.LENGTH + job × JOB.STRIDE. */
export const JOB = {
  READ_BYTES: 0,
  WRITE_BYTES: 1,
  READ_OPS: 2,
  WRITE_OPS: 3,
  /** monoNow() at which the job's last measured I/O completed. */
  END: 4,
  /** Counters at the moment this job first saw that some job had finished. */
  FD_READ_BYTES: 5,
  FD_WRITE_BYTES: 6,
  FD_READ_OPS: 7,
  FD_WRITE_OPS: 8,
  /** 1 once the FD_* snapshot has been taken. */
  FD_TAKEN: 9,
  /** ms spent in the end-of-job fsync. */
  FSYNC_MS: 10,
  /** Requests retried after a transient error (network tiers). */
  RETRIES: 11,
  /**
   * monoNow() at which the request the job is blocked on began, 0 when none:
   * the runner fails a run whose request outlives --timeout, even when the
   * job's thread is stuck in a system call and cannot say so itself.
   */
  BUSY_SINCE: 12,
  /** That request's offset in its file, its file's index, and 1 for a read. */
  BUSY_OFFSET: 13,
  BUSY_FILE: 14,
  BUSY_READ: 15,
  /** Under a rate: the intended start (monoNow) of the next request not yet issued. */
  NEXT_DUE: 16,
  /** Under a rate: the sum of measured latencies (ns, from intended starts) of reads, of writes. */
  READ_LAT_SUM: 17,
  WRITE_LAT_SUM: 18,
  /** Under a rate: monoNow() when the job stopped issuing; 0 while it issues. */
  ISSUE_END: 19,
  /** I/O errors counted and gone on after (continue_on_error). */
  ERRORS: 20,
  /** RETRIES by cause: the count of RETRY_CAUSES[i] at RETRY_CAUSES_AT + i. */
  RETRY_CAUSES_AT: 21,
  STRIDE: 21 + 5,
} as const;

/**
 * Why a request was retried, as a job counts them (network tiers):
 * `throttled` (503 SlowDown, 429), `server_error` (another 5xx),
 * `connection` (the connection was refused, reset or dropped mid-body),
 * `timeout` (no progress for the idle timeout: a stalled server), `other`.
 */
export const RETRY_CAUSES = [
  "throttled",
  "server_error",
  "connection",
  "timeout",
  "other",
] as const;
/** One of {@linkcode RETRY_CAUSES}. */
export type RetryCause = typeof RETRY_CAUSES[number];

/** Index of a job's first slot in the Float64 array. */
export function jobBase(job: number): number {
  return RUN.LENGTH + job * JOB.STRIDE;
}

/** The shared arrays of one run. */
export interface SharedCounters {
  readonly ctl: Int32Array<SharedArrayBuffer>;
  readonly f64: Float64Array<SharedArrayBuffer>;
}

/** Allocates the shared arrays for `numjobs` jobs. */
export function newSharedCounters(numjobs: number): SharedCounters {
  return {
    ctl: new Int32Array(new SharedArrayBuffer(CTL.LENGTH * 4)),
    f64: new Float64Array(
      new SharedArrayBuffer((RUN.LENGTH + numjobs * JOB.STRIDE) * 8),
    ),
  };
}

/** A failure inside a job, carried across the Worker boundary. */
export type JobFailure =
  | {
    readonly kind: "io";
    readonly syscall: string;
    readonly errno: number;
    readonly code: string;
    readonly path: string;
    readonly offset?: number;
    readonly detail?: string;
  }
  | {
    readonly kind: "s3";
    readonly operation: string;
    readonly bucket: string;
    readonly key: string;
    readonly code: string;
    readonly status?: number;
    readonly attempts: number;
    /** The whole one-line message, credentials removed. */
    readonly message: string;
  }
  | {
    readonly kind: "verify";
    readonly tier: string;
    readonly key: string;
    readonly offset: number;
    readonly expected: string;
    readonly found: string;
    readonly message: string;
  }
  | { readonly kind: "other"; readonly name: string; readonly message: string };

/** Worker → main messages. */
export type JobMessage =
  | { readonly type: "ready"; readonly job: number }
  | {
    readonly type: "result";
    readonly job: number;
    /** The latency histograms of the job's reads, as HDR's counts (core/latency_buckets.ts). */
    readonly read: EncodedDirection;
    /** Those of its writes. */
    readonly write: EncodedDirection;
    /** Under a rate: how far the job kept to its schedule. */
    readonly schedule?: JobSchedule;
    readonly failure?: JobFailure;
    /** The total-latency snapshots at each logging interval's end (core/interval_log.ts). */
    readonly intervals?: IntervalSnapshots;
    /** Errors the job counted and went on after (continue_on_error), and the first. */
    readonly errors?: {
      readonly read: number;
      readonly write: number;
      readonly first: string;
      readonly firstErrno: number;
    };
    /** The job thread's CPU time over its measured window; absent when no I/O began in it. */
    readonly cpu?: CpuTimes;
  };

/** Main → Worker: the one message that starts a job. */
export interface JobStart {
  readonly plan: JobPlan;
  readonly ctl: Int32Array<SharedArrayBuffer>;
  readonly f64: Float64Array<SharedArrayBuffer>;
}
