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

import type { Engine, RwMode, TierKind } from "./config.ts";
import type { EncodedLatency } from "./recorder.ts";

/** Everything one job Worker needs, structured-clone friendly. */
export interface JobPlan {
  readonly job: number;
  readonly tier: TierKind;
  /** The job's file ("" for the null tier). */
  readonly path: string;
  readonly engine: Engine | "noop";
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
  /** How the file is made ready: write it whole, reserve its blocks, or use as is. */
  readonly layout: "prefill" | "fallocate" | "none";
}

/** Indices in the Int32 control array. */
export const CTL = {
  /** 0 while jobs wait at the start barrier, 1 once they may go. */
  GO: 0,
  /** Non-zero once jobs must stop (end of run, error, or signal). */
  STOP: 1,
  /** 0 until the first job finishes, then that job's index + 1. */
  FIRST_DONE: 2,
  LENGTH: 4,
} as const;

/** Indices of run-wide values in the Float64 array. */
export const RUN = {
  /** Absolute ms (timeOrigin + now) when measurement starts, after the ramp. */
  MEASURE_START: 0,
  /** Absolute ms when a time-based run ends; Infinity otherwise. */
  MEASURE_END: 1,
  LENGTH: 4,
} as const;

/** Per-job slots in the Float64 array, at RUN.LENGTH + job × JOB.STRIDE. */
export const JOB = {
  READ_BYTES: 0,
  WRITE_BYTES: 1,
  READ_OPS: 2,
  WRITE_OPS: 3,
  /** Absolute ms at which the job's last measured I/O completed. */
  END: 4,
  /** Counters at the moment this job first saw that some job had finished. */
  FD_READ_BYTES: 5,
  FD_WRITE_BYTES: 6,
  FD_READ_OPS: 7,
  FD_WRITE_OPS: 8,
  /** 1 once the FD_* snapshot has been taken. */
  FD_TAKEN: 9,
  STRIDE: 10,
} as const;

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
  | { readonly kind: "other"; readonly name: string; readonly message: string };

/** Worker → main messages. */
export type JobMessage =
  | { readonly type: "ready"; readonly job: number }
  | {
    readonly type: "result";
    readonly job: number;
    readonly read: EncodedLatency;
    readonly write: EncodedLatency;
    readonly failure?: JobFailure;
  };

/** Main → Worker: the one message that starts a job. */
export interface JobStart {
  readonly plan: JobPlan;
  readonly ctl: Int32Array<SharedArrayBuffer>;
  readonly f64: Float64Array<SharedArrayBuffer>;
}
