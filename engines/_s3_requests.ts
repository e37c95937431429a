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
import { endpointLabel, networkError, type S3Location } from "../tiers/s3_client.ts";

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

/**
 * PUTs `body` as `key` in one request.
 *
 * @example
 * ```ts ignore
 * await putObject(client, "bucket", "key", new Uint8Array(1 << 20));
 * ```
 */
export function putObject(
  client: S3Client,
  bucket: string,
  key: string,
  body: Uint8Array,
  options: SendOptions = {},
): Promise<PutObjectCommandOutput> {
  const command = new PutObjectCommand({ Bucket: bucket, Key: key, Body: body });
  // without options when there is no signal: the SDK reuses a command's resolved middleware
  // stack (cacheMiddleware) only for a send without options, and resolves it afresh otherwise
  return options.abortSignal ? client.send(command, options) : client.send(command);
}

/**
 * GETs `key`, or its `range` ("bytes=a-b") when given; the body is still to read.
 *
 * @example
 * ```ts ignore
 * const r = await getObject(client, "bucket", "key", "bytes=0-4095");
 * await drainBody(r);
 * ```
 */
export function getObject(
  client: S3Client,
  bucket: string,
  key: string,
  range?: string,
  options: SendOptions = {},
): Promise<GetObjectCommandOutput> {
  const command = new GetObjectCommand({
    Bucket: bucket,
    Key: key,
    ...(range ? { Range: range } : {}),
  });
  // as putObject: options only with a signal, so the resolved middleware is reused
  return options.abortSignal ? client.send(command, options) : client.send(command);
}

/** What reading a GET's body to its end found. */
export interface Drained {
  /** The bytes the body held. */
  got: number;
  /** {@linkcode monoNow} when its first chunk came, or -1 for an empty body. */
  first: number;
}

/** Bytes one read of a body may fill. */
const READ_BYTES = 256 * 1024;
/**
 * Buffers bodies are read into, reused from request to request: a read
 * takes one and hands it back at its end, so a GET allocates nothing for its
 * body however large.
 */
const readBuffers: ArrayBuffer[] = [];

/**
 * Reads a GET's body to its end, counting its bytes; copies into `into`
 * each chunk that fits whole after those before it. With `idleMs`, a body
 * that brings no byte for that long is abandoned with a TimeoutError, which
 * callers retry as transient (callers that hold the whole request to a
 * deadline of their own leave it out; the rank streams pass
 * REQUEST_IDLE_TIMEOUT_MS of tiers/s3_client.ts).
 *
 * A web stream (the fetch handler's) is read with a BYOB reader into reused
 * buffers; any other async iterable (node:http's) chunk by chunk.
 *
 * @example
 * ```ts ignore
 * const r = await getObject(client, "bucket", "key");
 * const { got } = await drainBody(r); // the body's bytes, read and dropped
 * ```
 */
export async function drainBody(
  r: GetObjectCommandOutput,
  into?: Uint8Array,
  idleMs?: number,
): Promise<Drained> {
  const body = r.Body as unknown;
  if (body === undefined || body === null) return { got: 0, first: -1 };
  const reader = byobReader(body);
  if (reader !== undefined) return await readByob(reader, into, idleMs);
  const out: Drained = { got: 0, first: -1 };
  for await (const chunk of body as AsyncIterable<Uint8Array>) {
    if (out.first < 0) out.first = monoNow();
    if (into !== undefined && out.got + chunk.byteLength <= into.byteLength) {
      into.set(chunk, out.got);
    }
    out.got += chunk.byteLength;
  }
  return out;
}

/** A BYOB reader of `body` when it is a byte stream; undefined otherwise. */
function byobReader(body: unknown): ReadableStreamBYOBReader | undefined {
  if (!(body instanceof ReadableStream)) return undefined;
  try {
    return body.getReader({ mode: "byob" });
  } catch {
    return undefined; // not a byte stream
  }
}

async function readByob(
  reader: ReadableStreamBYOBReader,
  into: Uint8Array | undefined,
  idleMs: number | undefined,
): Promise<Drained> {
  const out: Drained = { got: 0, first: -1 };
  let buffer = readBuffers.pop() ?? new ArrayBuffer(READ_BYTES);
  let last = monoNow();
  let idle = false;
  let ended = false;
  // One timer per body, moved on only when it fires: a read does not touch it.
  const check = (ms: number) => {
    const quiet = monoNow() - last;
    if (quiet < ms) {
      timer = setTimeout(check, ms - quiet, ms);
      return;
    }
    idle = true;
    reader.cancel().catch(() => {});
  };
  let timer = idleMs === undefined ? undefined : setTimeout(check, idleMs, idleMs);
  try {
    for (;;) {
      const { value, done } = await reader.read(new Uint8Array(buffer)).catch((e) => {
        throw networkError(e);
      });
      if (value !== undefined) buffer = value.buffer as ArrayBuffer;
      if (done) {
        ended = true;
        break;
      }
      last = monoNow();
      if (out.first < 0) out.first = last;
      if (into !== undefined && out.got + value.byteLength <= into.byteLength) {
        into.set(value, out.got);
      }
      out.got += value.byteLength;
    }
  } finally {
    clearTimeout(timer);
    // a stream read to its end holds nothing; releasing it would make (and drop) an Error
    if (!ended) reader.releaseLock();
    if (!buffer.detached) readBuffers.push(buffer);
  }
  if (idle) {
    const e = new Error(`no byte of the body for ${idleMs! / 1000} s`);
    e.name = "TimeoutError";
    throw e;
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
