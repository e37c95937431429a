/**
 * What a job from a fio job file adds to a {@linkcode JobOptions}: its
 * files as fio names and lays them out, each numjobs clone's I/O pattern,
 * and the fio options that change how it runs (buffer contents, syncs,
 * errors it goes on after, logs, minimum rates, flow, think time). Resolved
 * from the file by core/jobfile_resolve.ts, read by the tier (layout), the
 * runner and the job's engine.
 *
 * @module
 */

import type { IoPattern } from "./io_pattern.ts";

/** How a write job's new file is allocated (fio's fallocate). */
export type FallocateMode = "none" | "native" | "posix" | "keep" | "truncate";

/**
 * A job file's job as process `rank` runs it across processes: with
 * unique_filename (fio's default), each file's name starts `rank<R>.`, as a
 * fio client's files start with its address, so processes on one file
 * system do not share files the job did not mean to share.
 */
export function filesOfRank<J extends { readonly fio?: FioJobExtras }>(job: J, rank: number): J {
  const fio = job.fio;
  if (!fio || !fio.uniqueFilename) return job;
  const named = (p: string) => {
    const at = p.lastIndexOf("/") + 1;
    return `${p.slice(0, at)}rank${rank}.${p.slice(at)}`;
  };
  return {
    ...job,
    fio: {
      ...fio,
      clones: fio.clones.map((c) => ({
        pattern: {
          ...c.pattern,
          files: c.pattern.files.map((f) => ({ ...f, name: named(f.name) })),
        },
        files: c.files.map((f) => ({ ...f, path: named(f.path), name: named(f.name) })),
      })),
    },
  };
}

/** One file of a job, as fio sets it up. */
export interface FioFile {
  /** The path I/O goes to (absolute). */
  readonly path: string;
  /** The name as fio spells it (relative names stay relative), for messages and seeds. */
  readonly name: string;
  /** The size it must have (fio's file_offset + io_size). */
  readonly size: number;
}

/** How a clone's files are made ready before its clock starts. */
export interface FioLayout {
  /** Jobs that read lay files out with data; write jobs only allocate (unless overwrite). */
  readonly writeData: boolean;
  readonly fallocate: FallocateMode;
  /** fsync a file after laying it out (create_fsync, default on). */
  readonly createFsync: boolean;
  /** 0: a missing file is an error (allow_file_create=0). */
  readonly allowCreate: boolean;
  /** Drop the files' page cache before the job (invalidate, default on). */
  readonly invalidate: boolean;
  /** Read the files once before the clock (pre_read). */
  readonly preRead: boolean;
  /** posix_fadvise advice: "sequential", "random", "none" (fadvise_hint). */
  readonly fadvise: "sequential" | "random" | "none";
  /** Lay the files out and do no I/O (create_only). */
  readonly createOnly: boolean;
  /** Remove the files when the job ends (unlink). */
  readonly unlink: boolean;
}

/** The contents of write buffers (fio's buffer options). */
export interface FioData {
  /** buffer_pattern's bytes, repeated. */
  readonly pattern?: readonly number[];
  readonly zero: boolean;
  /** New contents before every write. */
  readonly refill: boolean;
  /** A light change before every write (fio's default). */
  readonly scramble: boolean;
  /** buffer_compress_percentage (0: not compressible). */
  readonly compressPercentage: number;
  readonly compressChunk: number;
  /** dedupe_percentage: writes that repeat an earlier block's contents. */
  readonly dedupePercentage: number;
  readonly dedupeMode: "repeat" | "working_set";
  readonly dedupeWorkingSetPercentage: number;
  readonly dedupeGlobal: boolean;
}

/** Errors a job counts and goes on after (continue_on_error, ignore_error). */
export interface FioErrors {
  /** Which kinds go on: read, write (and io: both). */
  readonly read: boolean;
  readonly write: boolean;
  /** The errnos each kind goes on after: ignore_error's, else fio's EIO and EILSEQ. */
  readonly ignoreRead: readonly number[];
  readonly ignoreWrite: readonly number[];
}

/** fio's logs a job writes (write_bw_log, write_iops_log, write_lat_log). */
export interface FioLogs {
  /** Name prefixes: `<prefix>_bw.<n>.log`; undefined: that log is not written. */
  readonly bw?: string;
  readonly iops?: string;
  readonly lat?: string;
  /** 0: an entry per I/O; N: the mean (or max) over N ms. */
  readonly avgMsec: number;
  /** false: one log per job instead of one per clone (per_job_logs=0). */
  readonly perJob: boolean;
  /** Each entry carries its offset (log_offset). */
  readonly offset: boolean;
  /** Averaged entries record the window's maximum (log_max_value). */
  readonly max: boolean;
  /** fio's thread_number of the job's first clone (log names count from it). */
  readonly threadNumber: number;
}

/** The smallest bandwidth or IOPS a job may fall to over a cycle (rate_min, rate_iops_min). */
export interface FioRateMin {
  /** Bytes/s per direction (read, write); 0: none. */
  readonly bytes: readonly [number, number];
  /** IOPS per direction; 0: none. */
  readonly iops: readonly [number, number];
  /** rate_cycle, ms. */
  readonly cycleMs: number;
}

/** fio's think time. */
export interface FioThinktime {
  /** Pause, µs. */
  readonly us: number;
  /** Of which spinning, µs. */
  readonly spinUs: number;
  /** I/Os between pauses. */
  readonly blocks: number;
  /** Count issued (issue) or completed (complete) I/Os. */
  readonly count: "issue" | "complete";
  /** The rate's schedule does not move for the pause. */
  readonly ignoreForRate: boolean;
}

/** Token-based flow between jobs (flow, flow_id, flow_sleep). */
export interface FioFlow {
  readonly id: number;
  readonly weight: number;
  readonly sleepUs: number;
}

/** One numjobs clone of a job. */
export interface FioClone {
  readonly pattern: IoPattern;
  readonly files: readonly FioFile[];
}

/** A fio job's additions to its JobOptions. */
export interface FioJobExtras {
  /** The options in force for the job as written ([global]'s, then its own), by fio's names. */
  readonly options: Readonly<Record<string, string>>;
  /** unique_filename: across processes, each process's files carry its rank. */
  readonly uniqueFilename: boolean;
  /** The job's clones, in fio's order (the first is the job itself). */
  readonly clones: readonly FioClone[];
  readonly layout: FioLayout;
  /** Open files O_SYNC or O_DSYNC (fio's sync). */
  readonly openSync: "none" | "sync" | "dsync";
  /** fsync each file as the job closes it (fsync_on_close). */
  readonly fsyncOnClose: boolean;
  /** A size-based job ends after this long (runtime without time_based), ms. */
  readonly runtimeCapMs?: number;
  readonly data: FioData;
  readonly errors?: FioErrors;
  readonly logs?: FioLogs;
  readonly rateMin?: FioRateMin;
  readonly flow?: FioFlow;
  readonly thinktime?: FioThinktime;
  /**
   * The files were made ready before the run (fio lays every job's files
   * out, in the file's order, before any job starts): use them as they are.
   */
  readonly laidOut?: boolean;
}
