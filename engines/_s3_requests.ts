/**
 * The S3 requests that the s3 job engine and the rank's s3 stream both make:
 * a PUT of one body, a GET (whole or ranged) read to the end of its body, and
 * the {@linkcode S3Error} for what the SDK does not fail itself (a short
 * body, a missing upload id). Retries, deadlines and request slots stay with
 * each caller.
 *
 * @module
 */

import {
  GetObjectCommand,
  type GetObjectCommandOutput,
  PutObjectCommand,
  type PutObjectCommandOutput,
  type S3Client,
} from "@aws-sdk/client-s3";
import { S3Error } from "../core/errors.ts";
import { monoNow } from "../core/libc.ts";
import { endpointLabel, type S3Location } from "../tiers/s3_client.ts";

/** One object on an S3 endpoint, as an error names it. */
export interface ObjectRef {
  readonly loc: S3Location;
  readonly bucket: string;
  readonly key: string;
}

/** How a request may be abandoned (the SDK's send options). */
export interface SendOptions {
  readonly abortSignal?: AbortSignal;
}

/** PUTs `body` as `key` in one request. */
export function putObject(
  client: S3Client,
  bucket: string,
  key: string,
  body: Uint8Array,
  options: SendOptions = {},
): Promise<PutObjectCommandOutput> {
  return client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }), options);
}

/** GETs `key`, or its `range` ("bytes=a-b") when given; the body is still to read. */
export function getObject(
  client: S3Client,
  bucket: string,
  key: string,
  range?: string,
  options: SendOptions = {},
): Promise<GetObjectCommandOutput> {
  return client.send(
    new GetObjectCommand({ Bucket: bucket, Key: key, ...(range ? { Range: range } : {}) }),
    options,
  );
}

/** What reading a GET's body to its end found. */
export interface Drained {
  /** The bytes the body held. */
  got: number;
  /** {@linkcode monoNow} when its first chunk came, or -1 for an empty body. */
  first: number;
}

/**
 * Reads a GET's body to its end, counting its bytes; copies into `into`
 * each chunk that fits whole after those before it.
 */
export async function drainBody(r: GetObjectCommandOutput, into?: Uint8Array): Promise<Drained> {
  const out: Drained = { got: 0, first: -1 };
  const body = r.Body as AsyncIterable<Uint8Array> | undefined;
  if (body === undefined) return out;
  for await (const chunk of body) {
    if (out.first < 0) out.first = monoNow();
    if (into !== undefined && out.got + chunk.byteLength <= into.byteLength) {
      into.set(chunk, out.got);
    }
    out.got += chunk.byteLength;
  }
  return out;
}

/** An {@linkcode S3Error} `code` of `operation` on `ref` that the SDK did not raise. */
export function objectError(
  ref: ObjectRef,
  operation: string,
  code: string,
  more: { status?: number | undefined; attempts?: number; detail?: string } = {},
): S3Error {
  return new S3Error({
    operation,
    bucket: ref.bucket,
    key: ref.key,
    code,
    ...more,
    endpoint: endpointLabel(ref.loc),
  });
}
