/**
 * One stream of a rank on an S3 path. An object of the workload is stored as
 * numbered blocks under its key (`<prefix>r<rank>/<object>/<k>`), each block
 * one PUT or one GET, up to `iodepth` requests in flight — how a checkpoint
 * or offload engine stripes a tensor over an object store, and what keeps
 * a single large state object from turning into one serial request.
 *
 * @module
 */

import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { S3Error } from "../core/errors.ts";
import { fillRandom } from "./_file.ts";
import { endpointLabel, newS3Client, s3ErrorFrom, type S3Location } from "../tiers/s3_client.ts";
import { requestSize } from "./libaio_stream.ts";

/** Where a rank's objects go on an S3 path. */
export interface S3PathTarget {
  readonly loc: S3Location;
  readonly bucket: string;
  /** The run's scratch prefix, ending with "/". */
  readonly prefix: string;
}

/** The requests of one stream on an S3 path. */
export class S3Channel {
  readonly iodepth: number;
  readonly bs: number;
  readonly #t: S3PathTarget;
  readonly #client: S3Client;
  readonly #buf: Uint8Array;

  constructor(target: S3PathTarget, iodepth: number, bs: number, client?: S3Client) {
    this.#t = target;
    this.iodepth = iodepth;
    this.bs = bs;
    this.#client = client ?? newS3Client(target.loc, { maxSockets: Math.max(8, iodepth) });
    this.#buf = new Uint8Array(bs);
    fillRandom(this.#buf, 0x5eed);
  }

  /** The key of block `k` of an object of rank `rank`. */
  key(rank: number, object: string, k: number): string {
    return `${this.#t.prefix}r${rank}/${object}/${k}`;
  }

  /** PUTs or GETs every block of the object, `iodepth` at a time. */
  async transfer(rank: number, object: string, write: boolean, bytes: number): Promise<void> {
    const req = requestSize(bytes, this.bs, this.iodepth);
    const total = Math.ceil(bytes / req);
    let next = 0;
    const worker = async () => {
      while (next < total) {
        const k = next++;
        const len = Math.min(req, bytes - k * req);
        if (write) await this.#put(this.key(rank, object, k), len);
        else await this.#get(this.key(rank, object, k), len);
      }
    };
    const lanes = [];
    for (let i = 0; i < Math.min(this.iodepth, total); i++) lanes.push(worker());
    await Promise.all(lanes);
  }

  async #put(key: string, len: number): Promise<void> {
    const { bucket, loc } = this.#t;
    try {
      await this.#client.send(
        new PutObjectCommand({ Bucket: bucket, Key: key, Body: this.#buf.subarray(0, len) }),
      );
    } catch (e) {
      throw s3ErrorFrom(e, { operation: "PutObject", bucket, key, loc });
    }
  }

  async #get(key: string, len: number): Promise<void> {
    const { bucket, loc } = this.#t;
    let got = 0;
    try {
      const r = await this.#client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      const body = r.Body as AsyncIterable<Uint8Array> | undefined;
      if (body !== undefined) { for await (const chunk of body) got += chunk.byteLength; }
    } catch (e) {
      throw s3ErrorFrom(e, { operation: "GetObject", bucket, key, loc });
    }
    if (got !== len) {
      throw new S3Error({
        operation: "GetObject",
        bucket,
        key,
        code: "ShortRead",
        attempts: 1,
        endpoint: endpointLabel(loc),
        detail: `got ${got} of ${len} bytes`,
      });
    }
  }

  close(): void {
    this.#client.destroy();
  }
}
