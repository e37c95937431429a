/**
 * Scratch prefixes in a bucket, as scratch directories are on file systems:
 * `PREFIX/tierbench-scratch-<run id>/` holding a marker object that names the
 * run, its host and process. Everything under a prefix is deleted only when
 * its marker is there and names the expected run.
 *
 * @module
 */

import {
  AbortMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { MARKER, SCRATCH_PREFIX, type ScratchMarker } from "./scratch.ts";
import { s3ErrorFrom, type S3Location, sendWithin, withBodyRetries } from "./s3_client.ts";
import { S3Error } from "../core/errors.ts";

/** The key prefix of a run's scratch area under `basePrefix` (`""` for the bucket root). */
export function scratchPrefixOf(basePrefix: string, runId: string): string {
  return `${basePrefix === "" ? "" : `${basePrefix}/`}${SCRATCH_PREFIX}${runId}/`;
}

/** Writes the marker object of a new scratch prefix, each request bounded by `timeoutMs`. */
export async function putScratchMarker(
  client: S3Client,
  loc: S3Location,
  bucket: string,
  prefix: string,
  runId: string,
  timeoutMs?: number,
): Promise<void> {
  const marker: ScratchMarker = {
    run_id: runId,
    host: Deno.hostname(),
    pid: Deno.pid,
    created: new Date().toISOString(),
  };
  const key = prefix + MARKER;
  await sendWithin(timeoutMs, { operation: "PutObject", bucket, key, loc }, (o) =>
    client.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: new TextEncoder().encode(JSON.stringify(marker) + "\n"),
        ContentType: "application/json",
      }),
      o,
    ));
}

/**
 * The marker of a scratch prefix; undefined when it has none (or not a
 * readable one). The request is bounded by `timeoutMs`.
 */
export async function readScratchMarker(
  client: S3Client,
  loc: S3Location,
  bucket: string,
  prefix: string,
  timeoutMs?: number,
): Promise<ScratchMarker | undefined> {
  const key = prefix + MARKER;
  let text: string;
  try {
    const ctx = { operation: "GetObject", bucket, key, loc };
    text = await sendWithin(timeoutMs, ctx, (o) =>
      withBodyRetries(
        ctx,
        () => client.send(new GetObjectCommand({ Bucket: bucket, Key: key }), o),
        async (r) => await r.Body?.transformToString() ?? "",
      ));
  } catch (e) {
    if (e instanceof S3Error && (e.code === "NoSuchKey" || e.code === "NotFound")) {
      return undefined;
    }
    throw e;
  }
  try {
    const m = JSON.parse(text);
    return typeof m?.run_id === "string" ? m as ScratchMarker : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The scratch prefixes directly under `basePrefix` (each ends with "/"),
 * whether or not they hold a marker; each request bounded by `timeoutMs`.
 */
export async function listScratchPrefixes(
  client: S3Client,
  loc: S3Location,
  bucket: string,
  basePrefix: string,
  timeoutMs?: number,
): Promise<string[]> {
  const under = `${basePrefix === "" ? "" : `${basePrefix}/`}${SCRATCH_PREFIX}`;
  const found: string[] = [];
  let token: string | undefined;
  do {
    const r = await sendWithin(
      timeoutMs,
      { operation: "ListObjectsV2", bucket, key: under, loc },
      (o) =>
        client.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: under,
            Delimiter: "/",
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
          o,
        ),
    );
    for (const p of r.CommonPrefixes ?? []) if (p.Prefix) found.push(p.Prefix);
    token = r.IsTruncated ? r.NextContinuationToken : undefined;
  } while (token !== undefined);
  return found;
}

/** How many keys one DeleteObjects request may name. */
const DELETE_BATCH = 1000;

/**
 * Deletes every object under `prefix` and aborts every multipart upload under
 * it, each request bounded by `timeoutMs` (a server that stops answering
 * fails the deletion at its first request that outlives it). The marker, if
 * `keepLast` names it, goes last, so an interrupted deletion can be finished
 * later by `tierbench clean`. Returns the number of objects deleted.
 */
export async function deletePrefix(
  client: S3Client,
  loc: S3Location,
  bucket: string,
  prefix: string,
  keepLast?: string,
  timeoutMs?: number,
): Promise<number> {
  const at: PrefixAt = { client, loc, bucket, prefix, timeoutMs };
  await abortUploads(at);
  return await deleteObjects(at, keepLast);
}

/** Where {@linkcode deletePrefix} works and how long each of its requests may take. */
interface PrefixAt {
  readonly client: S3Client;
  readonly loc: S3Location;
  readonly bucket: string;
  readonly prefix: string;
  readonly timeoutMs: number | undefined;
}

/** Aborts every multipart upload under the prefix, page by page (one gone already is fine). */
async function abortUploads({ client, loc, bucket, prefix, timeoutMs }: PrefixAt): Promise<void> {
  let uploadMarker: { key?: string; id?: string } = {};
  for (;;) {
    const r = await sendWithin(
      timeoutMs,
      { operation: "ListMultipartUploads", bucket, key: prefix, loc },
      (o) =>
        client.send(
          new ListMultipartUploadsCommand({
            Bucket: bucket,
            Prefix: prefix,
            ...(uploadMarker.key === undefined ? {} : { KeyMarker: uploadMarker.key }),
            ...(uploadMarker.id === undefined ? {} : { UploadIdMarker: uploadMarker.id }),
          }),
          o,
        ),
    );
    for (const u of r.Uploads ?? []) {
      if (!u.Key || !u.UploadId) continue;
      try {
        await sendWithin(
          timeoutMs,
          { operation: "AbortMultipartUpload", bucket, key: u.Key, loc },
          (o) =>
            client.send(
              new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.Key, UploadId: u.UploadId }),
              o,
            ),
        );
      } catch (e) {
        if (e instanceof S3Error && e.code === "NoSuchUpload") continue;
        throw e;
      }
    }
    if (!r.IsTruncated) break;
    uploadMarker = {
      ...(r.NextKeyMarker ? { key: r.NextKeyMarker } : {}),
      ...(r.NextUploadIdMarker ? { id: r.NextUploadIdMarker } : {}),
    };
  }
}

