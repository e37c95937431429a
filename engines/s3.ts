/**
 * `s3`: the engine of the s3 tier. Each job keeps `iodepth` requests in
 * flight on its Worker's event loop with @aws-sdk/client-s3:
 *
 * - a read GETs a whole object (object size = bs) or `bs` bytes of one with a
 *   ranged GET, walking the job's space with the job's offsets (offset o is
 *   object ⌊o / object size⌋, at o mod object size in it); the body is read
 *   to its end, and the time to its first byte goes into the ttfb histogram;
 * - a write PUTs a fresh object of `bs` bytes, or uploads it in parts of the
 *   part size when `bs` is above the multipart threshold, the parts sharing
 *   the job's `iodepth` request slots.
 *
 * `lat` is the whole request (all parts for a multipart upload); there is no
 * separate submission step, so no `slat`. Transient failures are retried by
 * the SDK (and here, when a body breaks off) and counted as retries.
 *
 * @module
 */

import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import type { JobPlan, S3Target } from "../core/job_protocol.ts";
import { DEFAULT_TIMEOUT_MS } from "../core/config.ts";
import {
  idleTimeoutOf,
  newS3Client,
  resolveCredentials,
  s3ErrorFrom,
  type S3Location,
  withBodyRetries,
} from "../tiers/s3_client.ts";
import type { RetryCause } from "../core/job_protocol.ts";
import { monoNow } from "../core/libc.ts";
import { Deadlines } from "../core/deadlines.ts";
import { type JobEngine, type JobRuntime, TIMES } from "./types.ts";
import { drainBody, getObject, objectError, type ObjectRef, putObject } from "./_s3_requests.ts";
import { type BlockVerifier, verifierOf } from "../core/verify.ts";

/** Concurrency of the layout (not measured), at least this many requests. */
const MIN_LAYOUT_DEPTH = 4;

/**
 * How long each job makes requests of its own kind before the clock starts,
 * unmeasured: a fresh Worker's first requests run cold (V8 compiles the SDK's
 * hot paths and sizes its heap over the first second or two; connections
 * open), and without this a short ramp measures that instead of the server.
 */
export const WARMUP_MS = 1000;
/** At most this many warm-up requests. */
const WARMUP_MAX_REQUESTS = 1000;

/** A counting semaphore: the job's request slots. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(n: number) {
    this.#free = n;
  }

  acquire(): Promise<void> | undefined {
    if (this.#free > 0) {
      this.#free--;
      return undefined;
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

/**
 * Where the retries of a job's client are counted: on its runtime while the
 * measured run goes, nowhere during layout, warm-up and the read-back.
 */
interface RetryCounter {
  count: (cause: RetryCause) => void;
}

/**
 * The s3 engine of one job.
 *
 * @example
 * ```ts ignore
 * const engine = await S3Engine.open(plan); // lays out read objects when asked
 * try { await engine.run(runtime); } finally { engine.close(); }
 * ```
 */
export class S3Engine implements JobEngine {
  readonly #plan: JobPlan;
  readonly #t: S3Target;
  readonly #loc: S3Location;
  readonly #client: S3Client;
  readonly #buf: Uint8Array;
  #slots: Slots;
  #written = 0;
  #failure: unknown;
  readonly #retries: RetryCounter;
  /** --verify: stamps each object's blocks, checks each block read. */
  #verifier: BlockVerifier | undefined;
  /** The --timeout of each request, kept by one timer. */
  #deadlines: Deadlines | undefined;

  private constructor(
    plan: JobPlan,
    t: S3Target,
    client: S3Client,
    buf: Uint8Array,
    retries: RetryCounter,
  ) {
    this.#plan = plan;
    this.#retries = retries;
    this.#t = t;
    this.#loc = { endpoint: t.endpoint, region: t.region };
    this.#client = client;
    this.#buf = buf;
    this.#slots = new Slots(plan.iodepth);
  }

