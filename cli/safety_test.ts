/**
 * Safety: raw devices are never written (and read only with
 * `--allow-device`), and credentials never appear in what tierbench prints or
 * writes, on success and on failure.
 *
 * @module
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { runCli, scratchLeft, sh, withTempDir } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";
import { listKeys, type RemoteEnv, remoteTest, uniquePrefix } from "../tests/_remote.ts";

import { MARKER, SCRATCH_PREFIX } from "../tiers/scratch.ts";

const MiB = 1024 * 1024;

/** A loop device over a 16 MiB image of random bytes in `dir`, detached when disposed. */
async function loopDevice(dir: string): Promise<{ dev: string; image: string } & AsyncDisposable> {
  const image = join(dir, "disk.img");
  const bytes = new Uint8Array(16 * MiB);
  for (let i = 0; i < bytes.length; i += 65536) {
    crypto.getRandomValues(bytes.subarray(i, i + 65536));
  }
  await Deno.writeFile(image, bytes);
  const r = await sh("losetup", ["--find", "--show", image]);
  if (r.code !== 0) throw new Error(`losetup failed: ${r.out.trim()}`);
  const dev = r.out.trim();
  return {
    dev,
    image,
    async [Symbol.asyncDispose]() {
      await sh("losetup", ["-d", dev]);
    },
  };
}

/** A checksum of a file's bytes (the loop device's image: unchanged means never written). */
async function checksum(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** One line on stderr, prefixed, naming `flag`, and no stack trace. */
function assertOneLine(stderr: string, flag: string): void {
  const lines = stderr.trim().split("\n");
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0]!, /^tierbench: /);
  assert.ok(lines[0]!.includes(flag), `"${flag}" not named: ${stderr}`);
  assert.doesNotMatch(stderr, /^\s+at |error: Uncaught/m);
}

Deno.test(needing(["root"], {
  name:
    "tierbench run: a tier on a block device, or a symlink to one, exits 2 naming --allow-device and never writes it",
  async fn() {
    await withTempDir(async (dir) => {
      await using loop = await loopDevice(dir);
      const before = await checksum(loop.image);
      const link = join(dir, "nvme-link");
      await Deno.symlink(loop.dev, link);
      for (const tier of [`file:${loop.dev}`, `file:${link}`, `pfs:${link}`]) {
        for (const allow of [[], ["--allow-device"]]) {
          const r = await runCli([
            ...["run", "--quiet", "--tier", tier, "--rw", "write", "--bs", "1m", "--size", "4m"],
            ...[...allow, "--output", join(dir, "out.json")],
          ]);
          assert.equal(r.code, 2, `${tier} ${allow}: ${r.stderr}`);
          assertOneLine(r.stderr, "--allow-device");
          assert.match(r.stderr, /block device/);
        }
      }
      assert.equal(await checksum(loop.image), before, "the device's bytes changed");
      assert.deepEqual(await scratchLeft(dir), []);
      await assert.rejects(Deno.stat(join(dir, "out.json")), Deno.errors.NotFound);
    });
  },
}));

Deno.test("tierbench run: a tier on a character device (/dev/null) exits 2 naming --allow-device", async () => {
  await withTempDir(async (dir) => {
    const r = await runCli([
      ...["run", "--quiet", "--tier", "memory:/dev/null", "--rw", "write", "--size", "1m"],
      ...["--output", join(dir, "out.json")],
    ]);
    assert.equal(r.code, 2, r.stderr);
    assertOneLine(r.stderr, "--allow-device");
    assert.match(r.stderr, /\/dev\/null is a character device/);
  });
});

