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
import { faultFs } from "./_faultfs.ts";
import {
  assertFailedLine,
  eioFile,
  finished,
  hangingS3,
  spawnCliWithEnv,
  STUB_CREDENTIALS,
  stubS3,
  waitUntil,
} from "./_faults.ts";
import { startFaultProxy } from "../tools/services/s3_fault_proxy.ts";
import { partialPathOf } from "../core/output_file.ts";
import { makeScratchDir, removeScratchDirWithin } from "../tiers/scratch.ts";

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

Deno.test(needing(["root", "fuse3", "libaio"], {
  name:
    "EIO on write (a FUSE file system failing one write): psync, libaio and io_uring, buffered and O_DIRECT, each exit 1 naming the file and offset, partial results kept, no scratch left",
  sanitizeResources: false,
  fn: async () => {
    const MiB = 2 ** 20;
    await using fs = await faultFs({ eioWriteAt: MiB + 4096 });
    const engines: [string, string[], string][] = [
      ["psync", ["--engine", "psync"], "pwrite"],
      ["libaio", ["--engine", "libaio", "--iodepth", "4"], "pwrite \\(libaio\\)"],
      ["io_uring", ["--engine", "io_uring", "--iodepth", "4"], "write \\(io_uring\\)"],
    ];
    await withTempDir(async (dir) => {
      for (const [name, engine, call] of engines) {
        for (const direct of [[], ["--direct"]]) {
          const label = `${name}${direct.length ? " direct" : ""}`;
          const out = join(dir, `${label.replace(" ", "-")}.json`);
          const r = await runCli([
            ...["run", "--quiet", "--tier", `file:${fs.path}`, "--rw", "write", "--bs", "64k"],
            ...["--size", "4m", ...engine, ...direct, "--output", out],
          ]);
          // the write of the block holding the failing byte: 1 MiB, where the 17th block starts
          assertFailedLine(
            r,
            new RegExp(
              `^tierbench: ${call} ${fs.path}/tierbench-scratch-\\S+/write0-job0-f0of1\\.dat at offset ${MiB}: EIO \\(Input/output error\\); the device reported an I/O error.*; partial results in \\S+\\.partial\\.json$`,
            ),
          );
          assert.equal(r.stderr.trim().split("\n").length, 1, `${label}: ${r.stderr}`);
          const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out)));
          assert.equal(doc.status, "failed", label);
          assert.match(doc.runs[0].error, /EIO/, label);
          assert.equal(doc.runs[0].options.engine, name, label);
          // What was written is counted, in whole blocks, never the failing one. psync writes one
          // block at a time: the 16 before it. libaio and io_uring (iodepth 4) had issued every
          // block up to 3 before it when it went out, and keep their other slots busy until its
          // EIO is reaped, which a loaded machine's FUSE threads may answer last.
          const written = doc.runs[0].write.io_bytes;
          assert.equal(written % 65536, 0, `${label}: ${written} bytes counted`);
          if (name === "psync") assert.equal(written, MiB, label);
          else assert.ok(written >= MiB - 3 * 65536, `${label}: ${written} bytes counted`);
          assert.ok(written <= 4 * MiB - 65536, `${label}: ${written} bytes counted`);
          assert.deepEqual(await scratchLeft(fs.path), [], label);
          console.log(`${label}: ${written} bytes counted; ${r.stderr.trim()}`);
        }
      }
    });
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

Deno.test(needing(["root", "fuse3"], {
  name:
    "a file system that stops answering during clean-up: the removal gives up after --timeout, names what is left, and tierbench clean removes it once it answers",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using fs = await faultFs({ hangRemove: true });
    await withTempDir(async (dir) => {
      const out = join(dir, "ok.json");
      const t0 = Date.now();
      // removing the run's write file when it ends gets no answer, as from a hung server
      const r = await runCli([
        ...["run", "--quiet", "--tier", `file:${fs.path}`, "--rw", "write", "--bs", "64k"],
        ...["--size", "1m", "--timeout", "2", "--output", out],
      ]);
      const took = Date.now() - t0;
      assert.equal(r.code, 0, r.stderr); // the measurement is whole: what is left is named
      assert.match(
        r.stderr.trim(),
        new RegExp(
          `^tierbench: could not remove ${fs.path}/tierbench-scratch-\\S+ \\(removing \\S+ took ` +
            `longer than 2 s \\(--timeout\\)\\); remove it later with: deno task tierbench ` +
            `clean --tier file:${fs.path}$`,
        ),
      );
      assert.equal(JSON.parse(await Deno.readTextFile(out)).status, "ok");
      assert.ok(took < 25_000, `the run took ${took} ms to give up on its clean-up`);
      // clean, while it is still frozen, gives up too and says so
      const t1 = Date.now();
      const hung = await runCli(["clean", "--tier", `file:${fs.path}`, "--timeout", "2"]);
      assert.equal(hung.code, 1, hung.stderr);
      assert.match(
        hung.stderr.trim(),
        /^tierbench: could not remove \S+tierbench-scratch-\S+: removing it took longer than 2 s \(--timeout\): the file system stopped answering; left as it is$/,
      );
      assert.ok(Date.now() - t1 < 25_000, "clean did not give up in time");
      fs.answerAgain();
      const c = await runCli(["clean", "--tier", `file:${fs.path}`]);
      assert.equal(c.code, 0, c.stderr);
      assert.match(c.stdout.trim(), /^removed .*tierbench-scratch-/);
      assert.deepEqual(await scratchLeft(fs.backing), []);
    });
  },
}));

