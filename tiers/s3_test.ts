import assert from "node:assert/strict";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { ConfigError, S3Error } from "../core/errors.ts";
import { listKeys, remoteTest, testS3Client, uniquePrefix } from "../tests/_remote.ts";
import { S3Tier } from "./s3.ts";
import { MARKER } from "./scratch.ts";
import { deletePrefix } from "./s3_scratch.ts";

remoteTest("S3Tier.setup() refuses a bucket that does not exist", async (env) => {
  const tier = new S3Tier(
    { kind: "s3", path: `no-such-bucket-${crypto.randomUUID()}/x` },
    undefined,
    {
      endpoint: env.endpoint,
    },
  );
  try {
    const e = await tier.setup().catch((e) => e);
    assert.ok(e instanceof ConfigError, String(e));
    assert.equal(e.field, "tier");
    assert.match(
      e.message,
      /bucket "no-such-bucket-.*" does not exist at http:\/\/127\.0\.0\.1:7480/,
    );
  } finally {
    await tier[Symbol.asyncDispose]();
  }
});

remoteTest("S3Tier.setup() names an endpoint it cannot reach", async (env) => {
  const tier = new S3Tier({ kind: "s3", path: env.bucket }, undefined, {
    endpoint: "http://127.0.0.1:7481",
  });
  try {
    const e = await tier.setup().catch((e) => e);
    assert.ok(e instanceof S3Error, String(e));
    assert.ok(e.unreachable);
    assert.match(
      e.message,
      /^s3 HeadBucket s3:\/\/tierbench\/: ECONNREFUSED after \d attempts; cannot reach http:\/\/127\.0\.0\.1:7481/,
    );
  } finally {
    await tier[Symbol.asyncDispose]();
  }
});

remoteTest(
  "S3Tier makes a marked scratch prefix and dispose deletes everything under it",
  async (env) => {
    const base = uniquePrefix("tier");
    const client = testS3Client(env);
    try {
      let scratch: string;
      {
        await using tier = new S3Tier({ kind: "s3", path: `${env.bucket}/${base}` }, undefined, {
          endpoint: env.endpoint,
        });
        await tier.setup();
        scratch = tier.scratchPrefix;
        assert.match(scratch, new RegExp(`^${base}/tierbench-scratch-${tier.runId}/$`));
        assert.deepEqual(await listKeys(env, base), [`${scratch}${MARKER}`]);
        const facts = tier.describe();
        assert.equal(facts.direct, "not-applicable");
        assert.deepEqual(facts.s3, {
          endpoint: env.endpoint,
          region: env.region,
          bucket: env.bucket,
          scratch_prefix: scratch,
        });
        for (const key of ["a", "b/c", "d/e/f"]) {
          await client.send(
            new PutObjectCommand({
              Bucket: env.bucket,
              Key: scratch + key,
              Body: new Uint8Array(3),
            }),
          );
        }
        assert.equal((await listKeys(env, scratch)).length, 4);
      }
      assert.deepEqual(await listKeys(env, base), []);
    } finally {
      client.destroy();
    }
  },
);

remoteTest(
  "S3Tier dispose leaves a prefix alone when its marker names another run",
  async (env) => {
    const base = uniquePrefix("foreign");
    const client = testS3Client(env);
    try {
      const tier = new S3Tier({ kind: "s3", path: `${env.bucket}/${base}` }, undefined, {
        endpoint: env.endpoint,
      });
      await tier.setup();
      const scratch = tier.scratchPrefix;
      await client.send(
        new PutObjectCommand({
          Bucket: env.bucket,
          Key: scratch + MARKER,
          Body: new TextEncoder().encode('{"run_id":"someone-else"}'),
        }),
      );
      await tier[Symbol.asyncDispose]();
      assert.deepEqual(await listKeys(env, base), [`${scratch}${MARKER}`]);
      await deletePrefix(client, { endpoint: env.endpoint, region: env.region }, env.bucket, base);
    } finally {
      client.destroy();
    }
  },
);
