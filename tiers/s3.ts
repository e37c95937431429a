/**
 * The s3 tier: objects in a bucket of an S3-compatible server (AWS S3, Ceph
 * RGW, MinIO, …), reached with @aws-sdk/client-s3. Objects are the unit: a
 * read is a GET of a whole object or a ranged GET of `bs` bytes, a write is a
 * PUT of a fresh object of `bs` bytes (multipart above a threshold).
 *
 * Everything goes under a scratch prefix `PREFIX/tierbench-scratch-<run id>/`
 * with a marker object naming the run; disposing the tier deletes every
 * object under it (and aborts multipart uploads there) when the marker names
 * this run. When the server cannot be reached by then, one line on stderr
 * says so and how to remove the prefix later (`tierbench clean`).
 *
 * @module
 */

import { HeadBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import { DEFAULT_TIMEOUT_MS, type JobOptions, jobReads, type TierSpec } from "../core/config.ts";
import { ConfigError, S3Error } from "../core/errors.ts";
import { redactSecrets } from "../core/secrets.ts";
import { newRunId } from "./scratch.ts";
import { MARKER } from "./scratch.ts";
import {
  codeOf,
  endpointLabel,
  idleTimeoutOf,
  newS3Client,
  resolveCredentials,
  resolveEndpoint,
  resolveRegion,
  s3ErrorFrom,
  type S3Location,
  splitBucketPath,
  statusOf,
} from "./s3_client.ts";
import {
  deletePrefix,
  putScratchMarker,
  readScratchMarker,
  scratchPrefixOf,
} from "./s3_scratch.ts";
import type { JobTarget, Tier, TierCapabilities, TierFacts, TierOptions } from "./types.ts";

/** Where the server is, when not from the environment. */
export interface S3TierOptions {
  /** Endpoint URL (default: `TIERBENCH_S3_ENDPOINT`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, else AWS). */
  readonly endpoint?: string | undefined;
  /** Region (default: `AWS_REGION`, else us-east-1). */
  readonly region?: string | undefined;
}

/**
 * A bucket (and key prefix) on an S3-compatible server.
 *
 * @example
 * ```ts ignore
 * import { S3Tier } from "./s3.ts";
 * await using tier = new S3Tier({ kind: "s3", path: "bucket/prefix" }, undefined, {
 *   endpoint: "http://127.0.0.1:7480",
 * });
 * await tier.setup(); // HeadBucket, then the scratch prefix and its marker
 * console.log(tier.describe().scratch_dir); // s3://bucket/prefix/tierbench-scratch-…/
 * ```
 */
export class S3Tier implements Tier {
  readonly spec: TierSpec;
  readonly runId: string;
  readonly capabilities: TierCapabilities = {
    direct: "not-applicable",
    alignment: 1,
    engines: ["s3"],
  };
  /** The bucket. */
  readonly bucket: string;
  /** The key prefix under which the scratch prefix is made (`""`: the bucket's root). */
  readonly basePrefix: string;
  readonly #options: S3TierOptions;
  #loc: S3Location | undefined;
  #client: S3Client | undefined;
  #scratch: string | undefined;
  #laidOut = new Set<string>();
  #writeRuns = 0;
  /** Why the tier was given up (a request timed out), when it was. */
  #abandoned: string | undefined;
  readonly #timeoutMs: number;

  constructor(
    spec: TierSpec,
    runId: string = newRunId(),
    options: S3TierOptions = {},
    tierOptions: TierOptions = {},
  ) {
    if (spec.kind !== "s3") throw new TypeError(`S3Tier needs an s3 spec, not ${spec.kind}`);
    this.spec = spec;
    this.runId = runId;
    this.#options = options;
    this.#timeoutMs = tierOptions.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const { bucket, prefix } = splitBucketPath(spec.path);
    this.bucket = bucket;
    this.basePrefix = prefix;
  }

  /** The server (after setup). */
  get location(): S3Location {
    if (this.#loc === undefined) throw new TypeError("setup() has not run");
    return this.#loc;
  }

  /** The scratch key prefix, ending with "/" (after setup). */
  get scratchPrefix(): string {
    if (this.#scratch === undefined) throw new TypeError("setup() has not run");
    return this.#scratch;
  }

  /**
   * Checks that the bucket exists and may be used, then makes the scratch
   * prefix with its marker.
   *
   * @throws {ConfigError} for a bucket that does not exist, refused access or no credentials.
   * @throws {S3Error} when the server cannot be reached or fails.
   */
  async setup(): Promise<void> {
    const loc: S3Location = {
      endpoint: resolveEndpoint(this.#options.endpoint),
      region: resolveRegion(this.#options.region),
    };
    this.#loc = loc;
    const client = newS3Client(loc, { idleTimeoutMs: idleTimeoutOf(this.#timeoutMs) });
    this.#client = client;
    await resolveCredentials(client);
    const where = `at ${endpointLabel(loc)}`;
    try {
      await client.send(
        new HeadBucketCommand({ Bucket: this.bucket }),
        { abortSignal: AbortSignal.timeout(this.#timeoutMs) },
      );
    } catch (e) {
      const code = codeOf(e);
      const status = statusOf(e);
      if (status === 404 || code === "NoSuchBucket" || code === "NotFound") {
        throw new ConfigError(
          "tier",
          `bucket "${this.bucket}" does not exist ${where}: create it or name an existing bucket`,
          undefined,
          { cause: e },
        );
      }
      if (status === 403) {
        throw new ConfigError(
          "tier",
          `access to bucket "${this.bucket}" ${where} is denied (HTTP 403): check the ` +
            "credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE) and --region",
          undefined,
          { cause: e },
        );
      }
      throw s3ErrorFrom(e, { operation: "HeadBucket", bucket: this.bucket, loc });
    }
    const scratch = scratchPrefixOf(this.basePrefix, this.runId);
    await putScratchMarker(client, loc, this.bucket, scratch, this.runId, this.#timeoutMs);
    this.#scratch = scratch;
  }

  /** Names each job's objects: read objects laid out once per size, fresh keys for writes. */
  prepare(job: JobOptions): Promise<JobTarget[]> {
    const s3 = job.s3;
    if (s3 === undefined) throw new TypeError("an s3 job needs its s3 options");
    const scratch = this.scratchPrefix;
    const loc = this.location;
    const reads = jobReads(job);
    const writes = job.rw !== "read" && job.rw !== "randread";
    const readStem = `${scratch}read-${job.size}-${s3.objectSize}`;
    const writeRun = writes ? this.#writeRuns++ : -1;
    const targets: JobTarget[] = [];
    for (let j = 0; j < job.numjobs; j++) {
      const prefix = `${readStem}/job${j}/`;
      targets.push({
        paths: [],
        regionOffset: 0,
        layout: reads && !this.#laidOut.has(prefix) ? "prefill" : "none",
        s3: {
          endpoint: loc.endpoint,
          region: loc.region,
          bucket: this.bucket,
          prefix,
          writePrefix: writes ? `${scratch}w${writeRun}-job${j}/` : "",
          objectSize: s3.objectSize,
          partSize: s3.partSize,
          multipartThreshold: s3.multipartThreshold,
        },
      });
    }
    return Promise.resolve(targets);
  }

  markLaidOut(targets: readonly JobTarget[]): void {
    for (const t of targets) {
      if (t.layout === "prefill" && t.s3) this.#laidOut.add(t.s3.prefix);
    }
  }

  /**
   * Deletes what a run wrote, and read objects whose layout did not finish.
   * Never throws: whatever is left goes when the tier is disposed.
   */
  async release(targets: readonly JobTarget[]): Promise<void> {
    const client = this.#client;
    if (client === undefined || this.#abandoned !== undefined) return;
    for (const t of targets) {
      if (!t.s3) continue;
      const prefixes = t.s3.writePrefix === "" ? [] : [t.s3.writePrefix];
      if (t.layout === "prefill" && !this.#laidOut.has(t.s3.prefix)) prefixes.push(t.s3.prefix);
      for (const p of prefixes) {
        try {
          await deletePrefix(client, this.location, this.bucket, p, undefined, this.#timeoutMs);
        } catch (e) {
          // the server is gone, refuses or stopped answering: dispose says so once
          if (e instanceof S3Error && e.code === "timed out") this.abandon(failure(e));
          return;
        }
      }
    }
  }

  /** Gives the tier up after a request timed out: disposing only names what is left. */
  abandon(reason: string): void {
    this.#abandoned ??= reason;
  }

  describe(): TierFacts {
    const loc = this.#loc ?? {
      endpoint: this.#options.endpoint,
      region: this.#options.region ?? "",
    };
    const scratch = this.#scratch ?? "";
    return {
      kind: "s3",
      path: this.spec.path,
      scratch_dir: scratch === "" ? "" : `s3://${this.bucket}/${scratch}`,
      direct: "not-applicable",
      alignment: 1,
      note: "objects: reads GET a whole object or a ranged GET of bs bytes (ttfb_ns: time to " +
        "the first body byte); writes PUT fresh objects of bs bytes, multipart above " +
        "multipart_threshold; lat is the whole request, slat does not apply; each job " +
        "makes requests of its kind for 1 s before the clock starts (warm-up, not measured)",
      s3: {
        endpoint: endpointLabel({ endpoint: loc.endpoint, region: loc.region }),
        region: loc.region,
        bucket: this.bucket,
        scratch_prefix: scratch,
      },
    };
  }

  /** The `tierbench clean` command that removes this tier's leftovers. */
  cleanCommand(): string {
    const endpoint = this.#loc?.endpoint === undefined
      ? ""
      : ` --endpoint ${endpointLabel(this.location)}`;
    const base = this.basePrefix === "" ? this.bucket : `${this.bucket}/${this.basePrefix}`;
    return `deno task tierbench clean --tier s3://${base}${endpoint}`;
  }

  /**
   * Deletes everything under the scratch prefix when its marker names this
   * run. When that fails (the server is unreachable), prints one line saying
   * what is left and how to remove it, and does not throw.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    const client = this.#client;
    const scratch = this.#scratch;
    this.#client = undefined;
    this.#scratch = undefined;
    if (client === undefined) return;
    try {
      if (scratch === undefined) return;
      const loc = this.location;
      let why = this.#abandoned;
      if (why === undefined) {
        try {
          const marker = await readScratchMarker(
            client,
            loc,
            this.bucket,
            scratch,
            this.#timeoutMs,
          );
          if (marker?.run_id !== this.runId) return;
          const marked = scratch + MARKER;
          await deletePrefix(client, loc, this.bucket, scratch, marked, this.#timeoutMs);
          return;
        } catch (e) {
          why = failure(e);
        }
      }
      console.error(
        redactSecrets(
          `tierbench: could not remove s3://${this.bucket}/${scratch} (${why}); ` +
            `remove it later with: ${this.cleanCommand()}`,
        ),
      );
    } finally {
      client.destroy();
    }
  }
}

/** Why a clean-up request failed, in a few words for the line that names what is left. */
function failure(e: unknown): string {
  if (!(e instanceof S3Error)) return String(e);
  if (e.code === "timed out") {
    return `${e.operation} ${e.message.slice(e.message.indexOf(": ") + 2)}`;
  }
  const status = e.status === undefined ? "" : ` (HTTP ${e.status})`;
  return `${e.code}${status}${e.unreachable ? ": server unreachable" : ""}`;
}
