/**
 * radosgw, the cluster's S3 endpoint: waiting for it, its user and bucket,
 * and stopping and starting it for fault tests.
 *
 * @module
 */

import { BucketAlreadyOwnedByYou, CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import {
  type Layout,
  layout,
  logOf,
  MON,
  OSD,
  pidFile,
  resolveDir,
  RGW,
  S3_BUCKET,
  S3_ENDPOINT,
  S3_REGION,
  S3_USER,
  type State,
} from "./config.ts";
import { type CephServiceOptions, pidOf, startDaemon, stopOne, waitUntil } from "./daemons.ts";
import { CephError } from "./errors.ts";
import { randomKey } from "./_keyring.ts";
import { exec, message, sleep } from "./_process.ts";

/**
 * Stops radosgw (the S3 endpoint) and nothing else; the objects stay in the
 * OSD. For fault tests: {@linkcode startRgw} brings it back.
 *
 * @example
 * ```ts ignore
 * import { startRgw, stopRgw } from "./mod.ts";
 * await stopRgw({ signal: "SIGKILL" }); // S3 requests now fail with ECONNREFUSED
 * await startRgw();
 * ```
 */
export async function stopRgw(options: CephServiceOptions = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  await stopOne(l, RGW, options.signal ?? "SIGTERM");
  for (let i = 0; i < 200 && await rgwAnswers(); i++) await sleep(50);
}

/** Starts radosgw again after {@linkcode stopRgw} and waits until S3 answers. */
export async function startRgw(options: { dir?: string } = {}): Promise<void> {
  const l = layout(resolveDir(options.dir));
  if (await pidOf(l, RGW) === undefined) {
    await Deno.remove(pidFile(l, RGW)).catch(() => {});
    await startDaemon(l, RGW);
  }
  await waitUntil(l, `radosgw (${S3_ENDPOINT})`, RGW, [MON, OSD, RGW], 120_000, rgwAnswers);
}

/** Waits for radosgw, creates the S3 user and the bucket; returns the state to record. */
export async function startS3(
  l: Layout,
  want: { mgr: boolean; fs: boolean },
  say: (line: string) => void,
): Promise<State> {
  await waitUntil(l, `radosgw (${S3_ENDPOINT})`, RGW, [MON, OSD, RGW], 180_000, rgwAnswers);
  say("radosgw answers");
  const state: State = {
    accessKeyId: randomKey("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 20),
    secretAccessKey: randomKey(
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
      40,
    ),
    mgr: want.mgr,
    fs: want.fs,
  };
  await exec("radosgw-admin", [
    ...["-c", l.conf, "user", "create", `--uid=${S3_USER}`, `--display-name=${S3_USER}`],
    `--access-key=${state.accessKeyId}`,
    `--secret-key=${state.secretAccessKey}`,
  ], "radosgw-admin user create");
  await createBucket(l, state);
  say(`S3 user and bucket ${S3_BUCKET} created`);
  return state;
}

/** Creates the bucket with the user's keys (one already there, owned by the user, is fine). */
async function createBucket(l: Layout, s: State): Promise<void> {
  const client = new S3Client({
    endpoint: S3_ENDPOINT,
    region: S3_REGION,
    forcePathStyle: true,
    credentials: { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: { requestTimeout: 30_000 },
  });
  try {
    await client.send(new CreateBucketCommand({ Bucket: S3_BUCKET }));
  } catch (e) {
    if (e instanceof BucketAlreadyOwnedByYou) return;
    throw new CephError(
      `creating bucket ${S3_BUCKET} failed: ${message(e)}; see ${logOf(l, RGW)}`,
      { cause: e },
    );
  } finally {
    client.destroy();
  }
}

/** Whether radosgw answers an anonymous listing of buckets with 200. */
export async function rgwAnswers(): Promise<boolean> {
  try {
    const r = await fetch(`${S3_ENDPOINT}/`, { signal: AbortSignal.timeout(2_000) });
    await r.body?.cancel();
    return r.status === 200;
  } catch {
    return false;
  }
}
