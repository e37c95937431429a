/**
 * End-to-end tests of stopRgw() and startRgw() on the tests' shared cluster
 * (tests/_remote.ts). Skipped (loudly) where Ceph is not installed, unless
 * `CI=true`, where they must run.
 *
 * @module
 */

import assert from "node:assert/strict";
import { CEPH_TEST_DIR, remoteTest } from "../../../tests/_remote.ts";
import { cephServing, cephUp } from "./cluster.ts";
import { startRgw, stopRgw } from "./rgw.ts";
import { getText, putText } from "./_test_s3.ts";

const quiet = { dir: CEPH_TEST_DIR, progress: () => {} };

remoteTest("stopRgw() and startRgw() stop and restart S3 and keep the objects", async () => {
  const env = await cephUp(quiet);
  const body = `kept ${crypto.randomUUID()}`;
  const key = `ceph-test-${crypto.randomUUID()}.txt`;
  await putText(env, key, body);
  await stopRgw({ dir: CEPH_TEST_DIR, signal: "SIGKILL" });
  try {
    assert.ok(!(await cephServing({ dir: CEPH_TEST_DIR })), "serving without radosgw");
    await assert.rejects(getText(env, key), /ECONNREFUSED|connect/i);
  } finally {
    await startRgw({ dir: CEPH_TEST_DIR });
  }
  assert.ok(await cephServing({ dir: CEPH_TEST_DIR }));
  assert.equal(await getText(env, key), body);
}, { localCluster: true });
