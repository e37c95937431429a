/**
 * Whether the files a session lays out fit where they go, asked of the file
 * system before any I/O: a run that cannot fit is refused in one line naming
 * `--size` (exit 2) instead of failing at posix_fallocate, or halfway.
 *
 * @module
 */

import { formatTierSpec, type JobOptions, jobReads } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { freeBytes } from "../core/libc.ts";
import { formatBytes } from "../core/units.ts";

/**
 * The most bytes of files a session holds on each file-backed tier at once,
 * by tier (`file:/data`). `groups` run one after another, the jobs of a
 * group at once. Read files are kept until the session ends — once per size
 * on a tier the jobs share (`shared`), else once per job (each job its own
 * scratch directory, as a job file's jobs have); a write run's files go when
 * it ends. Jobs that read an existing file (`--filename`) lay out nothing.
 *
 * @example
 * ```ts
 * import { parseJobOptions } from "../core/config.ts";
 * import { spaceNeeded } from "./space.ts";
 * const read = parseJobOptions({ tier: "file:/data", rw: "read", size: "1g", numjobs: "2" });
 * const write = parseJobOptions({ tier: "file:/data", rw: "write", size: "4g" });
 * console.assert(spaceNeeded([[read], [write], [read]]).get("file:/data") === 6 * 2 ** 30);
 * console.assert(spaceNeeded([[read, write]], false).get("file:/data") === 6 * 2 ** 30);
 * ```
 */
export function spaceNeeded(
  groups: readonly (readonly JobOptions[])[],
  shared = true,
): Map<string, number> {
  const kept = new Map<string, Map<string, number>>();
  const need = new Map<string, number>();
  let index = 0;
  for (const group of groups) {
    const writes = new Map<string, number>();
    for (const job of group) {
      const i = index++;
      const kind = job.tier.kind;
      if ((kind !== "memory" && kind !== "file" && kind !== "pfs") || job.filename) continue;
      const tier = formatTierSpec(job.tier);
      const bytes = job.numjobs * job.size;
      if (jobReads(job)) {
        const layouts = kept.get(tier) ?? new Map<string, number>();
        const key = shared ? `${job.size} ${job.nrfiles} ${job.fileLayout}` : String(i);
        layouts.set(key, Math.max(layouts.get(key) ?? 0, bytes));
        kept.set(tier, layouts);
      }
      if (job.rw !== "read" && job.rw !== "randread") {
        writes.set(tier, (writes.get(tier) ?? 0) + bytes);
      }
    }
    for (const tier of new Set([...kept.keys(), ...writes.keys()])) {
      const reads = [...(kept.get(tier)?.values() ?? [])].reduce((a, b) => a + b, 0);
      need.set(tier, Math.max(need.get(tier) ?? 0, reads + (writes.get(tier) ?? 0)));
    }
  }
  return need;
}

/**
 * Refuses, before any I/O, jobs whose files would not fit in the free space
 * of their tier's file system (statvfs: the blocks an unprivileged process
 * may still allocate); `groups` and `shared` as {@linkcode spaceNeeded}
 * takes them. A file system that keeps no count (ramfs), or a directory that
 * cannot be asked, is left to the tier's own checks.
 *
 * @throws {ConfigError} naming `--size`, the bytes needed and free, and the tier.
 */
export function checkSpace(groups: readonly (readonly JobOptions[])[], shared = true): void {
  for (const [tier, need] of spaceNeeded(groups, shared)) {
    const free = freeBytes(tier.slice(tier.indexOf(":") + 1));
    if (free === undefined || need <= free) continue;
    throw new ConfigError(
      "size",
      `the files need ${formatBytes(need)} on ${tier} (--numjobs × --size, read files kept ` +
        `between runs) and its file system has ${formatBytes(free)} free`,
      "a smaller --size or --numjobs, or free space there",
    );
  }
}