  /** Makes the client and the data buffer, and lays out the objects reads need. */
  static async open(plan: JobPlan): Promise<S3Engine> {
    const t = plan.target.s3;
    if (t === undefined) throw new TypeError("an s3 job needs an s3 target");
    const retries: RetryCounter = { count: () => {} };
    const client = newS3Client(
      { endpoint: t.endpoint, region: t.region },
      {
        maxSockets: Math.max(50, plan.iodepth),
        idleTimeoutMs: idleTimeoutOf(plan.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        onRetry: (cause) => retries.count(cause),
      },
    );
    try {
      await resolveCredentials(client);
      // One buffer serves every body: the largest single PUT or part this job sends.
      const bodySize = (n: number) => n > t.multipartThreshold ? Math.min(t.partSize, n) : n;
      const layoutSize = plan.target.layout === "prefill" ? bodySize(t.objectSize) : 0;
      const buf = new Uint8Array(Math.max(bodySize(plan.bs), layoutSize, 1));
      fillRandom(buf);
      const engine = new S3Engine(plan, t, client, buf, retries);
      engine.#verifier = verifierOf(plan);
      if (plan.target.layout === "prefill") await engine.#layOut();
      await engine.#warmUp();
      return engine;
    } catch (e) {
      client.destroy();
      throw e;
    }
  }

  /** Objects of the job's read space: object k holds bytes [k × objectSize, …) of it. */
  #objectCount(): number {
    return Math.ceil(this.#plan.size / this.#t.objectSize);
  }

  #objectLength(k: number): number {
    return Math.min(this.#t.objectSize, this.#plan.size - k * this.#t.objectSize);
  }

  /** PUTs every read object, a few at a time; not measured. */
  async #layOut(): Promise<void> {
    const n = this.#objectCount();
    const depth = Math.max(MIN_LAYOUT_DEPTH, this.#plan.iodepth);
    this.#slots = new Slots(depth);
    let next = 0;
    const lane = async () => {
      while (this.#failure === undefined && next < n) {
        const k = next++;
        const length = this.#objectLength(k);
        const body = this.#verifier?.stamped(k * this.#t.objectSize);
        await this.#put(`${this.#t.prefix}obj${k}`, length, body);
      }
    };
    await this.#lanes(depth, lane);
    this.#slots = new Slots(this.#plan.iodepth);
  }

  /**
   * Requests of the job's kinds (GETs over its objects, PUTs of fresh ones
   * under its write prefix, which release deletes) for {@linkcode WARMUP_MS}
   * at its depth; not measured.
   */
  async #warmUp(): Promise<void> {
    const { bs, size, rwmixread, iodepth } = this.#plan;
    const reads = rwmixread > 0;
    const writes = rwmixread < 100 && this.#t.writePrefix !== "";
    const end = monoNow() + WARMUP_MS;
    let n = 0;
    const lane = async () => {
      while (this.#failure === undefined && monoNow() < end && n < WARMUP_MAX_REQUESTS) {
        const i = n++;
        if (reads && (!writes || i % 2 === 0)) {
          await this.#get((i * bs) % size, monoNow());
        } else if (writes) {
          const body = this.#verifier?.stamped(i * bs);
          await this.#put(`${this.#t.writePrefix}warm${i}`, bs, body);
        } else return;
      }
    };
    await this.#lanes(iodepth, lane);
  }

  /** Runs `count` lanes; the first failure stops the others from starting more and is thrown. */
  async #lanes(count: number, lane: () => Promise<void>): Promise<void> {
    const guarded = async () => {
      try {
        await lane();
      } catch (e) {
        this.#failure ??= e;
      }
    };
    await Promise.all(Array.from({ length: count }, guarded));
    if (this.#failure !== undefined) throw this.#failure;
  }

