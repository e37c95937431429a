/**
 * `tierbench clean`: removes the scratch directories (or S3 scratch prefixes)
 * that runs left behind — after a crash, a SIGKILL, or a server that could
 * not be reached when the run ended. Only what carries a tierbench marker is
 * touched, and never the scratch area of a run still alive on this host.
 *
 * @module
 */

import { join } from "node:path";
import { DEFAULT_TIMEOUT_MS, type TierSpec } from "../core/config.ts";
import { TIMED_OUT, withinTimeout } from "../core/settle.ts";
import { ConfigError, errorLine, S3Error } from "../core/errors.ts";
import {
  MARKER,
  pidAlive,
  removeScratchDirWithin,
  SCRATCH_PREFIX,
  type ScratchMarker,
} from "./scratch.ts";
import {
  endpointLabel,
  idleTimeoutOf,
  newS3Client,
  resolveCredentials,
  resolveEndpoint,
  resolveRegion,
  type S3Location,
  splitBucketPath,
} from "./s3_client.ts";
import { deletePrefix, listScratchPrefixes, readScratchMarker } from "./s3_scratch.ts";

/** What {@linkcode cleanScratch} did. */
export interface CleanReport {
  /** Where it looked: a directory or `s3://BUCKET/PREFIX`. */
  readonly place: string;
  /** Scratch areas removed; `objects` counts deleted objects for S3. */
  readonly removed: { path: string; objects?: number }[];
  /** Scratch areas left alone, and why. */
  readonly skipped: { path: string; reason: string }[];
  /** Scratch areas that could not be removed, and the error. */
  readonly failed: { path: string; error: string }[];
}

/** Where the S3 server is, when not from the environment. */
export interface CleanOptions {
  readonly endpoint?: string | undefined;
  readonly region?: string | undefined;
  /** Only the scratch area whose marker names this run (as results' `run_id` says it). */
  readonly runId?: string | undefined;
  /**
   * How long one request may take (a file-system call, an S3 request with
   * its retries; default 30 s): a storage that stops answering ends the
   * clean-up there, the rest listed as failed, instead of hanging it.
   */
  readonly timeoutMs?: number | undefined;
}

/** Run ids as newRunId() makes them (time, a dash, hex). */
const RUN_ID = /^[0-9A-Za-z][0-9A-Za-z-]*$/;

/** Why a scratch area must be left alone, or undefined when it may go. */
function inUse(marker: ScratchMarker): string | undefined {
  const sameHost = marker.host === undefined || marker.host === Deno.hostname();
  if (
    sameHost && typeof marker.pid === "number" && marker.pid !== Deno.pid && pidAlive(marker.pid)
  ) {
    return `run ${marker.run_id} is still running (pid ${marker.pid} on this host)`;
  }
  if (marker.pid === Deno.pid && sameHost) return `run ${marker.run_id} is this process's own`;
  return undefined;
}

/**
 * Removes leftover scratch areas directly under a tier's place: directories
 * `DIR/tierbench-scratch-<run id>` with a marker for `file:`, `memory:` and
 * `pfs:`; key prefixes `PREFIX/tierbench-scratch-<run id>/` with a marker
 * object for `s3://`.
 *
 * @throws {ConfigError} for a null tier, a missing directory or bucket, or no credentials.
 * @throws {S3Error} when the S3 server cannot be reached.
 *
 * @example
 * ```ts
 * import { cleanScratch } from "./clean.ts";
 * const dir = await Deno.makeTempDir();
 * const report = await cleanScratch({ kind: "file", path: dir });
 * console.assert(report.removed.length === 0);
 * await Deno.remove(dir);
 * ```
 */
export async function cleanScratch(
  spec: TierSpec,
  options: CleanOptions = {},
): Promise<CleanReport> {
  if (options.runId !== undefined && !RUN_ID.test(options.runId)) {
    throw new ConfigError(
      "run-id",
      `"${options.runId}" is not a run id`,
      "the run_id of a result, e.g. 20261121T194301-a1b2c3",
    );
  }
  switch (spec.kind) {
    case "null":
      throw new ConfigError(
        "tier",
        "null: has no scratch area",
        "file:DIR, memory:DIR, pfs:DIR, s3://BUCKET[/PREFIX]",
      );
    case "s3":
      return await cleanBucket(spec.path, options);
    default:
      return await cleanDirectory(spec.path, options.runId, options.timeoutMs);
  }
}

/** The marker of a scratch directory, or undefined; TIMED_OUT when the file system took too long. */
async function markerWithin(
  dir: string,
  timeoutMs: number,
): Promise<ScratchMarker | undefined | typeof TIMED_OUT> {
  const read = Deno.readTextFile(join(dir, MARKER)).then((text) => {
    const m = JSON.parse(text);
    return typeof m?.run_id === "string" ? m as ScratchMarker : undefined;
  }).catch(() => undefined);
  return await withinTimeout(read, timeoutMs);
}

