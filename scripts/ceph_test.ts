/**
 * End-to-end test of scripts/ceph.ts: a real single-node Ceph cluster serves
 * S3 and a CephFS mount, and `cephDown()` leaves nothing behind. Skipped
 * (loudly) where Ceph is not installed, unless `CI=true`, where it must run.
 *
 * @module
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { cephDown, cephUp, INSTALL_COMMAND } from "./ceph.ts";

const installed = await Deno.stat("/usr/bin/ceph-mon").then(() => true, () => false);
const ignore = !installed && Deno.env.get("CI") !== "true";
if (ignore) {
  console.warn(`skipping the Ceph test: ceph-mon is not installed; run: ${INSTALL_COMMAND}`);
}

/** Daemon names as /proc/PID/comm spells them. */
const CEPH_COMMS = new Set([
  "ceph-mon",
  "ceph-mgr",
  "ceph-osd",
  "ceph-mds",
  "ceph-fuse",
  "radosgw",
]);

/** Runs a command; fails with its stderr unless `check` is false. */
async function run(cmd: string, args: string[], check = true): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder();
  if (check && !out.success) {
    throw new Error(`${cmd} exited with ${out.code}: ${text.decode(out.stderr).trim()}`);
  }
  return text.decode(out.stdout);
}

/**
 * Live (not zombie) processes of any Ceph daemon on the machine. Deno reads
 * /proc only under --allow-all, so `cat` does it.
 */
async function cephProcesses(): Promise<string[]> {
  const stats = await run("sh", ["-c", "cat /proc/[0-9]*/stat 2>/dev/null"], false);
  const found: string[] = [];
  for (const stat of stats.split("\n")) {
    const open = stat.indexOf("(");
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(open + 1, close);
    const state = stat.slice(close + 2, close + 3);
    if (CEPH_COMMS.has(comm) && state !== "Z") found.push(`${comm} (pid ${stat.slice(0, open)})`);
  }
  return found;
}

async function mountedAt(path: string): Promise<boolean> {
  const mounts = await run("cat", ["/proc/mounts"]);
  return mounts.split("\n").some((line) => line.split(" ")[1] === path);
}

Deno.test({
  name: "cephUp() serves S3 and a CephFS mount, cephDown() leaves nothing running",
  ignore,
  async fn() {
    const dir = `/tmp/tierbench-ceph-test-${Deno.pid}`;
    const quiet = { dir, progress: () => {} };
    try {
      const env = await cephUp({ ...quiet, fs: true });
      assert.equal(env.endpoint, "http://127.0.0.1:7480");
      assert.equal(env.bucket, "tierbench");
      assert.equal(env.pfsDir, join(dir, "mnt"));

      // A second cephUp() finds the cluster up and hands back the same credentials.
      assert.deepEqual(await cephUp({ ...quiet, fs: true }), env);

      // S3: a SigV4-signed PUT and GET through RGW. curl 7.88 (Debian 12) does not send the
      // payload hash itself, so it is given.
      const body = `hello from tierbench ${crypto.randomUUID()}\n`;
      const sha256 = createHash("sha256").update(body).digest("hex");
      const url = `${env.endpoint}/${env.bucket}/ceph-test.txt`;
      const sign = [
        ...["--aws-sigv4", `aws:amz:${env.region}:s3`],
        ...["--user", `${env.accessKeyId}:${env.secretAccessKey}`],
      ];
      await run("curl", [
        ...["-sS", "--fail-with-body", "-X", "PUT", ...sign, "--data-binary", body],
        ...["-H", `x-amz-content-sha256: ${sha256}`, url],
      ]);
      const emptySha256 = createHash("sha256").update("").digest("hex");
      const got = await run("curl", [
        ...["-sS", "--fail-with-body", ...sign, "-H", `x-amz-content-sha256: ${emptySha256}`, url],
      ]);
      assert.equal(got, body);

      // CephFS: a file written through the mount reads back.
      assert.ok(await mountedAt(env.pfsDir), `${env.pfsDir} is not mounted`);
      const file = join(env.pfsDir, "ceph-test.txt");
      await Deno.writeTextFile(file, body);
      assert.equal(await Deno.readTextFile(file), body);
      await Deno.remove(file);
    } finally {
      await cephDown(quiet);
    }

    assert.deepEqual(await cephProcesses(), [], "Ceph processes still running after cephDown()");
    assert.ok(!await mountedAt(join(dir, "mnt")), "CephFS still mounted after cephDown()");
    await assert.rejects(Deno.stat(dir), Deno.errors.NotFound, `${dir} still exists`);

    // cephDown() with nothing up succeeds too.
    await cephDown(quiet);
  },
});
