/**
 * One stream of a rank on an S3 path. An object of the workload is stored as
 * numbered blocks under its key (`<prefix>r<rank>/<object>/<k>`), each block
 * one PUT or one GET, up to `iodepth` requests in flight — how a checkpoint
 * or offload engine stripes a tensor over an object store, and what keeps
 * a single large state object from turning into one serial request.
 *
 * @module
 */

import type { S3Client } from "@aws-sdk/client-s3";
import { fillRandom } from "./_file.ts";
import {
  idleTimeoutOf,
  newS3Client,
  REQUEST_IDLE_TIMEOUT_MS,
  type S3Location,
  sendWithin,
  withBodyRetries,
} from "../tiers/s3_client.ts";
import { requestSize, type StreamOptions } from "./_stream.ts";
import { drainBody, getObject, objectError, putObject } from "./_s3_requests.ts";

/** Where a rank's objects go on an S3 path. */
export interface S3PathTarget {
  /** The endpoint and region. */
  readonly loc: S3Location;
  /** The bucket the run writes to. */
  readonly bucket: string;
  /** The run's scratch prefix, ending with "/". */
  readonly prefix: string;
}

/**
 * The requests of one stream of one rank on an S3 path: each
 * {@linkcode S3Channel.transfer} PUTs or GETs one object's blocks, up to
 * `iodepth` requests in flight on the Worker's event loop. A failed request
 * throws an `S3Error`; the SDK retries transient failures.
 *
 * @example
 * ```ts ignore
 * const ch = new S3Channel({ loc, bucket: "b", prefix: "run1/" }, 8, 8 << 20);
 * try { await ch.transfer(0, "params", true, 64 << 20); } finally { ch.close(); }
 * ```
 */
export class S3Channel {
  /** Requests in flight at most. */
  readonly iodepth: number;
  /** The largest block, in bytes. */
  readonly bs: number;
  readonly #t: S3PathTarget;
  readonly #client: S3Client;
  readonly #buf: Uint8Array;
  readonly #options: StreamOptions;

  /**
   * Makes the stream's client (or uses `client`) and a buffer of `bs` random
   * bytes. `options` bound each request, its retries included, by --timeout
   * and, under --verify, make what is PUT a pattern each GET is checked
   * against.
   */
  constructor(
    target: S3PathTarget,
    iodepth: number,
    bs: number,
    client?: S3Client,
    options: StreamOptions = {},
  ) {
    this.#t = target;
    this.iodepth = iodepth;
    this.bs = bs;
    this.#options = options;
    this.#client = client ?? newS3Client(target.loc, {
      maxSockets: Math.max(8, iodepth),
      ...(options.timeoutMs === undefined
        ? {}
        : { idleTimeoutMs: idleTimeoutOf(options.timeoutMs) }),
    });
    this.#buf = new Uint8Array(bs);
    fillRandom(this.#buf, 0x5eed);
  }

  /**
   * The key of block `k` of an object of rank `rank`; of a region that starts
   * at byte `at` > 0 of the object, `{object}/@{at}/{k}`.
   */
  key(rank: number, object: string, k: number, at = 0): string {
    const region = at > 0 ? `@${at}/` : "";
    return `${this.#t.prefix}r${rank}/${object}/${region}${k}`;
  }

  /**
   * PUTs or GETs every block of `bytes` of the object from byte `at`
   * (default 0), `iodepth` at a time.
   */
  async transfer(
    rank: number,
    object: string,
    write: boolean,
    bytes: number,
    at = 0,
  ): Promise<void> {
    const req = requestSize(bytes, this.bs, this.iodepth);
    const total = Math.ceil(bytes / req);
    let next = 0;
    const worker = async () => {
      while (next < total) {
        const k = next++;
        const len = Math.min(req, bytes - k * req);
        if (write) await this.#put(this.key(rank, object, k, at), len);
        else await this.#get(this.key(rank, object, k, at), len);
      }
    };
    const lanes = [];
    for (let i = 0; i < Math.min(this.iodepth, total); i++) lanes.push(worker());
    await Promise.all(lanes);
  }

  async #put(key: string, len: number): Promise<void> {
    const { bucket, loc } = this.#t;
    const v = this.#options.verifier;
    let body = this.#buf.subarray(0, len);
    if (v) {
      body = new Uint8Array(len);
      v.fill(body, `s3://${bucket}/${key}`, v.written(`s3://${bucket}/${key}`, 0, len), 0);
    }
    await sendWithin(
      this.#options.timeoutMs,
      { operation: "PutObject", bucket, key, loc },
      (o) => putObject(this.#client, bucket, key, body, o),
    );
  }

  async #get(key: string, len: number): Promise<void> {
    const { bucket, loc } = this.#t;
    const v = this.#options.verifier;
    const into = v ? new Uint8Array(len) : undefined;
    // the whole request, its body included, within --timeout
    // a body with no byte for the idle timeout is fetched again
    const t = this.#options.timeoutMs;
    const idle = t === undefined ? REQUEST_IDLE_TIMEOUT_MS : idleTimeoutOf(t);
    const ctx = { operation: "GetObject", bucket, key, loc };
    const { got } = await sendWithin(
      this.#options.timeoutMs,
      ctx,
      (o) =>
        withBodyRetries(
          ctx,
          () => getObject(this.#client, bucket, key, undefined, o),
          (r) => drainBody(r, into, idle),
        ),
    );
    if (got !== len) {
      throw objectError({ loc, bucket, key }, "GetObject", "ShortRead", {
        attempts: 1,
        detail: `got ${got} of ${len} bytes`,
      });
    }
    if (v && into) v.check(into, `s3://${bucket}/${key}`, 0);
  }

  /** Destroys the client and its sockets. */
  close(): void {
    this.#client.destroy();
  }
}