Deno.test(needing(["root"], {
  name:
    "tierbench run --filename DEVICE: exit 2 without --allow-device; with it the device is only read",
  async fn() {
    await withTempDir(async (dir) => {
      await using loop = await loopDevice(dir);
      const before = await checksum(loop.image);
      const base = ["run", "--quiet", "--tier", `file:${dir}`, "--filename", loop.dev];
      const sized = ["--bs", "1m", "--size", "8m", "--direct"];

      const refused = await runCli([...base, ...sized, "--output", join(dir, "no.json")]);
      assert.equal(refused.code, 2, refused.stderr);
      assertOneLine(refused.stderr, "--allow-device");
      await assert.rejects(Deno.stat(join(dir, "no.json")), Deno.errors.NotFound);

      const write = await runCli([...base, ...sized, "--allow-device", "--rw", "randwrite"]);
      assert.equal(write.code, 2, write.stderr);
      assertOneLine(write.stderr, "--filename");
      assert.match(write.stderr, /allowed: read, randread/);

      const output = join(dir, "read.json");
      const ok = await runCli([
        ...[...base, ...sized, "--allow-device", "--rw", "randread", "--output", output],
      ]);
      assert.equal(ok.code, 0, ok.stderr);
      const doc = JSON.parse(await Deno.readTextFile(output));
      assert.equal(doc.runs[0].read.io_bytes, 8 * MiB);
      assert.equal(doc.runs[0].write.io_bytes, 0);

      const tooBig = await runCli([
        ...[...base, "--bs", "1m", "--size", "32m", "--allow-device", "--output", output],
      ]);
      assert.equal(tooBig.code, 2, tooBig.stderr);
      assertOneLine(tooBig.stderr, "--filename");
      assert.match(tooBig.stderr, new RegExp(`${16 * MiB} bytes, smaller than --size`));

      assert.equal(await checksum(loop.image), before, "the device's bytes changed");
      assert.deepEqual(await scratchLeft(dir), []);
    });
  },
}));

