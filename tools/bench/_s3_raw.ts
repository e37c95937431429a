/**
 * The raw loops of `deno task bench:s3`: the least a program can do to GET
 * or PUT objects of one size at one concurrency — `depth` async loops of one
 * request each, GET bodies read to their end and dropped — counting the bytes
 * of requests that complete inside the measured window, with one of three
 * clients:
 *
 * - `http`: unsigned HTTP through Deno's fetch, GET bodies read with a BYOB
 *   reader into a buffer per loop, PUT bodies handed to fetch as the s3
 *   tier hands them (`fetchBody`: the bytes as they are, no copy): the
 *   loopback ceiling (a server that checks signatures refuses it);
 * - `sdk`: @aws-sdk/client-s3 as it comes (its NodeHttpHandler on Deno's
 *   node:http, the body of each PUT hashed for its signature);
 * - `sdk-fetch`: the same SDK with its FetchHttpHandler (Deno's fetch).
 *
 * Runs in a Worker (tools/bench/_s3_raw_worker.ts), as tierbench's jobs do.
 *
 * @module
 */

import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { FetchHttpHandler } from "@smithy/fetch-http-handler";
import process from "node:process";
import { fetchBody } from "../../tiers/s3_client.ts";

/** Which client a raw loop uses. */
export type RawClient = "http" | "sdk" | "sdk-fetch";

/** What one raw measurement does. */
export interface RawLoopOptions {
  readonly client: RawClient;
  readonly endpoint: string;
  readonly region: string;
  readonly bucket: string;
  /** Key prefix (ends with "/"): GETs read `<prefix>get-<size>/obj<k>`, PUTs write `<prefix>put/o<n>`. */
  readonly prefix: string;
  readonly op: "GET" | "PUT";
  readonly size: number;
  readonly depth: number;
  /** Objects GETs cycle over (PUT first, unmeasured). */
  readonly objects: number;
  readonly rampMs: number;
  readonly runtimeMs: number;
}

function randomBytes(n: number): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(n);
  for (let at = 0; at < n; at += 65536) crypto.getRandomValues(b.subarray(at, at + 65536));
  return b;
}

/** One request of a loop: GET `key` (checking its size) or PUT `body` as it. */
type Request = (key: string, body: Uint8Array<ArrayBuffer>) => Promise<void>;

/** Reads a body to its end with a BYOB reader into `buffer`: its bytes, and the buffer back. */
async function readByob(
  body: ReadableStream<Uint8Array>,
  buffer: ArrayBuffer,
): Promise<{ got: number; buffer: ArrayBuffer }> {
  const reader = body.getReader({ mode: "byob" });
  let got = 0;
  for (;;) {
    const { value, done } = await reader.read(new Uint8Array(buffer));
    if (value !== undefined) buffer = value.buffer as ArrayBuffer;
    if (done) return { got, buffer };
    got += value.byteLength;
  }
}

/** Unsigned HTTP through fetch; `lane` keeps each loop's read buffer. */
function httpRequests(o: RawLoopOptions): (lane: { buffer: ArrayBuffer }) => Request {
  const url = (key: string) => `${o.endpoint}/${o.bucket}/${key}`;
  return (lane) => async (key, body) => {
    const res = await fetch(
      url(key),
      o.op === "GET" ? {} : { method: "PUT", body: fetchBody(body) },
    );
    if (!res.ok) throw new Error(`${o.op} ${key}: HTTP ${res.status}`);
    if (o.op === "PUT" || res.body === null) {
      await res.body?.cancel();
      return;
    }
    const r = await readByob(res.body, lane.buffer);
    lane.buffer = r.buffer;
    if (r.got !== o.size) throw new Error(`GET returned ${r.got} of ${o.size} bytes`);
  };
}

function sdkClient(o: RawLoopOptions): S3Client {
  return new S3Client({
    endpoint: o.endpoint,
    region: o.region,
    forcePathStyle: true,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    ...(o.client === "sdk-fetch" ? { requestHandler: new FetchHttpHandler() } : {}),
  });
}

function sdkRequests(o: RawLoopOptions, client: S3Client): Request {
  return async (Key, Body) => {
    if (o.op === "PUT") {
      await client.send(new PutObjectCommand({ Bucket: o.bucket, Key, Body }));
      return;
    }
    const r = await client.send(new GetObjectCommand({ Bucket: o.bucket, Key }));
    let got = 0;
    for await (const chunk of r.Body as AsyncIterable<Uint8Array>) got += chunk.byteLength;
    if (got !== o.size) throw new Error(`GET returned ${got} of ${o.size} bytes`);
  };
}

/** What one raw measurement found. */
export interface RawFigures {
  /** Bytes per second over the measured window. */
  readonly bw: number;
  /**
   * CPU time of the whole process (every thread, getrusage RUSAGE_SELF) over
   * the measured window divided by the requests completed in it, in ns;
   * NaN when none completed.
   */
  readonly cpuNsPerRequest: number;
}

/**
 * Measures one pattern with one raw client: its bandwidth, and its process
 * CPU per request, over the measured window.
 *
 * @example
 * ```ts ignore
 * const bw = await rawLoop({ client: "http", endpoint, region: "us-east-1", bucket: "b",
 *   prefix: "p/", op: "GET", size: 1 << 20, depth: 8, objects: 8, rampMs: 1000, runtimeMs: 3000 });
 * ```
 */
export async function rawLoop(o: RawLoopOptions): Promise<RawFigures> {
  const client = sdkClient(o);
  const body = randomBytes(o.size);
  try {
    const keys = Array.from({ length: o.objects }, (_, k) => `${o.prefix}get-${o.size}/obj${k}`);
    if (o.op === "GET") {
      for (const Key of keys) {
        await client.send(new PutObjectCommand({ Bucket: o.bucket, Key, Body: body }));
      }
    }
    const http = o.client === "http" ? httpRequests(o) : undefined;
    const start = performance.now() + o.rampMs;
    const end = start + o.runtimeMs;
    let bytes = 0;
    let next = 0;
    let cpu0: ReturnType<typeof process.cpuUsage> | undefined;
    let cpu: ReturnType<typeof process.cpuUsage> | undefined;
    const t0 = setTimeout(() => (cpu0 = process.cpuUsage()), start - performance.now());
    const t1 = setTimeout(() => (cpu = process.cpuUsage(cpu0)), end - performance.now());
    const lane = async () => {
      const request = http?.({ buffer: new ArrayBuffer(256 * 1024) }) ?? sdkRequests(o, client);
      while (performance.now() < end) {
        const n = next++;
        await request(o.op === "GET" ? keys[n % keys.length]! : `${o.prefix}put/o${n}`, body);
        const t = performance.now();
        if (t >= start && t <= end) bytes += o.size;
      }
    };
    await Promise.all(Array.from({ length: o.depth }, lane)).finally(() => {
      clearTimeout(t0);
      clearTimeout(t1);
    });
    // the last request may end before the timer at the window's end has run
    if (cpu === undefined && cpu0 !== undefined) cpu = process.cpuUsage(cpu0);
    const requests = bytes / o.size;
    const cpuNs = cpu === undefined ? NaN : (cpu.user + cpu.system) * 1000;
    return {
      bw: bytes / (o.runtimeMs / 1000),
      cpuNsPerRequest: requests > 0 ? cpuNs / requests : NaN,
    };
  } finally {
    client.destroy();
  }
}
