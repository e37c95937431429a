/**
 * `tierbench bench`: the node profile. A short fixed matrix over the local
 * tiers, the same patterns on each, so two nodes compare like for like; the
 * remote tiers (a PFS mount, an S3 bucket) join when configured.
 *
 * @module
 */

import {
  type JobOptions,
  parseJobOptions,
  parseTierSpec,
  type RawJobOptions,
  type TierSpec,
} from "../core/config.ts";
import { withoutUserInfo } from "../core/secrets.ts";

/** Options of the profile. */
export interface ProfileOptions {
  /** tmpfs directory for the memory tier; undefined to skip it. */
  readonly memoryDir: string | undefined;
  /** Directory on the disk for the file tier; undefined to skip it. */
  readonly fileDir: string | undefined;
  /** Directory on a shared mount for the pfs tier; undefined to skip it. */
  readonly pfsDir?: string | undefined;
  /** `s3://BUCKET/PREFIX` for the s3 tier; undefined to skip it. */
  readonly s3?: string | undefined;
  /** S3 endpoint; undefined means from the environment. */
  readonly endpoint?: string | undefined;
  readonly runtime: string;
  /** Warm-up of each tier's first point (excluded from every figure). */
  readonly ramp: string;
  /**
   * Warm-up of each later point of a tier, which the points before it kept
   * busy (excluded too); default `ramp`.
   */
  readonly settle?: string | undefined;
  readonly size: string;
  /** Interval of each run's bandwidth time series (fio's log_avg_msec; default 1000 ms). */
  readonly logAvgMsec?: string | undefined;
  /** `--timeout` text: how long one request may take (default 30 s). */
  readonly timeout?: string | undefined;
  /**
   * `--verify`: every block stamped and checked, in every pattern where that
   * holds (the randrw points at depth 16, where a block may be read while it
   * is rewritten, run unchecked).
   */
  readonly verify?: boolean | undefined;
}

/** The patterns of the profile: fio's names, one engine each. */
export const PROFILE_PATTERNS: readonly RawJobOptions[] = [
  { rw: "read", bs: "1m", iodepth: "1", engine: "psync" },
  { rw: "read", bs: "1m", iodepth: "8", engine: "libaio" },
  { rw: "write", bs: "1m", iodepth: "1", engine: "psync" },
  { rw: "write", bs: "1m", iodepth: "8", engine: "libaio" },
  { rw: "randread", bs: "4k", iodepth: "1", engine: "psync" },
  { rw: "randread", bs: "4k", iodepth: "32", engine: "libaio" },
  // reads and writes at once, half each: what a device gives an optimizer that reads subgroup
  // i+1 while it writes i−1 (the solver's model uses it where present). 16 in flight: the
  // workloads' read stream and write stream are each 8 deep, so that many are out at once.
  { rw: "randrw", bs: "1m", iodepth: "16", engine: "libaio" },
];

/** The patterns of the s3 tier: PUT and GET of 1 MiB objects, alone and 8 deep. */
export const S3_PATTERNS: readonly RawJobOptions[] = [
  { rw: "write", bs: "1m", iodepth: "1" },
  { rw: "write", bs: "1m", iodepth: "8" },
  { rw: "read", bs: "1m", iodepth: "1" },
  { rw: "read", bs: "1m", iodepth: "8" },
];

/** Where remote tiers come from when no flag names them. */
export function remoteFromEnv(): { pfsDir?: string; s3?: string; endpoint?: string } {
  const out: { pfsDir?: string; s3?: string; endpoint?: string } = {};
  const pfs = Deno.env.get("TIERBENCH_PFS_DIR");
  const bucket = Deno.env.get("TIERBENCH_S3_BUCKET");
  const endpoint = Deno.env.get("TIERBENCH_S3_ENDPOINT");
  if (pfs) out.pfsDir = pfs;
  if (bucket) out.s3 = bucket.startsWith("s3://") ? bucket : `s3://${bucket}`;
  if (endpoint) out.endpoint = withoutUserInfo(endpoint);
  return out;
}

