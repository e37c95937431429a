import assert from "node:assert/strict";
import { profileJobs, remoteFromEnv } from "./node_profile.ts";

const base = { memoryDir: "/dev/shm", fileDir: "/data", runtime: "3", ramp: "1", size: "256m" };

Deno.test("profileJobs() runs the null tier once, then the same patterns on memory and file", () => {
  const jobs = profileJobs(base);
  assert.equal(jobs.length, 15); // null, then 7 points on each tier
  assert.equal(jobs[0]!.tier.kind, "null");
  const memory = jobs.filter((j) => j.tier.kind === "memory");
  const file = jobs.filter((j) => j.tier.kind === "file");
  assert.deepEqual(
    memory.map((j) => [j.rw, j.bs, j.iodepth]),
    file.map((j) => [j.rw, j.bs, j.iodepth]),
  );
  assert.ok(file.every((j) => j.direct), "file tier with O_DIRECT");
  assert.ok(jobs.every((j) => j.runtimeMs === 3000 && j.rampMs === 1000));
});

Deno.test("profileJobs() adds pfs and s3 points when they are configured", () => {
  const jobs = profileJobs({
    ...base,
    pfsDir: "/mnt/pfs",
    s3: "s3://b/p",
    endpoint: "http://127.0.0.1:7480",
  });
  const pfs = jobs.filter((j) => j.tier.kind === "pfs");
  const s3 = jobs.filter((j) => j.tier.kind === "s3");
  assert.equal(pfs.length, 7);
  assert.ok(pfs.every((j) => !j.direct && j.endFsync));
  assert.equal(s3.length, 4);
  assert.ok(s3.every((j) => j.s3?.endpoint === "http://127.0.0.1:7480"));
});

Deno.test("remoteFromEnv() reads TIERBENCH_PFS_DIR, TIERBENCH_S3_BUCKET and TIERBENCH_S3_ENDPOINT", () => {
  const keys = ["TIERBENCH_PFS_DIR", "TIERBENCH_S3_BUCKET", "TIERBENCH_S3_ENDPOINT"];
  const saved = keys.map((k) => Deno.env.get(k));
  try {
    Deno.env.set("TIERBENCH_PFS_DIR", "/mnt/cephfs");
    Deno.env.set("TIERBENCH_S3_BUCKET", "tierbench");
    Deno.env.set("TIERBENCH_S3_ENDPOINT", "http://127.0.0.1:7480");
    assert.deepEqual(remoteFromEnv(), {
      pfsDir: "/mnt/cephfs",
      s3: "s3://tierbench",
      endpoint: "http://127.0.0.1:7480",
    });
  } finally {
    keys.forEach((k, i) =>
      saved[i] === undefined ? Deno.env.delete(k) : Deno.env.set(k, saved[i]!)
    );
  }
});