/**
 * Deletes the objects under the prefix a listing page at a time, `keepLast`
 * after all the others; returns how many it deleted.
 */
async function deleteObjects(at: PrefixAt, keepLast: string | undefined): Promise<number> {
  const { client, loc, bucket, prefix, timeoutMs } = at;
  let deleted = 0;
  let last = false;
  let previous: string | undefined;
  for (;;) {
    // List from the start each time: the previous page is gone.
    const r = await sendWithin(
      timeoutMs,
      { operation: "ListObjectsV2", bucket, key: prefix, loc },
      (o) =>
        client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, MaxKeys: DELETE_BATCH }),
          o,
        ),
    );
    const keys = (r.Contents ?? []).map((o) => o.Key).filter((k): k is string => !!k);
    const batch = keys.filter((k) => k !== keepLast);
    if (batch.length === 0) {
      if (keys.length === 0) break;
      last = true; // only the marker is left
    }
    const objects = (last ? keys : batch).map((Key) => ({ Key }));
    if (objects[0]?.Key === previous) {
      throw s3ErrorFrom(new Error(`${previous} is still listed after its deletion`), {
        operation: "DeleteObjects",
        bucket,
        key: prefix,
        loc,
      });
    }
    previous = objects[0]?.Key;
    await deleteBatch(at, objects);
    deleted += objects.length;
    if (last) break;
  }
  return deleted;
}

/** One DeleteObjects request; the first key it could not delete fails it. */
async function deleteBatch(
  { client, loc, bucket, prefix, timeoutMs }: PrefixAt,
  objects: { Key: string }[],
): Promise<void> {
  const ctx = { operation: "DeleteObjects", bucket, key: prefix, loc };
  const d = await sendWithin(timeoutMs, ctx, (o) =>
    client.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } }),
      o,
    ));
  const failed = d.Errors?.[0];
  if (failed) {
    throw s3ErrorFrom(
      Object.assign(new Error(failed.Message ?? "delete failed"), {
        name: failed.Code ?? "DeleteFailed",
      }),
      ctx,
    );
  }
}