/** How to configure the remote tiers, for people who have not. */
export const REMOTE_HELP =
  "add a PFS mount with --pfs DIR (or TIERBENCH_PFS_DIR) and an S3 bucket " +
  "with --s3 s3://BUCKET[/PREFIX] --endpoint URL (or TIERBENCH_S3_BUCKET, TIERBENCH_S3_ENDPOINT; " +
  "credentials from the AWS environment); a local Ceph for trying it: " +
  'eval "$(deno task -q ceph:up)"';

/**
 * The jobs of a profile: the null tier once (the harness ceiling), then every
 * pattern on memory and on file (O_DIRECT), then on pfs (buffered, end_fsync)
 * and the s3 patterns, when those are configured. Each tier's first job
 * ramps for `ramp` (the tier's warm-up), its later ones for `settle`.
 *
 * @example
 * ```ts
 * import { profileJobs } from "./node_profile.ts";
 * const jobs = profileJobs({ memoryDir: "/dev/shm", fileDir: ".", runtime: "3", ramp: "1", size: "256m" });
 * console.assert(jobs.length === 13);
 * ```
 */
export function profileJobs(o: ProfileOptions): JobOptions[] {
  const common = {
    runtime: o.runtime,
    size: o.size,
    timeout: o.timeout,
    ...(o.logAvgMsec === undefined ? {} : { logAvgMsec: o.logAvgMsec }),
  };
  /** --verify where it holds: not on randrw above depth 1 on a file tier. */
  const verify = (p: RawJobOptions) => (o.verify && !(p.rw === "randrw" && p.iodepth !== "1"));
  const raw: RawJobOptions[] = [
    { ...common, tier: "null:", rw: "randread", bs: "4k", name: "null-randread-4k-d1" },
  ];
  const tiers: [string, boolean][] = [];
  if (o.memoryDir !== undefined) tiers.push([`memory:${o.memoryDir}`, false]);
  if (o.fileDir !== undefined) tiers.push([`file:${o.fileDir}`, true]);
  for (const [tier, direct] of tiers) {
    for (const p of PROFILE_PATTERNS) {
      const kind = tier.slice(0, tier.indexOf(":"));
      const name = `${kind}-${p.rw}-${p.bs}-d${p.iodepth}`;
      raw.push({ ...common, ...p, tier, direct, verify: verify(p), name });
    }
  }
  if (o.pfsDir !== undefined) {
    for (const p of PROFILE_PATTERNS) {
      raw.push({
        ...common,
        ...p,
        tier: `pfs:${o.pfsDir}`,
        verify: verify(p),
        name: `pfs-${p.rw}-${p.bs}-d${p.iodepth}`,
      });
    }
  }
  if (o.s3 !== undefined) {
    for (const p of S3_PATTERNS) {
      raw.push({
        ...common,
        ...p,
        tier: o.s3,
        endpoint: o.endpoint,
        verify: o.verify,
        name: `s3-${p.rw}-${p.bs}-d${p.iodepth}`,
      });
    }
  }
  const warmed = new Set<string>();
  return raw.map((job) => {
    const first = !warmed.has(job.tier!);
    warmed.add(job.tier!);
    return parseJobOptions({ ...job, ramp: first ? o.ramp : o.settle ?? o.ramp });
  });
}

/**
 * The tiers a profile measures (the null tier aside), in its order: memory,
 * file, pfs, s3. `bench` runs its contention matrix over them.
 *
 * @example
 * ```ts
 * import { profileTiers } from "./node_profile.ts";
 * const tiers = profileTiers({ memoryDir: "/dev/shm", fileDir: "/data", runtime: "3", ramp: "1", size: "256m" });
 * console.assert(tiers.map((t) => t.kind).join() === "memory,file");
 * ```
 */
export function profileTiers(o: ProfileOptions): TierSpec[] {
  const tiers: TierSpec[] = [];
  if (o.memoryDir !== undefined) tiers.push({ kind: "memory", path: o.memoryDir });
  if (o.fileDir !== undefined) tiers.push({ kind: "file", path: o.fileDir });
  if (o.pfsDir !== undefined) tiers.push({ kind: "pfs", path: o.pfsDir });
  if (o.s3 !== undefined) tiers.push(parseTierSpec(o.s3));
  return tiers;
}
