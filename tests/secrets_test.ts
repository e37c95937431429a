/**
 * No secret is stored or printed: S3 runs against the stub server with a
 * user name and password in the endpoint's URL (given as --endpoint and as
 * TIERBENCH_S3_ENDPOINT) and the AWS keys in the environment. Every output
 * of each run is searched — stdout, stderr, and every file written in its
 * directory (results, partial results) — for each secret: a run that
 * succeeds, a workload with an s3 path, a run that fails, and clean.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { withTempDir } from "./_helpers.ts";
import { finished, spawnCliWithEnv, STUB_CREDENTIALS, stubS3 } from "./_faults.ts";
import { startFaultProxy } from "../tools/services/s3_fault_proxy.ts";

const URL_USER = "urlUser7Kq2";
const URL_PASSWORD = "urlPassw0rd/9xZ";

/** Every secret of these runs, by what it is. */
const SECRETS: Record<string, string> = {
  "the URL's user name": URL_USER,
  "the URL's password": URL_PASSWORD,
  "the secret key": STUB_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
  "the access key id": STUB_CREDENTIALS.AWS_ACCESS_KEY_ID,
};

/** `http://user:password@host:port` for an endpoint. */
function withUser(endpoint: string): string {
  return endpoint.replace("://", `://${URL_USER}:${encodeURIComponent(URL_PASSWORD)}@`);
}

/** stdout, stderr and every file under `dir`, by name. */
async function outputsOf(r: { stdout: string; stderr: string }, dir: string) {
  const texts: Record<string, string> = { stdout: r.stdout, stderr: r.stderr };
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile) texts[e.name] = await Deno.readTextFile(join(dir, e.name));
  }
  return texts;
}

function assertNoSecret(texts: Record<string, string>, what: string): void {
  for (const [where, text] of Object.entries(texts)) {
    for (const [name, secret] of Object.entries(SECRETS)) {
      for (const form of [secret, encodeURIComponent(secret)]) {
        assert.ok(!text.includes(form), `${what}: ${name} appears in ${where}`);
      }
    }
  }
}

Deno.test({
  name:
    "no secret in any output of an S3 run: credentials in the endpoint's URL and in the environment, a run that succeeds, a workload, a run that fails, clean",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s3 = stubS3();
    // the measured writes of the failing run get 500s for good
    await using failing = await startFaultProxy({
      upstream: s3.endpoint,
      rates: { internal: 1 },
      methods: ["PUT"],
      keys: /\/o\d+$/,
    });
    const env = { ...STUB_CREDENTIALS, TIERBENCH_S3_ENDPOINT: withUser(s3.endpoint) };
    const runs: [string, string[], number][] = [
      ["run, --endpoint", ["run", "--tier", "s3://b/ok", "--endpoint", withUser(s3.endpoint)], 0],
      ["run, TIERBENCH_S3_ENDPOINT", ["run", "--tier", "s3://b/env", "--rw", "randrw"], 0],
      ["a workload", [
        ...["workload", "mlp-offload", "--model", "7b", "--scale", "0.0002", "--iterations", "1"],
        ...["--tiers", "memory:", "--endpoint", withUser(s3.endpoint)],
      ], -1],
      ["a failing run", [
        ...["run", "--tier", "s3://b/fail", "--rw", "write", "--timeout", "20"],
        ...["--endpoint", withUser(failing.endpoint)],
      ], 1],
    ];
    await withTempDir(async (work) => {
      for (const [what, args, code] of runs) {
        await withTempDir(async (dir) => {
          const out = join(dir, "result.json");
          const full = what === "a workload"
            // mlp-offload's remote path on the stub, its local one on the disk
            ? args.map((a) => (a === "memory:" ? `memory:,file:${work},s3://b/wl` : a))
            : [...args, "--bs", "64k", "--size", "1m"];
          const r = await finished(spawnCliWithEnv([...full, "--quiet", "--output", out], env));
          if (code >= 0) assert.equal(r.code, code, `${what}: ${r.stderr}`);
          else assert.equal(r.code, 0, `${what}: ${r.stderr}`);
          const texts = await outputsOf(r, dir);
          assert.ok(Object.keys(texts).some((k) => k.startsWith("result")), `${what}: no result`);
          assertNoSecret(texts, what);
          const doc = JSON.parse(texts["result.json"] ?? texts["result.partial.json"]!);
          const endpoints = JSON.stringify(doc).match(/http:\/\/[^"]*/g) ?? [];
          assert.ok(endpoints.length > 0, `${what}: the endpoint is not recorded`);
        });
      }
      const c = await finished(spawnCliWithEnv(["clean", "--tier", "s3://b"], env));
      assert.equal(c.code, 0, c.stderr);
      assertNoSecret({ stdout: c.stdout, stderr: c.stderr }, "clean");
    });
    assert.deepEqual(await s3.keys("b", ""), []);
  },
});
