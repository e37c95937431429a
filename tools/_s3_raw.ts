/**
 * The raw SDK loop of `deno task bench:s3`: the least a program can do to
 * GET or PUT objects with @aws-sdk/client-s3 — `depth` async loops of one
 * command each, GET bodies read to their end and dropped — counting the bytes
 * of requests that complete inside the measured window. Runs on the main
 * thread or in a Worker (tools/_s3_raw_worker.ts).
 *
 * @module
 */

import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";

/** What one raw measurement does. */
export interface RawLoopOptions {
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

/**
 * Measures one pattern with raw SDK calls; returns bytes per second over the
 * measured window.
 *
 * @example
 * ```ts ignore
 * const bw = await rawLoop({ endpoint, region: "us-east-1", bucket: "b", prefix: "p/", op: "GET",
 *   size: 1 << 20, depth: 8, objects: 8, rampMs: 1000, runtimeMs: 3000 });
 * ```
 */
export async function rawLoop(o: RawLoopOptions): Promise<number> {
  const client = new S3Client({
    endpoint: o.endpoint,
    region: o.region,
    forcePathStyle: true,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const body = randomBytes(o.size);
  try {
    const keys = Array.from({ length: o.objects }, (_, k) => `${o.prefix}get-${o.size}/obj${k}`);
    if (o.op === "GET") {
      for (const Key of keys) {
        await client.send(new PutObjectCommand({ Bucket: o.bucket, Key, Body: body }));
      }
    }
    const start = performance.now() + o.rampMs;
    const end = start + o.runtimeMs;
    let bytes = 0;
    let next = 0;
    const lane = async () => {
      while (performance.now() < end) {
        const n = next++;
        if (o.op === "GET") {
          const r = await client.send(
            new GetObjectCommand({ Bucket: o.bucket, Key: keys[n % keys.length] }),
          );
          let got = 0;
          for await (const chunk of r.Body as AsyncIterable<Uint8Array>) got += chunk.byteLength;
          if (got !== o.size) throw new Error(`GET returned ${got} of ${o.size} bytes`);
        } else {
          await client.send(
            new PutObjectCommand({ Bucket: o.bucket, Key: `${o.prefix}put/o${n}`, Body: body }),
          );
        }
        const t = performance.now();
        if (t >= start && t <= end) bytes += o.size;
      }
    };
    await Promise.all(Array.from({ length: o.depth }, lane));
    return bytes / (o.runtimeMs / 1000);
  } finally {
    client.destroy();
  }
}
