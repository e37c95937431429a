/**
 * The CLI against remote tiers on a real local Ceph: S3 through RGW and a
 * CephFS mount, their failures (RGW killed, the CephFS client killed), and
 * credentials kept out of everything written.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { remountFs, startRgw, stopFuse, stopRgw } from "../tools/services/ceph/mod.ts";
import { type CliResult, finished, runCli, scratchLeft, sh, spawnCli } from "../tests/_helpers.ts";
import { assertOneLine } from "../tests/_cli.ts";
import { waitUntil } from "../tests/_faults.ts";
import {
  CEPH_TEST_DIR,
  listKeys,
  type RemoteEnv,
  remoteTest,
  uniquePrefix,
} from "../tests/_remote.ts";
import { partialPathOf } from "../core/output_file.ts";

const MiB = 1024 * 1024;
const FIO_FIELDS = [
  "io_bytes",
  "bw_bytes",
  "iops",
  "runtime",
  "total_ios",
  "lat_ns",
  "clat_ns",
  "slat_ns",
  "first_done",
  "last_done",
  "hist",
];

// deno-lint-ignore no-explicit-any
type Json = any;

async function withOutDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "tierbench-remote-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs the CLI, expects success, and returns the one run of its result document. */
async function runOk(args: string[], out: string): Promise<Json> {
  const r = await runCli(["run", "--quiet", ...args, "--output", out]);
  assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
  const doc = JSON.parse(await Deno.readTextFile(out));
  assert.equal(doc.status, "ok");
  assert.equal(doc.runs.length, 1);
  return doc.runs[0];
}

/** The fields every tier's results carry, in the direction that moved bytes. */
function assertFioFields(dir: Json, bytes: number): void {
  for (const k of FIO_FIELDS) assert.ok(k in dir, `missing ${k}`);
  assert.equal(dir.io_bytes, bytes);
  assert.ok(dir.bw_bytes > 0 && dir.iops > 0);
  for (const p of ["50.000000", "99.000000", "99.990000"]) {
    assert.ok(dir.lat_ns.percentile[p] > 0, `lat_ns p${p}`);
  }
  assert.equal(dir.lat_ns.N, dir.total_ios);
  assert.equal(dir.slat_ns.N, 0);
}

/** Neither secret appears in any of `texts`. */
function assertNoSecrets(env: RemoteEnv, texts: Record<string, string>): void {
  for (const [what, text] of Object.entries(texts)) {
    assert.ok(!text.includes(env.secretAccessKey), `the secret key appears in ${what}`);
    assert.ok(!text.includes(env.accessKeyId), `the access key id appears in ${what}`);
  }
}

remoteTest(
  "tierbench run --tier s3://…: PUTs at depth 8, ranged GETs and multipart write the file tiers' fields and leave nothing",
  async (env) => {
    const prefix = uniquePrefix("cli");
    const s3 = ["--tier", `s3://${env.bucket}/${prefix}`, "--endpoint", env.endpoint];
    await withOutDir(async (out) => {
      // The form, at a test's size.
      const w = await runOk(
        [...s3, "--rw", "write", "--bs", "8m", "--iodepth", "8", "--size", "64m"],
        join(out, "write.json"),
      );
      assertFioFields(w.write, 64 * MiB);
      assert.equal(w.write.total_ios, 8);
      assert.equal(w.tier.kind, "s3");
      assert.equal(w.tier.s3.endpoint, env.endpoint);
      assert.equal(w.tier.s3.bucket, env.bucket);
      assert.match(
        w.tier.scratch_dir,
        new RegExp(`^s3://${env.bucket}/${prefix}/tierbench-scratch-`),
      );
      assert.equal(w.jobs[0].retries, 0);

      const r = await runOk(
        [...s3, "--rw", "randread", "--bs", "1m", "--object-size", "8m", "--iodepth", "4"]
          .concat(["--size", "32m"]),
        join(out, "randread.json"),
      );
      assertFioFields(r.read, 32 * MiB);
      assert.equal(r.read.ttfb_ns.N, 32);
      assert.ok(r.read.ttfb_ns.percentile["50.000000"] <= r.read.lat_ns.percentile["50.000000"]);
      assert.ok("ttfb" in r.read.hist);
      assert.equal(r.options.s3.object_size, 8 * MiB);

      const m = await runOk(
        [...s3, "--rw", "write", "--bs", "16m", "--multipart-threshold", "8m", "--part-size", "5m"]
          .concat(["--iodepth", "4", "--size", "48m"]),
        join(out, "multipart.json"),
      );
      assertFioFields(m.write, 48 * MiB);
      assert.deepEqual(m.options.s3, {
        object_size: 16 * MiB,
        part_size: 5 * MiB,
        multipart_threshold: 8 * MiB,
      });
    });
    assert.deepEqual(await listKeys(env, prefix), []);
  },
);

