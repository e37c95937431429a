/**
 * The tier interface: where a run's I/O goes, and the life around it.
 *
 * A tier lives on the main thread: it checks its path, makes and marks a
 * scratch directory, names and prepares each job's file, describes itself for
 * the results, and removes everything it made when disposed. The I/O loop
 * itself runs in the job Workers through an engine (engines/), because a
 * per-op call across threads would measure the harness, not the storage.
 *
 * @module
 */

import type { Engine, JobOptions, TierKind, TierSpec } from "../core/config.ts";
import type { PathFacts } from "../core/host.ts";
import type { JobTarget } from "../core/job_protocol.ts";

/** Whether O_DIRECT means anything on a tier. */
export type DirectSupport =
  /** The file system bypasses the page cache for O_DIRECT. */
  | "honoured"
  /** Accepted and ignored (tmpfs): data lives in memory either way. */
  | "ignored"
  /** Passed to a network file system client, which may or may not honour it. */
  | "client-dependent"
  /** The tier does no I/O. */
  | "not-applicable";

/** What a tier can do, stated in the results. */
export interface TierCapabilities {
  readonly direct: DirectSupport;
  /** Required alignment of offsets and sizes under O_DIRECT, in bytes. */
  readonly alignment: number;
  /** Engines that can drive this tier. */
  readonly engines: readonly (Engine | "noop" | "s3")[];
}

export type { JobTarget, S3Target } from "../core/job_protocol.ts";

/** A tier as the results describe it. */
export interface TierFacts {
  kind: TierKind;
  path: string;
  scratch_dir: string;
  direct: DirectSupport;
  alignment: number;
  note?: string;
  fs?: PathFacts;
  /** s3 only: where the objects went (never a credential). */
  s3?: { endpoint: string; region: string; bucket: string; scratch_prefix: string };
}

/** How a tier is opened besides where it is. */
export interface TierOptions {
  /**
   * How long one request to the tier may take (`--timeout`, default 30 s),
   * its own clean-up included: what it cannot remove in that time is named
   * with the `tierbench clean` command that removes it, and left.
   */
  readonly timeoutMs?: number;
}

/** A storage tier under test. Dispose it to remove its scratch directory. */
export interface Tier extends AsyncDisposable {
  readonly spec: TierSpec;
  readonly capabilities: TierCapabilities;
  /** Checks the path and makes the scratch directory. */
  setup(): Promise<void>;
  /** Checks a job against this tier and names each job's target, ready to be laid out. */
  prepare(job: JobOptions): Promise<JobTarget[]>;
  /** Notes that a run laid its files out, so later read runs can reuse them. */
  markLaidOut(files: readonly JobTarget[]): void;
  /** Removes a run's files that are not kept for reuse (written ones). */
  release(files: readonly JobTarget[]): Promise<void>;
  /** For the results. */
  describe(): TierFacts;
  /**
   * Gives the tier up after a request to it timed out: nothing of it is
   * touched again (that could hang too); disposing names what is left and
   * the `tierbench clean` command that removes it.
   */
  abandon?(reason: string): void;
  /**
   * Why the run's scratch area is gone (deleted by something else while the
   * run held its files open), or undefined while it is there: a run on
   * unlinked files measured no longer the storage it was pointed at.
   */
  vanished?(): string | undefined;
}
