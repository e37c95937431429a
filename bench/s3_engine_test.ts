import assert from "node:assert/strict";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { parseJobOptions, type RawJobOptions } from "../core/config.ts";
import { decodeHistogram } from "../core/recorder.ts";
import { runJob } from "./runner.ts";
import {
  listKeys,
  type RemoteEnv,
  remoteTest,
  testS3Client,
  uniquePrefix,
} from "../tests/_remote.ts";
import { S3Tier } from "../tiers/s3.ts";

const MiB = 1024 * 1024;

/** An s3 tier under a fresh prefix, set up; everything under the prefix is gone afterwards. */
async function withTier(
  env: RemoteEnv,
  fn: (
    tier: S3Tier,
    job: (raw: RawJobOptions) => ReturnType<typeof parseJobOptions>,
  ) => Promise<void>,
): Promise<void> {
  const base = uniquePrefix("engine");
  const tierText = `s3://${env.bucket}/${base}`;
  {
    await using tier = new S3Tier({ kind: "s3", path: `${env.bucket}/${base}` }, undefined, {
      endpoint: env.endpoint,
    });
    await tier.setup();
    await fn(tier, (raw) => parseJobOptions({ tier: tierText, endpoint: env.endpoint, ...raw }));
  }
  assert.deepEqual(await listKeys(env, base), [], "objects left under the test's prefix");
}

remoteTest(
  "S3Engine PUTs fresh objects of bs with iodepth in flight, and release deletes them",
  async (env) => {
    await withTier(env, async (tier, job) => {
      const j = job({ rw: "write", bs: "4m", size: "32m", iodepth: "4" });
      const r = await runJob(tier, j);
      assert.equal(r.status, "ok", r.error);
      assert.equal(r.options.engine, "s3");
      assert.equal(r.options.engine_impl, "@aws-sdk/client-s3");
      assert.equal(r.write.io_bytes, 32 * MiB);
      assert.equal(r.write.total_ios, 8);
      assert.equal(r.write.lat_ns.N, 8);
      assert.equal(r.write.clat_ns.N, 8);
      assert.equal(r.write.slat_ns.N, 0, "no separate submission");
      assert.equal(r.write.ttfb_ns, undefined, "PUTs have no first byte");
      assert.equal(r.read.io_bytes, 0);
      assert.equal(r.jobs[0]?.retries, 0);
      assert.deepEqual(await listKeys(env, `${tier.scratchPrefix}w`), []);
    });
  },
);

remoteTest("S3Engine GETs whole objects and records the time to first byte", async (env) => {
  await withTier(env, async (tier, job) => {
    const j = job({ rw: "read", bs: "4m", size: "32m", iodepth: "2", numjobs: "2" });
    const r = await runJob(tier, j);
    assert.equal(r.status, "ok", r.error);
    assert.equal(r.read.io_bytes, 2 * 32 * MiB);
    assert.equal(r.read.total_ios, 16);
    const ttfb = r.read.ttfb_ns;
    assert.ok(ttfb, "ttfb_ns for GETs");
    assert.equal(ttfb.N, 16);
    assert.ok(ttfb.mean <= r.read.lat_ns.mean, "the first byte comes before the last");
    assert.equal(decodeHistogram(r.read.hist!.ttfb).totalCount, 16);
    // Each job laid out 8 objects of 4 MiB, kept for later read runs until the tier goes.
    const keys = await listKeys(env, tier.scratchPrefix);
    assert.equal(keys.filter((k) => /\/job[01]\/obj\d$/.test(k)).length, 16);
  });
});

remoteTest("S3Engine reads bs-sized ranges of larger objects with ranged GETs", async (env) => {
  await withTier(env, async (tier, job) => {
    const j = job({ rw: "randread", bs: "1m", objectSize: "8m", size: "24m", iodepth: "4" });
    const r = await runJob(tier, j);
    assert.equal(r.status, "ok", r.error);
    assert.equal(r.read.io_bytes, 24 * MiB);
    assert.equal(r.read.total_ios, 24);
    assert.equal(r.read.ttfb_ns?.N, 24);
    assert.equal(r.options.s3?.object_size, 8 * MiB);
    const keys = await listKeys(env, tier.scratchPrefix);
    assert.deepEqual(
      keys.filter((k) => k.includes("/job0/")).map((k) => k.slice(k.lastIndexOf("/") + 1)).sort(),
      ["obj0", "obj1", "obj2"],
    );
    // A second read run of the same shape reuses the objects.
    const again = await runJob(tier, j);
    assert.equal(again.status, "ok", again.error);
    assert.equal(again.read.io_bytes, 24 * MiB);
  });
});

remoteTest("S3Engine uploads objects above the multipart threshold in parts", async (env) => {
  await withTier(env, async (tier, job) => {
    const multipart = { bs: "16m", multipartThreshold: "8m", partSize: "5m", iodepth: "3" };
    const w = await runJob(tier, job({ rw: "write", size: "32m", ...multipart }));
    assert.equal(w.status, "ok", w.error);
    assert.equal(w.write.io_bytes, 32 * MiB);
    assert.equal(w.write.total_ios, 2);
    assert.deepEqual(w.options.s3, {
      object_size: 16 * MiB,
      part_size: 5 * MiB,
      multipart_threshold: 8 * MiB,
    });
    // Read objects above the threshold are laid out by multipart upload too: 4 parts each.
    const r = await runJob(tier, job({ rw: "read", size: "32m", ...multipart }));
    assert.equal(r.status, "ok", r.error);
    assert.equal(r.read.io_bytes, 32 * MiB);
    const key = (await listKeys(env, tier.scratchPrefix)).find((k) => k.endsWith("/obj0"));
    assert.ok(key);
    const client = testS3Client(env);
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket: env.bucket, Key: key }));
      assert.equal(head.ContentLength, 16 * MiB);
      assert.match(head.ETag ?? "", /-4"?$/, "a multipart ETag names its part count");
    } finally {
      client.destroy();
    }
  });
});