Deno.test("tierbench run: --allow-device reads block devices only, and only with --filename", async () => {
  await withTempDir(async (dir) => {
    const chr = await runCli([
      ...["run", "--quiet", "--tier", `file:${dir}`, "--filename", "/dev/zero"],
      ...["--allow-device", "--size", "1m", "--output", join(dir, "o.json")],
    ]);
    assert.equal(chr.code, 2, chr.stderr);
    assertOneLine(chr.stderr, "--allow-device");
    assert.match(chr.stderr, /character device/);

    const alone = await runCli([
      ...["run", "--quiet", "--tier", `file:${dir}`, "--allow-device", "--size", "1m"],
      ...["--output", join(dir, "o.json")],
    ]);
    assert.equal(alone.code, 2, alone.stderr);
    assertOneLine(alone.stderr, "--allow-device");
    assert.match(alone.stderr, /--filename/);
    await assert.rejects(Deno.stat(join(dir, "o.json")), Deno.errors.NotFound);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

/** None of `secrets` appears in any of `texts`. */
function assertNoneOf(secrets: Record<string, string>, texts: Record<string, string>): void {
  for (const [what, text] of Object.entries(texts)) {
    for (const [name, secret] of Object.entries(secrets)) {
      assert.ok(secret.length >= 8, `${name} is too short to look for`);
      assert.ok(!text.includes(secret), `${name} appears in ${what}`);
    }
  }
}

/** stdout, stderr and every file in the result's directory (results, partial results). */
async function outputsOf(
  r: { stdout: string; stderr: string },
  output: string,
): Promise<Record<string, string>> {
  const texts: Record<string, string> = { stdout: r.stdout, stderr: r.stderr };
  for await (const e of Deno.readDir(dirname(output))) {
    if (e.isFile) texts[e.name] = await Deno.readTextFile(join(dirname(output), e.name));
  }
  return texts;
}

remoteTest(
  "credentials appear nowhere: a real S3 run, a wrong secret key, a wrong key id, a wrong endpoint with user:pass",
  async (env: RemoteEnv) => {
    const prefix = uniquePrefix("safety-secrets");
    const tier = `s3://${env.bucket}/${prefix}`;
    const secrets = { "the secret key": env.secretAccessKey, "the access key id": env.accessKeyId };
    const job = ["--rw", "randrw", "--bs", "1m", "--object-size", "2m", "--size", "4m"];
    await withTempDir(async (dir) => {
      const wrongSecret = "wrongSecretKey0123456789abcdefghijklmnop";
      const wrongId = "AKIAWRONGKEYID000000";
      const fakeUser = { "the URL's user": "urluser1234", "the URL's password": "urlpass5678xyz" };
      // a run that succeeds with user information in the endpoint's URL (never used: S3 signs)
      const output = join(dir, "ok.json");
      const withUser = env.endpoint.replace("://", "://urluser1234:urlpass5678xyz@");
      const ok = await runCli(
        ["run", "--quiet", "--tier", tier, "--endpoint", withUser, ...job, "--output", output],
      );
      assert.equal(ok.code, 0, ok.stderr);
      const texts = await outputsOf(ok, output);
      assert.ok(texts["ok.json"], "the result JSON was written");
      assertNoneOf({ ...secrets, ...fakeUser }, texts);

      const failures: {
        label: string;
        env: Record<string, string>;
        endpoint: string;
        says: RegExp;
      }[] = [
        {
          label: "wrong secret",
          env: { AWS_SECRET_ACCESS_KEY: wrongSecret },
          endpoint: env.endpoint,
          says: /denied \(HTTP 403\)/,
        },
        {
          label: "wrong key id",
          env: { AWS_ACCESS_KEY_ID: wrongId },
          endpoint: env.endpoint,
          says: /denied \(HTTP 403\)/,
        },
        {
          label: "wrong endpoint",
          env: {},
          endpoint: env.endpoint.replace("://", `://urluser1234:urlpass5678xyz@`).replace(
            /:\d+$/,
            ":7481",
          ),
          says: /ECONNREFUSED/,
        },
      ];
      for (const f of failures) {
        const out = join(dir, `${f.label.replaceAll(" ", "-")}.json`);
        const r = await runCli(
          ["run", "--quiet", "--tier", tier, "--endpoint", f.endpoint, ...job, "--output", out],
          { env: f.env },
        );
        assert.ok(r.code === 1 || r.code === 2, `${f.label}: exit ${r.code}: ${r.stderr}`);
        assert.match(r.stderr, /^tierbench: /, f.label);
        assert.match(r.stderr, f.says, `${f.label}: ${r.stderr}`);
        assert.doesNotMatch(r.stderr, /^\s+at |error: Uncaught/m, f.label);
        assertNoneOf(
          { ...secrets, "the wrong secret": wrongSecret, "the wrong key id": wrongId, ...fakeUser },
          await outputsOf(r, out),
        );
      }
    });
    assert.deepEqual(await listKeys(env, prefix), []);
  },
);

Deno.test("tierbench clean: never follows a symlink, neither one named as a scratch directory nor one inside a scratch directory", async () => {
  await withTempDir(async (dir) => {
    const child = new Deno.Command("true").spawn();
    await child.status;
    const dead = child.pid; // a process that has exited
    const marker = (runId: string) =>
      JSON.stringify({ run_id: runId, host: Deno.hostname(), pid: dead }) + "\n";
    // someone's data, marked as if a dead run had made it
    const precious = join(dir, "precious");
    await Deno.mkdir(precious);
    await Deno.writeTextFile(join(precious, MARKER), marker("lure"));
    await Deno.writeTextFile(join(precious, "data.txt"), "keep me");
    const lure = join(dir, `${SCRATCH_PREFIX}lure-file`);
    await Deno.symlink(precious, lure);
    // a real leftover scratch directory holding a symlink out of it
    const leftover = join(dir, `${SCRATCH_PREFIX}left-file`);
    await Deno.mkdir(leftover);
    await Deno.writeTextFile(join(leftover, MARKER), marker("left"));
    await Deno.symlink(precious, join(leftover, "escape"));

    const r = await runCli(["clean", "--tier", `file:${dir}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `removed ${leftover}`);
    assert.equal((await Deno.lstat(lure)).isSymlink, true);
    assert.equal(await Deno.readTextFile(join(precious, "data.txt")), "keep me");
    await assert.rejects(Deno.lstat(leftover), Deno.errors.NotFound);
  });
});

Deno.test("tierbench clean --run-id removes only that run's leftovers; a malformed id exits 2 naming --run-id", async () => {
  await withTempDir(async (dir) => {
    const child = new Deno.Command("true").spawn();
    await child.status;
    const leftovers: Record<string, string> = {};
    for (const runId of ["20261121T100000-aaaaaa", "20261121T110000-bbbbbb"]) {
      const path = join(dir, `${SCRATCH_PREFIX}${runId}-file`);
      await Deno.mkdir(path);
      await Deno.writeTextFile(
        join(path, MARKER),
        JSON.stringify({ run_id: runId, host: Deno.hostname(), pid: child.pid }) + "\n",
      );
      leftovers[runId] = path;
    }
    const r = await runCli([
      "clean",
      "--tier",
      `file:${dir}`,
      "--run-id",
      "20261121T100000-aaaaaa",
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `removed ${leftovers["20261121T100000-aaaaaa"]}`);
    await assert.rejects(Deno.stat(leftovers["20261121T100000-aaaaaa"]!), Deno.errors.NotFound);
    assert.ok((await Deno.stat(leftovers["20261121T110000-bbbbbb"]!)).isDirectory);

    const bad = await runCli(["clean", "--tier", `file:${dir}`, "--run-id", "../etc"]);
    assert.equal(bad.code, 2, bad.stderr);
    assertOneLine(bad.stderr, "--run-id");
    assert.ok((await Deno.stat(leftovers["20261121T110000-bbbbbb"]!)).isDirectory);
  });
});
