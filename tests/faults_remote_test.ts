/**
 * Faults of the remote tiers injected into real runs on the tests' own Ceph
 * cluster: a CephFS whose client stops answering (ceph-fuse frozen with
 * SIGSTOP), so a pfs run's request hangs in the kernel until --timeout.
 *
 * RGW killed, CephFS killed and Ctrl-C under an s3 run are in
 * cli/remote_test.ts; an S3 server that stops answering is in
 * tests/faults_test.ts (a loopback server, no Ceph needed).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, scratchLeft, spawnCli } from "./_helpers.ts";
import { CEPH_TEST_DIR, remoteTest, uniquePrefix } from "./_remote.ts";
import { assertFailedLine, exists, finished, waitUntil } from "./_faults.ts";
import { partialPathOf } from "../core/output_file.ts";

/** The pid of the tests' ceph-fuse, checked against /proc so no other process is signalled. */
function cephFusePid(): number {
  const pid = Number.parseInt(
    Deno.readTextFileSync(join(CEPH_TEST_DIR, "run", "client.admin.pid")).trim(),
    10,
  );
  assert.ok(Number.isSafeInteger(pid) && pid > 0, "no ceph-fuse pid file");
  assert.equal(Deno.readTextFileSync(`/proc/${pid}/comm`).trim(), "ceph-fuse");
  return pid;
}

remoteTest(
  "a CephFS that stops answering: the pfs request times out after --timeout, exit 1, the scratch directory listed for clean",
  async (env) => {
    assert.ok(env.pfsDir, "no CephFS mount");
    const dir = join(env.pfsDir, uniquePrefix("hang").replace("/", "-"));
    await Deno.mkdir(dir);
    const out = await Deno.makeTempDir({ prefix: "tierbench-faults-" });
    try {
      const output = join(out, "partial.json");
      const child = spawnCli([
        ...["run", "--quiet", "--tier", `pfs:${dir}`, "--rw", "write", "--bs", "1m"],
        ...["--size", "64m", "--runtime", "60", "--direct", "--timeout", "3"],
        ...["--output", output],
      ]);
      const fuse = cephFusePid();
      let stopped = false;
      try {
        await waitUntil(
          "the run's scratch directory",
          async () => (await scratchLeft(dir)).length > 0,
        );
        await new Promise((r) => setTimeout(r, 500));
        Deno.kill(fuse, "SIGSTOP");
        stopped = true;
        // Nothing may touch the mount now: the results go to the local disk.
        await waitUntil("the partial results", () => exists(partialPathOf(output)));
      } finally {
        if (stopped) Deno.kill(fuse, "SIGCONT");
      }
      const r = await finished(child);
      assertFailedLine(
        r,
        new RegExp(
          `^tierbench: pwrite ${dir}/tierbench-scratch-\\S+ at offset \\d+ on pfs:${dir} timed out after 3 s \\(--timeout\\): the storage stopped answering; partial results in .*partial\\.json$`,
        ),
      );
      const lines = r.stderr.trim().split("\n");
      assert.equal(lines.length, 2, r.stderr);
      assert.match(
        lines[0]!,
        new RegExp(
          `^tierbench: could not remove ${dir}/tierbench-scratch-\\S+ \\(a request timed out after 3 s\\); ` +
            `remove it later with: deno task tierbench clean --tier pfs:${dir}$`,
        ),
      );
      const doc = JSON.parse(await Deno.readTextFile(partialPathOf(output)));
      assert.equal(doc.status, "failed");
      assert.equal(doc.runs[0].options.timeout_ms, 3000);
      assert.match(doc.runs[0].error, /timed out after 3 s/);
      // With ceph-fuse running again, clean removes what the run left.
      const c = await runCli(["clean", "--tier", `pfs:${dir}`]);
      assert.equal(c.code, 0, c.stderr);
      assert.match(c.stdout.trim(), /^removed .*tierbench-scratch-/);
      assert.deepEqual(await scratchLeft(dir), []);
    } finally {
      await Deno.remove(out, { recursive: true });
      await Deno.remove(dir, { recursive: true });
    }
  },
  { localCluster: true },
);
