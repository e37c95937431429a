/**
 * End-to-end tests of cephUp() and cephDown() on the tests' shared cluster
 * (tests/_remote.ts): it serves S3 and a CephFS mount, `up` is idempotent,
 * `down` leaves nothing running. Ports are fixed, so there is one cluster
 * per machine: these tests use the shared one and leave it up for the
 * others. Skipped (loudly) where Ceph is not installed, unless `CI=true`,
 * where they must run.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { CEPH_TEST_DIR, remoteTest } from "../../../tests/_remote.ts";
import { cephDown, cephServing, cephUp } from "./cluster.ts";
import { getText, putText } from "./_test_s3.ts";

const quiet = { dir: CEPH_TEST_DIR, progress: () => {} };

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
    if (CEPH_COMMS.has(comm) && state !== "Z") {
      found.push(`${comm} (pid ${stat.slice(0, open).trim()})`);
    }
  }
  return found;
}

async function mountedAt(path: string): Promise<boolean> {
  const mounts = await run("cat", ["/proc/mounts"]);
  return mounts.split("\n").some((line) => line.split(" ")[1] === path);
}

remoteTest("cephUp() serves S3 and a CephFS mount, and a second cephUp() finds it up", async () => {
  const env = await cephUp(quiet);
  assert.equal(env.endpoint, "http://127.0.0.1:7480");
  assert.equal(env.bucket, "tierbench");
  assert.equal(env.pfsDir, join(CEPH_TEST_DIR, "mnt"));
  // A second cephUp() finds the cluster up and hands back the same credentials.
  assert.deepEqual(await cephUp(quiet), env);

  const body = `hello from tierbench ${crypto.randomUUID()}\n`;
  const key = `ceph-test-${crypto.randomUUID()}.txt`;
  await putText(env, key, body);
  assert.equal(await getText(env, key), body);

  assert.ok(await mountedAt(env.pfsDir), `${env.pfsDir} is not mounted`);
  const file = join(env.pfsDir, key);
  await Deno.writeTextFile(file, body);
  assert.equal(await Deno.readTextFile(file), body);
  await Deno.remove(file);
}, { localCluster: true });

remoteTest(
  "cephDown() leaves nothing running or mounted; cephUp() brings the cluster back",
  async () => {
    await cephDown(quiet);
    try {
      assert.deepEqual(await cephProcesses(), [], "Ceph processes still running after cephDown()");
      assert.ok(
        !await mountedAt(join(CEPH_TEST_DIR, "mnt")),
        "CephFS still mounted after cephDown()",
      );
      await assert.rejects(Deno.stat(CEPH_TEST_DIR), Deno.errors.NotFound);
      // cephDown() with nothing up succeeds too.
      await cephDown(quiet);
    } finally {
      // Up again for the other tests (with new keys: they ask remoteEnv() for them).
      await cephUp(quiet);
    }
    assert.ok(await cephServing({ dir: CEPH_TEST_DIR }));
  },
  { localCluster: true },
);
