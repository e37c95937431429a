import assert from "node:assert/strict";
import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { parseJobOptions } from "../core/config.ts";
import { runJob } from "./runner.ts";
import { HEADER_SIZE } from "../core/verify.ts";
import { S3Tier } from "../tiers/s3.ts";
import type { JobTarget } from "../tiers/types.ts";
import {
  listKeys,
  type RemoteEnv,
  remoteTest,
  testS3Client,
  uniquePrefix,
} from "../tests/_remote.ts";

const KiB = 1024;

function verifyJob(env: RemoteEnv, base: string, rw: "read" | "write" | "randread") {
  return parseJobOptions({
    tier: `s3://${env.bucket}/${base}`,
    endpoint: env.endpoint,
    rw,
    bs: "64k",
    size: "512k",
    // Objects of two blocks: reads are ranged GETs, so the offset within an object matters.
    objectSize: "128k",
    iodepth: "4",
    verify: true,
  });
}

/** An S3 tier on the test bucket under `base`, set up (disposed again if that fails). */
async function s3Tier(env: RemoteEnv, base: string): Promise<S3Tier> {
  const tier = new S3Tier({ kind: "s3", path: `${env.bucket}/${base}` }, undefined, {
    endpoint: env.endpoint,
  });
  try {
    await tier.setup();
  } catch (e) {
    await tier[Symbol.asyncDispose]();
    throw e;
  }
  return tier;
}

/** Flips every bit of the byte at `at` of an object: GET it, PUT it back changed. */
async function flipByte(client: S3Client, env: RemoteEnv, key: string, at: number) {
  const got = await client.send(new GetObjectCommand({ Bucket: env.bucket, Key: key }));
  const body = await got.Body!.transformToByteArray();
  body[at] = body[at]! ^ 0xff;
  await client.send(new PutObjectCommand({ Bucket: env.bucket, Key: key, Body: body }));
}

/** Checks that a run failed on the corruption of an object at `at`, naming both. */
function assertCaught(
  r: { status: string; error?: string | undefined },
  env: RemoteEnv,
  key: string,
  at: number,
) {
  assert.equal(r.status, "failed", `corruption at ${at} went unnoticed`);
  assert.ok(
    r.error?.includes(`verify failed on s3 s3://${env.bucket}/${key} at offset ${at}:`),
    r.error,
  );
}

remoteTest("--verify on s3: clean objects pass, written and read", async (env) => {
  const base = uniquePrefix("verify");
  {
    await using tier = await s3Tier(env, base);
    for (const rw of ["write", "read", "randread"] as const) {
      const r = await runJob(tier, verifyJob(env, base, rw));
      assert.equal(r.status, "ok", r.error);
      assert.equal(r[rw === "write" ? "write" : "read"].io_bytes, 512 * KiB);
    }
    // Objects laid out by multipart upload, parts not aligned to blocks (5 MiB parts of 768k blocks).
    const multipart = parseJobOptions({
      tier: `s3://${env.bucket}/${base}`,
      endpoint: env.endpoint,
      rw: "randread",
      bs: "768k",
      size: "6m",
      objectSize: "6m",
      partSize: "5m",
      multipartThreshold: "5m",
      verify: true,
    });
    const r = await runJob(tier, multipart);
    assert.equal(r.status, "ok", r.error);
    assert.equal(r.read.io_bytes, 6 * 1024 * KiB);
  }
  assert.deepEqual(await listKeys(env, base), []);
});

remoteTest(
  "--verify on s3: a corrupted copy PUT over a laid-out object is caught each time, at its offset",
  async (env) => {
    const base = uniquePrefix("verify");
    const client = testS3Client(env);
    try {
      const bs = 64 * KiB;
      // In obj1 (the job's bytes 128k…256k): its first header, a payload byte of its
      // second block, the header of the second block, and its last byte.
      for (const at of [0, bs + HEADER_SIZE + 777, bs, 2 * bs - 1]) {
        let key = "";
        {
          await using tier = await s3Tier(env, base);
          const r = await runJob(tier, verifyJob(env, base, "read"), {
            afterLayout: async (files: readonly JobTarget[]) => {
              key = `${files[0]!.s3!.prefix}obj1`;
              await flipByte(client, env, key, at);
            },
          });
          assertCaught(r, env, key, at);
          assert.match(r.error!, /expected 0x[0-9a-f]+, found 0x[0-9a-f]+/);
        }
        assert.deepEqual(await listKeys(env, base), []);
      }
    } finally {
      client.destroy();
    }
  },
);

remoteTest(
  "--verify on s3: an object a write run PUT, corrupted before the read-back, is caught at its offset",
  async (env) => {
    const base = uniquePrefix("verify");
    const client = testS3Client(env);
    try {
      const bs = 64 * KiB;
      for (const at of [0, HEADER_SIZE + 777, bs - 1]) {
        let key = "";
        {
          await using tier = await s3Tier(env, base);
          const r = await runJob(tier, verifyJob(env, base, "write"), {
            beforeReadBack: async (files: readonly JobTarget[]) => {
              key = `${files[0]!.s3!.writePrefix}o2`;
              await flipByte(client, env, key, at);
            },
          });
          assertCaught(r, env, key, at);
        }
        assert.deepEqual(await listKeys(env, base), []);
      }
    } finally {
      client.destroy();
    }
  },
);
