/**
 * Faults injected into real runs of the CLI on this machine (no Ceph): EIO
 * from a real file system, an S3 server that stops answering (the
 * per-request timeout), SIGTERM under `workload` and `contention`.
 *
 * Faults covered elsewhere, not repeated here (see docs/reliability.md):
 * ENOSPC and SIGINT/SIGTERM under `run` (cli/run_test.ts), SIGINT under
 * `workload` (cli/workload_test.ts), RGW killed, CephFS stopped and SIGINT
 * under an s3 run (cli/remote_test.ts); a hung CephFS is in
 * tests/faults_remote_test.ts.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, scratchLeft, spawnCli, withTempDir } from "./_helpers.ts";
import { needing } from "./_requirements.ts";
import {
  assertFailedLine,
  eioFile,
  finished,
  hangingS3,
  spawnCliWithEnv,
  waitUntil,
} from "./_faults.ts";
import { partialPathOf } from "../core/output_file.ts";

Deno.test(needing(["root", "btrfs"], {
  name: "EIO on read: exit 1 naming the file and offset, partial results, no scratch left",
  fn: async () => {
    await using bad = await eioFile();
    for (const engine of [["--engine", "psync"], ["--engine", "libaio", "--iodepth", "4"]]) {
      await withTempDir(async (dir) => {
        const out = join(dir, "partial.json");
        const r = await runCli([
          ...["run", "--quiet", "--tier", `file:${dir}`, "--filename", bad.file, "--rw", "read"],
          ...["--bs", "64k", "--size", String(bad.size), "--direct", ...engine, "--output", out],
        ]);
        assertFailedLine(
          r,
          new RegExp(
            `^tierbench: pread( \\(libaio\\))? ${bad.file} at offset \\d+: EIO \\(Input/output error\\).*; partial results in .*partial\\.json$`,
          ),
        );
        assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
        const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out)));
        assert.equal(doc.status, "failed");
        assert.equal(doc.runs[0].status, "failed");
        assert.match(doc.runs[0].error, /EIO/);
        assert.deepEqual(await scratchLeft(dir), []);
      });
    }
  },
}));

Deno.test("the per-request timeout is stated in the results: 30 s by default, --timeout otherwise", async () => {
  await withTempDir(async (dir) => {
    for (const [args, ms] of [[[], 30_000], [["--timeout", "2.5"], 2_500]] as const) {
      const out = join(dir, "null.json");
      const r = await runCli(["run", "--tier", "null:", "--size", "1m", ...args, "--output", out]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(await Deno.readTextFile(out)).runs[0].options.timeout_ms, ms);
    }
    const bad = await runCli(["run", "--tier", "null:", "--timeout", "soon"]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr.trim(), /^tierbench: --timeout: "soon" is not a duration/);
  });
});

Deno.test({
  name:
    "an S3 server that stops answering: the request times out after --timeout, exit 1, nothing left",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s3 = hangingS3();
    await withTempDir(async (dir) => {
      const out = join(dir, "partial.json");
      const tier = "s3://faults/hang";
      const r = await finished(spawnCliWithEnv([
        ...["run", "--quiet", "--tier", tier, "--endpoint", s3.endpoint, "--rw", "write"],
        ...["--bs", "64k", "--iodepth", "2", "--size", "1m", "--runtime", "60"],
        ...["--timeout", "2", "--output", out],
      ], {
        AWS_ACCESS_KEY_ID: "tierbench-faults",
        AWS_SECRET_ACCESS_KEY: "tierbench-faults-secret",
        AWS_REGION: "us-east-1",
      }));
      assertFailedLine(
        r,
        /^tierbench: s3 PutObject s3:\/\/faults\/hang\/tierbench-scratch-\S+\/o\d+: timed out after 2 s \(--timeout\); partial results in .*partial\.json$/,
      );
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.ok(s3.held > 0, "no request was held");
      const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out)));
      assert.equal(doc.status, "failed");
      assert.equal(doc.runs[0].options.timeout_ms, 2000);
      assert.match(doc.runs[0].error, /timed out after 2 s/);
      // The marker, the warm-up objects: every object the run stored is gone.
      assert.deepEqual(await s3.keys(), []);
    });
  },
});

for (
  const [command, args] of [
    [
      "workload",
      (a: string, _b: string) => [
        ...["workload", "zero-infinity", "--model", "70b", "--scale", "0.001"],
        ...["--iterations", "50", "--tiers", `file:${a}`],
      ],
    ],
    [
      "contention",
      (a: string, b: string) => [
        ...["contention", "--tiers", `file:${a},file:${b}`, "--runtime", "30", "--ramp", "0"],
        ...["--size", "16m"],
      ],
    ],
  ] as const
) {
  Deno.test(`tierbench ${command}: SIGTERM writes partial results, removes scratch files, exits 1`, async () => {
    await withTempDir(async (a) => {
      await withTempDir(async (b) => {
        const out = join(a, "partial.json");
        const child = spawnCli([...args(a, b), "--quiet", "--output", out]);
        await waitUntil(
          "the run's scratch directory",
          async () => (await scratchLeft(a)).length > 0,
        );
        // Let it get going before the signal: a moment of I/O, not a timed assertion.
        await new Promise((r) => setTimeout(r, 1500));
        child.kill("SIGTERM");
        const r = await finished(child);
        assertFailedLine(
          r,
          /^tierbench: interrupted by SIGTERM; partial results in .*partial\.json; scratch files removed$/,
        );
        assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
        assert.equal(JSON.parse(await Deno.readTextFile(partialPathOf(out))).status, "interrupted");
        assert.deepEqual(await scratchLeft(a), []);
        assert.deepEqual(await scratchLeft(b), []);
      });
    });
  });
}
