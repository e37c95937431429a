/**
 * S3 requests the Ceph launcher's tests make with a cluster's own keys.
 *
 * @module
 */

import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { CephEnv } from "./cluster.ts";

function client(env: CephEnv): S3Client {
  return new S3Client({
    endpoint: env.endpoint,
    region: env.region,
    forcePathStyle: true,
    credentials: { accessKeyId: env.accessKeyId, secretAccessKey: env.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // One attempt: a stopped radosgw must fail the request, not be waited out.
    maxAttempts: 1,
  });
}

/** Writes an object with the cluster's keys. */
export async function putText(env: CephEnv, key: string, body: string): Promise<void> {
  const c = client(env);
  try {
    await c.send(new PutObjectCommand({ Bucket: env.bucket, Key: key, Body: body }));
  } finally {
    c.destroy();
  }
}

/** Reads an object with the cluster's keys. */
export async function getText(env: CephEnv, key: string): Promise<string> {
  const c = client(env);
  try {
    const r = await c.send(new GetObjectCommand({ Bucket: env.bucket, Key: key }));
    return await r.Body?.transformToString() ?? "";
  } finally {
    c.destroy();
  }
}
