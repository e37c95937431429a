/**
 * `tierbench bench`: the node profile. A short fixed matrix over the local
 * tiers, the same patterns on each, so two nodes compare like for like.
 *
 * @module
 */

import { type JobOptions, parseJobOptions, type RawJobOptions } from "./config.ts";

/** Options of the profile. */
export interface ProfileOptions {
  /** tmpfs directory for the memory tier; undefined to skip it. */
  readonly memoryDir: string | undefined;
  /** Directory on the disk for the file tier; undefined to skip it. */
  readonly fileDir: string | undefined;
  readonly runtime: string;
  readonly ramp: string;
  readonly size: string;
}

/** The patterns of the profile: fio's names, one engine each. */
export const PROFILE_PATTERNS: readonly RawJobOptions[] = [
  { rw: "read", bs: "1m", iodepth: "1", engine: "psync" },
  { rw: "read", bs: "1m", iodepth: "8", engine: "libaio" },
  { rw: "write", bs: "1m", iodepth: "1", engine: "psync" },
  { rw: "write", bs: "1m", iodepth: "8", engine: "libaio" },
  { rw: "randread", bs: "4k", iodepth: "1", engine: "psync" },
  { rw: "randread", bs: "4k", iodepth: "32", engine: "libaio" },
];

/**
 * The jobs of a profile: the null tier once (the harness ceiling), then every
 * pattern on memory and on file (O_DIRECT).
 *
 * @example
 * ```ts
 * import { profileJobs } from "./profile.ts";
 * const jobs = profileJobs({ memoryDir: "/dev/shm", fileDir: ".", runtime: "3", ramp: "1", size: "256m" });
 * console.assert(jobs.length === 13);
 * ```
 */
export function profileJobs(o: ProfileOptions): JobOptions[] {
  const common = { runtime: o.runtime, ramp: o.ramp, size: o.size };
  const jobs: JobOptions[] = [
    parseJobOptions({
      ...common,
      tier: "null:",
      rw: "randread",
      bs: "4k",
      name: "null-randread-4k-d1",
    }),
  ];
  const tiers: [string, boolean][] = [];
  if (o.memoryDir !== undefined) tiers.push([`memory:${o.memoryDir}`, false]);
  if (o.fileDir !== undefined) tiers.push([`file:${o.fileDir}`, true]);
  for (const [tier, direct] of tiers) {
    for (const p of PROFILE_PATTERNS) {
      const kind = tier.slice(0, tier.indexOf(":"));
      jobs.push(parseJobOptions({
        ...common,
        ...p,
        tier,
        direct,
        name: `${kind}-${p.rw}-${p.bs}-d${p.iodepth}`,
      }));
    }
  }
  return jobs;
}