remoteTest(
  "tierbench run --tier pfs:<CephFS>: striped writes with end_fsync and a shared-file read write the file tiers' fields and leave nothing",
  async (env) => {
    assert.ok(env.pfsDir, "no CephFS mount (TIERBENCH_PFS_DIR)");
    const dir = join(env.pfsDir, uniquePrefix("pfs").replace("/", "-"));
    await Deno.mkdir(dir);
    try {
      await withOutDir(async (out) => {
        const pfs = ["--tier", `pfs:${dir}`];
        const w = await runOk(
          [...pfs, "--rw", "write", "--bs", "1m", "--size", "32m", "--nrfiles", "2"],
          join(out, "write.json"),
        );
        assertFioFields(w.write, 32 * MiB);
        assert.equal(w.options.end_fsync, true, "pfs fsyncs at the end of a job by default");
        assert.equal(w.options.nrfiles, 2);
        assert.match(w.tier.fs.fs_type, /ceph/);
        assert.equal(w.tier.direct, "client-dependent");

        const r = await runOk(
          [...pfs, "--rw", "read", "--bs", "1m", "--size", "16m", "--numjobs", "2"]
            .concat(["--file-layout", "shared"]),
          join(out, "read.json"),
        );
        assertFioFields(r.read, 2 * 16 * MiB);
        assert.equal(r.options.file_layout, "shared");
      });
      assert.deepEqual(await Array.fromAsync(Deno.readDir(dir)), []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

remoteTest(
  "killing RGW mid-run: exit 1 with a clear error and partial results; tierbench clean removes the leftover prefix",
  async (env) => {
    const prefix = uniquePrefix("kill");
    const tier = `s3://${env.bucket}/${prefix}`;
    await withOutDir(async (out) => {
      const output = join(out, "partial.json");
      const child = spawnCli([
        ...["run", "--quiet", "--tier", tier, "--endpoint", env.endpoint, "--rw", "write"],
        ...["--bs", "1m", "--iodepth", "4", "--size", "64m", "--runtime", "60", "--output", output],
      ]);
      let r: CliResult;
      try {
        // Measuring: past the unmeasured warm-up, the run writes its numbered objects.
        await waitUntil(
          "the run to write objects",
          async () => (await listKeys(env, prefix)).filter((k) => /\/o\d+$/.test(k)).length > 4,
          60_000,
        );
        await stopRgw({ dir: CEPH_TEST_DIR, signal: "SIGKILL" });
        r = await finished(child);
      } finally {
        await startRgw({ dir: CEPH_TEST_DIR });
      }
      assert.equal(r.code, 1, r.stderr);
      const lines = r.stderr.trim().split("\n");
      assert.equal(lines.length, 2, r.stderr);
      assert.match(
        lines[0]!,
        new RegExp(
          `^tierbench: could not remove ${tier}/tierbench-scratch-\\S+/ \\(E[A-Z]+: server unreachable\\); ` +
            `remove it later with: deno task tierbench clean --tier ${tier} --endpoint ${env.endpoint}$`,
        ),
      );
      assert.match(
        lines[1]!,
        /^tierbench: s3 (PutObject|GetObject) s3:\/\/\S+: (ECONNREFUSED|ECONNRESET|EPIPE)\b.*cannot reach .*; partial results in .*partial\.json$/,
      );
      assert.doesNotMatch(r.stderr, /^\s+at /m);
      const text = await Deno.readTextFile(partialPathOf(output));
      const doc = JSON.parse(text);
      assert.equal(doc.status, "failed");
      assert.equal(doc.runs[0].status, "failed");
      assert.ok(doc.runs[0].write.io_bytes > 0, "partial figures");
      assertNoSecrets(env, { stdout: r.stdout, stderr: r.stderr, results: text });
      assert.ok((await listKeys(env, prefix)).length > 0, "the prefix is left behind");

      const c = await runCli(["clean", "--tier", tier, "--endpoint", env.endpoint]);
      assert.equal(c.code, 0, c.stderr);
      assert.match(
        c.stdout.trim(),
        new RegExp(`^removed ${tier}/tierbench-scratch-\\S+/ \\(\\d+ objects\\)$`),
      );
      assert.deepEqual(await listKeys(env, prefix), []);
    });
  },
  { localCluster: true },
);

remoteTest(
  "Ctrl-C during an s3 run: exit 1, partial results, and the scratch prefix deleted",
  async (env) => {
    const prefix = uniquePrefix("sigint");
    await withOutDir(async (out) => {
      const output = join(out, "partial.json");
      const child = spawnCli([
        ...["run", "--quiet", "--tier", `s3://${env.bucket}/${prefix}`, "--endpoint", env.endpoint],
        ...[
          "--rw",
          "randrw",
          "--bs",
          "1m",
          "--object-size",
          "4m",
          "--iodepth",
          "4",
          "--size",
          "16m",
        ],
        ...["--runtime", "60", "--output", output],
      ]);
      await waitUntil(
        "the run to write objects",
        async () => (await listKeys(env, prefix)).filter((k) => /\/o\d+$/.test(k)).length > 2,
        60_000,
      );
      child.kill("SIGINT");
      const r = await finished(child);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr.trim(),
        /^tierbench: interrupted by SIGINT; partial results in .*partial\.json; scratch files removed$/,
      );
      const doc = JSON.parse(await Deno.readTextFile(partialPathOf(output)));
      assert.equal(doc.status, "interrupted");
      assert.ok(doc.runs[0].read.io_bytes > 0 && doc.runs[0].write.io_bytes > 0);
    });
    assert.deepEqual(await listKeys(env, prefix), []);
  },
);

remoteTest(
  "stopping CephFS under a pfs run: exit 1 with one line, nothing on the local disk beneath the mount",
  async (env) => {
    const mnt = env.pfsDir;
    const dir = join(mnt, uniquePrefix("fsfault").replace("/", "-"));
    await Deno.mkdir(dir);
    await withOutDir(async (out) => {
      const output = join(out, "partial.json");
      const child = spawnCli([
        ...["run", "--quiet", "--tier", `pfs:${dir}`, "--rw", "write", "--bs", "1m"],
        ...["--size", "64m", "--runtime", "60", "--output", output],
      ]);
      let r: CliResult;
      try {
        await waitUntil(
          "the run's scratch directory",
          async () => (await scratchLeft(dir)).length > 0,
          60_000,
        );
        await new Promise((resolve) => setTimeout(resolve, 500));
        await stopFuse({ dir: CEPH_TEST_DIR, signal: "SIGKILL" });
        r = await finished(child);
        assertOneLine(
          r,
          1,
          /^tierbench: (pwrite|fsync|posix_fallocate|open)\b.*(E(NOTCONN|CONNABORTED)\b.*remount|short transfer \(short write: \d+ of \d+\)).*; partial results in /,
        );
        assert.equal(JSON.parse(await Deno.readTextFile(partialPathOf(output))).status, "failed");
        // With the dead mount detached, the directory beneath it on the local disk is empty:
        // nothing fell through to local storage.
        const u = await sh("umount", ["-l", mnt]);
        assert.equal(u.code, 0, u.out);
        assert.deepEqual(await Array.fromAsync(Deno.readDir(mnt)), []);
      } finally {
        await remountFs({ dir: CEPH_TEST_DIR });
      }
      // The run's scratch directory is still on CephFS; clean removes it now that it is mounted.
      const c = await runCli(["clean", "--tier", `pfs:${dir}`]);
      assert.equal(c.code, 0, c.stderr);
      assert.match(c.stdout.trim(), /^removed .*tierbench-scratch-/);
      assert.deepEqual(await scratchLeft(dir), []);
    });
    await Deno.remove(dir, { recursive: true });
  },
  { localCluster: true },
);

remoteTest(
  "with AWS secrets in the environment, neither appears in results, stdout or stderr",
  async (env) => {
    assert.ok(Deno.env.get("AWS_SECRET_ACCESS_KEY"), "the secret is in the environment");
    const prefix = uniquePrefix("secrets");
    await withOutDir(async (out) => {
      const output = join(out, "ok.json");
      const ok = await runCli([
        ...["run", "--tier", `s3://${env.bucket}/${prefix}`, "--endpoint", env.endpoint],
        ...[
          "--rw",
          "randrw",
          "--bs",
          "1m",
          "--object-size",
          "4m",
          "--size",
          "8m",
          "--output",
          output,
        ],
      ]);
      assert.equal(ok.code, 0, ok.stderr);
      const results = await Deno.readTextFile(output);
      assert.match(results, new RegExp(env.endpoint));
      assertNoSecrets(env, { stdout: ok.stdout, stderr: ok.stderr, results });

      const failures: [string[], number][] = [
        [["--tier", `s3://no-such-bucket-${crypto.randomUUID()}`, "--endpoint", env.endpoint], 2],
        [["--tier", `s3://${env.bucket}`, "--endpoint", "http://127.0.0.1:7481"], 1],
        [["--tier", `s3://${env.bucket}`, "--endpoint", "not a url"], 2],
      ];
      for (const [args, code] of failures) {
        const r = await runCli(["run", ...args, "--size", "1m", "--output", join(out, "f.json")]);
        assert.equal(r.code, code, r.stderr);
        assert.match(r.stderr, /^tierbench: /);
        assertNoSecrets(env, { stdout: r.stdout, stderr: r.stderr });
      }
    });
    assert.deepEqual(await listKeys(env, prefix), []);
  },
);
