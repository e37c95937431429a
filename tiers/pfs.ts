/**
 * The pfs tier: a directory on a shared (parallel or network) file system
 * mount, such as CephFS, Lustre, GPFS or NFS. Like the file tier, with what
 * such mounts need: O_DIRECT off unless asked (many clients mishandle it),
 * files striped round-robin (`--nrfiles`) or one shared file with a region
 * per job (`--file-layout shared`), and an fsync of every file when a job ends
 * (fio's end_fsync, on by default here), stated in the results.
 *
 * @module
 */

import type { PathFacts } from "../core/host.ts";
import { BUFFER_ALIGNMENT, FileBackedTier } from "./file_backed.ts";
import type { TierCapabilities, TierFacts } from "./types.ts";

/**
 * A shared file system mount.
 *
 * @example
 * ```ts
 * import { PfsTier } from "./pfs.ts";
 * await using tier = new PfsTier({ kind: "pfs", path: Deno.cwd() });
 * await tier.setup();
 * console.assert(tier.describe().direct === "client-dependent");
 * ```
 */
export class PfsTier extends FileBackedTier {
  readonly capabilities: TierCapabilities = {
    direct: "client-dependent",
    alignment: BUFFER_ALIGNMENT,
    engines: ["psync", "libaio", "io_uring"],
  };

  protected check(_facts: PathFacts): void {
    // Any mounted directory will do; its file system type goes into the results.
  }

  override describe(): TierFacts {
    return {
      ...super.describe(),
      note: "shared mount: O_DIRECT only with --direct, and then up to the client; " +
        "with end_fsync each job fsyncs its files after its last I/O " +
        "(inside the runtime of size-based runs, reported as fsync_ms for time-based runs)",
    };
  }
}