async function cleanDirectory(
  dir: string,
  runId?: string,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<CleanReport> {
  const report: CleanReport = { place: dir, removed: [], skipped: [], failed: [] };
  const hung = (what: string) =>
    `${what} took longer than ${timeoutMs / 1000} s (--timeout): the file system stopped ` +
    "answering; left as it is";
  let entries: Deno.DirEntry[];
  try {
    const listed = await withinTimeout(Array.fromAsync(Deno.readDir(dir)), timeoutMs);
    if (listed === TIMED_OUT) {
      report.failed.push({ path: dir, error: hung("listing it") });
      return report;
    }
    entries = listed;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new ConfigError(
        "tier",
        `${dir} does not exist: name the directory runs used`,
        undefined,
        {
          cause: e,
        },
      );
    }
    throw new ConfigError("tier", `cannot read ${dir}: ${(e as Error).message}`, undefined, {
      cause: e,
    });
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    if (!entry.isDirectory || !entry.name.startsWith(SCRATCH_PREFIX)) continue;
    const path = join(dir, entry.name);
    const marker = await markerWithin(path, timeoutMs);
    if (marker === TIMED_OUT) {
      report.failed.push({ path, error: hung("reading its marker") });
      return report; // every other call would hang the same way
    }
    if (runId !== undefined && marker?.run_id !== runId) continue;
    if (marker === undefined) {
      report.skipped.push({ path, reason: `no ${MARKER} marker: not removed` });
      continue;
    }
    const busy = inUse(marker);
    if (busy) {
      report.skipped.push({ path, reason: busy });
      continue;
    }
    try {
      const removal = await removeScratchDirWithin(path, marker.run_id, timeoutMs);
      if (removal === "removed") report.removed.push({ path });
      if (removal === "timed out") {
        report.failed.push({ path, error: hung("removing it") });
        return report;
      }
    } catch (e) {
      report.failed.push({ path, error: errorLine(e) });
    }
  }
  return report;
}

async function cleanBucket(path: string, options: CleanOptions): Promise<CleanReport> {
  const { bucket, prefix } = splitBucketPath(path);
  const loc: S3Location = {
    endpoint: resolveEndpoint(options.endpoint),
    region: resolveRegion(options.region),
  };
  const report: CleanReport = {
    place: `s3://${bucket}/${prefix === "" ? "" : `${prefix}/`}`,
    removed: [],
    skipped: [],
    failed: [],
  };
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const client = newS3Client(loc, { idleTimeoutMs: idleTimeoutOf(timeoutMs) });
  try {
    await resolveCredentials(client);
    let prefixes: string[];
    try {
      prefixes = await listScratchPrefixes(client, loc, bucket, prefix, timeoutMs);
    } catch (e) {
      if (e instanceof S3Error && (e.code === "NoSuchBucket" || e.status === 404)) {
        throw new ConfigError(
          "tier",
          `bucket "${bucket}" does not exist at ${endpointLabel(loc)}`,
          undefined,
          { cause: e },
        );
      }
      throw e;
    }
    for (const scratch of prefixes) {
      const where = `s3://${bucket}/${scratch}`;
      try {
        const marker = await readScratchMarker(client, loc, bucket, scratch, timeoutMs);
        if (options.runId !== undefined && marker?.run_id !== options.runId) continue;
        if (marker === undefined) {
          report.skipped.push({ path: where, reason: `no ${MARKER} marker: not removed` });
          continue;
        }
        const busy = inUse(marker);
        if (busy) {
          report.skipped.push({ path: where, reason: busy });
          continue;
        }
        const marked = scratch + MARKER;
        const objects = await deletePrefix(client, loc, bucket, scratch, marked, timeoutMs);
        report.removed.push({ path: where, objects });
      } catch (e) {
        if (e instanceof S3Error && e.unreachable) throw e;
        report.failed.push({ path: where, error: errorLine(e) });
        if (e instanceof S3Error && e.code === "timed out") break; // the rest would wait too
      }
    }
  } finally {
    client.destroy();
  }
  return report;
}

/**
 * The report as lines for people: one per scratch area, or one saying there
 * was nothing.
 *
 * @example
 * ```ts
 * import { formatCleanReport } from "./clean.ts";
 * const lines = formatCleanReport({ place: "/data", removed: [], skipped: [], failed: [] });
 * console.assert(lines[0] === "nothing to remove under /data");
 * ```
 */
export function formatCleanReport(report: CleanReport): string[] {
  const lines = [
    ...report.removed.map((r) =>
      `removed ${r.path}${r.objects === undefined ? "" : ` (${r.objects} objects)`}`
    ),
    ...report.skipped.map((s) => `left ${s.path}: ${s.reason}`),
    ...report.failed.map((f) => `failed to remove ${f.path}: ${f.error}`),
  ];
  return lines.length > 0 ? lines : [`nothing to remove under ${report.place}`];
}