Deno.test(needing(["root", "fuse3"], {
  name:
    "a FUSE file system told late of a file's last close (.fuse_hidden in the directory): the scratch directory is still removed",
  sanitizeResources: false,
  fn: async () => {
    await using fs = await faultFs();
    const dir = await makeScratchDir(fs.path, "r1", "file");
    await Deno.writeTextFile(join(dir, "job0.dat"), "x");
    // another process holds the file open for 300 ms: unlinking it leaves .fuse_hidden… there
    const holder = new Deno.Command("sh", {
      args: ["-c", `exec 3<"${dir}/job0.dat"; echo open; sleep 0.3`],
      stdout: "piped",
    }).spawn();
    const reader = holder.stdout.getReader();
    await reader.read();
    reader.releaseLock();
    assert.equal(await removeScratchDirWithin(dir, "r1", 10_000), "removed");
    await holder.status;
    await holder.stdout.cancel();
    assert.deepEqual(await scratchLeft(fs.backing), []);
  },
}));

Deno.test({
  name:
    "an S3 server that stops answering during clean-up: the deletion gives up after --timeout, names the prefix and the clean command, which removes it once the server answers",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s3 = stubS3();
    // listings and multi-object deletes (what clean-up sends) get no answer; the run's own
    // object requests go through
    await using proxy = await startFaultProxy({
      upstream: s3.endpoint,
      rates: { stall: 1 },
      scope: "buckets",
      methods: ["GET", "POST"],
      stallMs: 120_000,
    });
    const tier = "s3://faults/bounded";
    const env = STUB_CREDENTIALS;
    await withTempDir(async (dir) => {
      const out = join(dir, "ok.json");
      const t0 = Date.now();
      const r = await finished(spawnCliWithEnv([
        ...["run", "--quiet", "--tier", tier, "--endpoint", proxy.endpoint, "--rw", "write"],
        ...["--bs", "64k", "--size", "1m", "--timeout", "3", "--output", out],
      ], env));
      const took = Date.now() - t0;
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stderr.trim(),
        new RegExp(
          `^tierbench: could not remove ${tier}/tierbench-scratch-\\S+/ \\(\\w+ timed out after ` +
            `3 s \\(--timeout\\)\\); remove it later with: deno task tierbench clean --tier ` +
            `${tier} --endpoint ${proxy.endpoint}$`,
        ),
      );
      assert.ok(took < 25_000, `the run took ${took} ms to give up on its clean-up`);
      assert.ok((await s3.keys("faults", "bounded/")).length > 0, "nothing was left to clean");
      const hung = await finished(spawnCliWithEnv(
        ["clean", "--tier", tier, "--endpoint", proxy.endpoint, "--timeout", "3"],
        env,
      ));
      assert.equal(hung.code, 1, hung.stderr);
      assert.match(hung.stderr.trim(), /^tierbench: s3 ListObjectsV2 \S+: timed out after 3 s/);
      proxy.setRates({});
      const c = await finished(spawnCliWithEnv(
        ["clean", "--tier", tier, "--endpoint", proxy.endpoint],
        env,
      ));
      assert.equal(c.code, 0, c.stderr);
      assert.match(
        c.stdout.trim(),
        /^removed s3:\/\/faults\/bounded\/tierbench-scratch-\S+ \(\d+ objects\)$/,
      );
      assert.deepEqual(await s3.keys("faults", "bounded/"), []);
    });
  },
});