  async run(rt: JobRuntime): Promise<void> {
    this.#retries.count = (cause) => rt.countRetry(cause);
    const lane = async () => {
      for (;;) {
        if (this.#failure !== undefined) return;
        const t0 = monoNow();
        rt.times[TIMES.ISSUE] = t0;
        if (!rt.mayIssue()) return;
        if (rt.nextIsRead()) {
          const ttfb = await this.#get(rt.nextOffset(), t0);
          completeAt(rt, t0, ttfb);
          rt.complete(true);
        } else {
          const n = this.#written++;
          const { bs } = this.#plan;
          await this.#put(`${this.#t.writePrefix}o${n}`, bs, this.#verifier?.stamped(n * bs));
          completeAt(rt, t0, -1);
          rt.complete(false);
        }
      }
    };
    try {
      await this.#lanes(this.#plan.iodepth, lane);
    } finally {
      this.#retries.count = () => {};
    }
  }

  /** Takes a request slot for the length of `request`. */
  async #slot<T>(request: () => Promise<T>): Promise<T> {
    const wait = this.#slots.acquire();
    if (wait) await wait;
    try {
      return await request();
    } finally {
      this.#slots.release();
    }
  }

  /** `key` in the job's bucket, as an error names it. */
  #ref(key: string): ObjectRef {
    return { loc: this.#loc, bucket: this.#t.bucket, key };
  }

  /**
   * Sends one command (the SDK retries transient failures, counted by the
   * client's retry strategy) and names the object if it fails.
   */
  async #send<T>(operation: string, key: string, send: () => Promise<T>): Promise<T> {
    try {
      return await this.#slot(() => this.#deadline(send(), operation, key));
    } catch (e) {
      throw s3ErrorFrom(e, { operation, bucket: this.#t.bucket, key, loc: this.#loc });
    }
  }

  /**
   * GETs `bs` bytes at `offset` of the job's space, reading the body to its
   * end, and returns the time to its first byte in ns. A body that breaks off
   * with a transient error is fetched again.
   */
  async #get(offset: number, t0: number): Promise<number> {
    const { objectSize, bucket } = this.#t;
    const bs = this.#plan.bs;
    const k = Math.floor(offset / objectSize);
    const at = offset - k * objectSize;
    const key = `${this.#t.prefix}obj${k}`;
    const range = this.#objectLength(k) > bs ? `bytes=${at}-${at + bs - 1}` : undefined;
    const block = this.#verifier && new Uint8Array(bs);
    const { got, first, status } = await withBodyRetries(
      { operation: "GetObject", bucket, key, loc: this.#loc },
      () => this.#send("GetObject", key, () => getObject(this.#client, bucket, key, range)),
      async (r) => ({
        ...await this.#deadline(drainBody(r, block), "GetObject (body)", key),
        status: r.$metadata.httpStatusCode,
      }),
      (cause) => this.#retries.count(cause),
    );
    if (got !== bs) {
      throw objectError(this.#ref(key), "GetObject", "ShortRead", {
        status,
        detail: `(${got} of ${bs} bytes${range ? ` for ${range}` : ""})`,
      });
    }
    const ttfb = ((first < 0 ? monoNow() : first) - t0) * 1e6;
    if (block !== undefined) {
      this.#verifier!.checkRead(block, `s3://${bucket}/${key}`, offset, offset, at);
    }
    return ttfb;
  }

  /**
   * PUTs `length` bytes as `key`: one request, or a multipart upload above
   * the threshold. The bytes are the job's buffer, or under --verify `body`'s
   * range of the object's stamped bytes.
   */
  async #put(
    key: string,
    length: number,
    body?: (from: number, to: number) => Uint8Array,
  ): Promise<void> {
    const { bucket, multipartThreshold, partSize } = this.#t;
    if (length <= multipartThreshold) {
      await this.#send(
        "PutObject",
        key,
        () =>
          putObject(
            this.#client,
            bucket,
            key,
            body ? body(0, length) : this.#buf.subarray(0, length),
          ),
      );
      return;
    }
    const created = await this.#send(
      "CreateMultipartUpload",
      key,
      () => this.#client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key })),
    );
    const uploadId = created.UploadId;
    if (!uploadId) throw objectError(this.#ref(key), "CreateMultipartUpload", "NoUploadId");
    try {
      const count = Math.ceil(length / partSize);
      const settled = await Promise.allSettled(Array.from({ length: count }, async (_, i) => {
        const size = Math.min(partSize, length - i * partSize);
        const r = await this.#send(
          "UploadPart",
          key,
          () =>
            this.#client.send(
              new UploadPartCommand({
                Bucket: bucket,
                Key: key,
                UploadId: uploadId,
                PartNumber: i + 1,
                Body: body ? body(i * partSize, i * partSize + size) : this.#buf.subarray(0, size),
              }),
            ),
        );
        return { PartNumber: i + 1, ETag: r.ETag ?? "" };
      }));
      const parts: { PartNumber: number; ETag: string }[] = [];
      for (const s of settled) {
        if (s.status === "rejected") throw s.reason;
        parts.push(s.value);
      }
      await this.#send(
        "CompleteMultipartUpload",
        key,
        () =>
          this.#client.send(
            new CompleteMultipartUploadCommand({
              Bucket: bucket,
              Key: key,
              UploadId: uploadId,
              MultipartUpload: { Parts: parts },
            }),
          ),
      );
    } catch (e) {
      // Best effort: the tier aborts whatever is left under its prefix anyway.
      await this.#deadline(
        this.#client.send(
          new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }),
        ),
        "AbortMultipartUpload",
        key,
      ).catch(() => {});
      throw e;
    }
  }

  /**
   * `request`, or an `S3Error` "timed out" once it has taken longer
   * than the job's --timeout (the SDK's retries included). The abandoned
   * request's socket goes when the client is destroyed.
   */
  #deadline<T>(request: Promise<T>, operation: string, key: string): Promise<T> {
    const ms = this.#plan.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#deadlines ??= new Deadlines(ms);
    return this.#deadlines.within(
      request,
      () =>
        objectError(this.#ref(key), operation, "timed out", {
          detail: `after ${ms / 1000} s (--timeout)`,
        }),
    );
  }

  /**
   * --verify: GETs every object the measured run wrote and checks its
   * blocks, `iodepth` at a time; not measured.
   *
   * @throws {VerifyError} at the first block that is not what was written.
   */
  async readBack(stopped: () => boolean): Promise<void> {
    const v = this.#verifier;
    const { bucket, writePrefix } = this.#t;
    const { bs } = this.#plan;
    if (v === undefined || writePrefix === "") return;
    let next = 0;
    const lane = async () => {
      while (this.#failure === undefined && next < this.#written && !stopped()) {
        const n = next++;
        const key = `${writePrefix}o${n}`;
        const bytes = await withBodyRetries(
          { operation: "GetObject", bucket, key, loc: this.#loc },
          () => this.#send("GetObject", key, () => getObject(this.#client, bucket, key)),
          (r) => this.#deadline(r.Body!.transformToByteArray(), "GetObject (body)", key),
          (cause) => this.#retries.count(cause),
        );
        if (bytes.byteLength !== bs) {
          throw objectError(this.#ref(key), "GetObject (verify read-back)", "ShortRead", {
            detail: `(${bytes.byteLength} of ${bs} bytes)`,
          });
        }
        v.checkRead(bytes, `s3://${bucket}/${key}`, n * bs, n * bs, 0);
      }
    };
    await this.#lanes(this.#plan.iodepth, lane);
  }

  close(): void {
    this.#client.destroy();
  }
}

/** A request begun at `t0` (ms) completes now: its times into `rt.times`, `ttfb` ns or -1. */
function completeAt(rt: JobRuntime, t0: number, ttfb: number): void {
  const times = rt.times;
  const t1 = monoNow();
  times[TIMES.DONE] = t1;
  times[TIMES.LAT] = (t1 - t0) * 1e6;
  times[TIMES.TTFB] = ttfb;
}

/** Random bytes, so that no layer can compress or deduplicate the objects. */
function fillRandom(buf: Uint8Array): void {
  for (let at = 0; at < buf.byteLength; at += 65536) {
    crypto.getRandomValues(buf.subarray(at, at + 65536));
  }
}
