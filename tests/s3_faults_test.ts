/**
 * S3 fault storms: the fault proxy (tools/services/s3_fault_proxy.ts) on loopback
 * between the CLI's SDK and a server — the stub of tools/services/s3_stub.ts, which
 * needs nothing, and the tests' real Ceph RGW — answering a share of object
 * requests with 503 SlowDown, 500, a connection dropped mid-body, a body
 * trickled out, or no answer at all.
 *
 * What must hold: reads and writes are retried with backoff and the retries
 * counted per job by cause; no byte is counted twice (each direction's bytes
 * are its requests times bs, and a size-based run moves exactly --io-size);
 * --verify finds every block intact; a run whose requests keep failing ends
 * in one line naming the cause, with partial results beside --output; no
 * object is left in the bucket.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type FaultKind, startFaultProxy } from "../tools/services/s3_fault_proxy.ts";
import { partialPathOf } from "../core/output_file.ts";
import { withTempDir } from "./_helpers.ts";
import {
  assertFailedLine,
  finished,
  spawnCliWithEnv,
  STUB_CREDENTIALS,
  stubS3,
} from "./_faults.ts";
import { listKeys, remoteTest, uniquePrefix } from "./_remote.ts";
import type { ResultDocument, RunResult } from "../schema/result.ts";

/**
 * Every fault at once, each at a few per cent of the object requests, at
 * most twice in a row for one request: with the SDK's 4 attempts a request
 * always gets through, so the run must end ok however the draws fall.
 */
const STORM: Partial<Record<FaultKind, number>> = {
  slowdown: 0.06,
  internal: 0.05,
  reset: 0.05,
  slow: 0.05,
  stall: 0.03,
};
const STORM_IN_A_ROW = 2;

/** A stall holds a request longer than the client's idle timeout (--timeout 16: 4 s). */
const STALL_MS = 20_000;

/** Runs the CLI against `endpoint` with `args` and the stub's credentials (or the environment's). */
async function runAgainst(
  endpoint: string,
  args: string[],
  env: Record<string, string> = STUB_CREDENTIALS,
) {
  return await finished(spawnCliWithEnv([...args, "--endpoint", endpoint], env));
}

/** The checks of a run that came through a storm (with `retried`: some retry in it). */
function assertSurvived(run: RunResult, ioSize: number, bs: number, retried = true): void {
  assert.equal(run.status, "ok", run.error);
  assert.equal(run.options.verify, true);
  // no byte counted twice: each completed request counted once, the whole --io-size moved
  assert.equal(run.read.io_bytes, run.read.total_ios * bs);
  assert.equal(run.write.io_bytes, run.write.total_ios * bs);
  assert.equal(run.read.io_bytes + run.write.io_bytes, ioSize * run.options.numjobs);
  for (const job of run.jobs) {
    const causes = job.retry_causes!;
    assert.equal(
      job.retries,
      Object.values(causes).reduce((a, b) => a + b, 0),
      "retries add up by cause",
    );
  }
  const retries = run.jobs.reduce((n, j) => n + j.retries, 0);
  if (retried) assert.ok(retries > 0, "the storm made no retry in the measured run");
}

Deno.test({
  name:
    "S3 faults through the proxy (stub): 503 SlowDown, 500, dropped connections, slow bodies and stalls are retried and counted by cause; verify finds the data intact; nothing left",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s3 = stubS3();
    await using proxy = await startFaultProxy({
      upstream: s3.endpoint,
      rates: STORM,
      maxFaultsInARow: STORM_IN_A_ROW,
      stallMs: STALL_MS,
      seed: 7,
    });
    await withTempDir(async (dir) => {
      const out = join(dir, "storm.json");
      const r = await runAgainst(proxy.endpoint, [
        ...["run", "--quiet", "--tier", "s3://faults/storm", "--rw", "randrw", "--bs", "64k"],
        ...["--size", "2m", "--io-size", "4m", "--iodepth", "4", "--numjobs", "2"],
        ...["--verify", "--timeout", "16", "--output", out],
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, "", "nothing on stderr: the SDK's retries are quiet");
      const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
      const run = doc.runs[0]!;
      assertSurvived(run, 4 * 2 ** 20, 64 * 1024);
      const causes = run.jobs.map((j) => j.retry_causes!).reduce((a, b) => {
        for (const k of Object.keys(a) as (keyof typeof a)[]) a[k] += b[k];
        return a;
      });
      console.log(`injected ${JSON.stringify(proxy.injected)}; retried ${JSON.stringify(causes)}`);
      for (const kind of ["slowdown", "internal", "reset", "slow", "stall"] as const) {
        assert.ok(proxy.injected[kind] > 0, `no ${kind} was injected`);
      }
      assert.ok(causes.throttled > 0 && causes.server_error > 0, JSON.stringify(causes));
      assert.deepEqual(await s3.keys("faults", "storm/"), []);
    });
  },
});

Deno.test({
  name:
    "S3 GET bodies dropped mid-answer (stub): fetched again in the measured reads, the --verify read-back and a workload's streams; nothing left",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s3 = stubS3();
    // half the GETs of objects: the connection dropped halfway through the answer (mostly
    // mid-body, where only tierbench can retry: the SDK's retries end with the headers);
    // never twice in a row, so that the SDK's retry quota is not what is tested
    await using proxy = await startFaultProxy({
      upstream: s3.endpoint,
      rates: { reset: 0.5 },
      methods: ["GET"],
      maxFaultsInARow: 1,
    });
    const runs: [string, string[]][] = [
      ["read-back", ["run", "--tier", "s3://faults/body", "--rw", "write", "--bs", "64k"]],
      ["reads", ["run", "--tier", "s3://faults/body", "--rw", "randread", "--bs", "64k"]],
      ["workload", [
        ...["workload", "mlp-offload", "--model", "7b", "--scale", "0.002", "--iterations", "1"],
        // requests of 64 KiB: bodies large enough to be cut after the headers, small
        // enough for the stub to keep (what --verify checks)
        ...["--bs", "64k"],
      ]],
    ];
    await withTempDir(async (dir) => {
      for (const [what, args] of runs) {
        const out = join(dir, `${what}.json`);
        const extra = what === "workload"
          ? ["--tiers", `memory:,file:${dir},s3://faults/body`]
          : ["--size", "1m", "--iodepth", "2"];
        const before = proxy.injected.reset;
        const r = await runAgainst(proxy.endpoint, [
          ...args,
          ...extra,
          ...["--quiet", "--verify", "--timeout", "16", "--output", out],
        ]);
        assert.equal(r.code, 0, `${what}: ${r.stderr}`);
        assert.equal(r.stderr, "", `${what}: nothing on stderr`);
        assert.ok(proxy.injected.reset > before, `${what}: no GET was cut off`);
        const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
        if (what === "reads") {
          const causes = doc.runs[0]!.jobs[0]!.retry_causes!;
          assert.ok(causes.connection > 0, `reads: ${JSON.stringify(causes)}`);
        }
        if (what === "workload") {
          assert.ok(doc.workload!.verify!.checked_bytes > 0, "workload: nothing checked");
        }
        assert.deepEqual(await s3.keys("faults", "body/"), [], `${what}: objects left`);
      }
      console.log(`GETs cut off: ${proxy.injected.reset} of ${proxy.requests} requests`);
    });
  },
});

/** Faults that never let up, on the measured requests only, and what the run must say. */
const STORMS_THAT_STAY: {
  label: string;
  rates: Partial<Record<FaultKind, number>>;
  methods: string[];
  keys: RegExp;
  rw: string;
  /** --timeout: long enough for the SDK's backoff, short where the stalls are the point. */
  timeout: string;
  says: RegExp;
}[] = [
  {
    label: "503 SlowDown",
    rates: { slowdown: 1 },
    methods: ["PUT"],
    keys: /\/o\d+$/,
    rw: "write",
    timeout: "30",
    says: /: SlowDown \(HTTP 503\) after 4 attempts; the server throttled requests/,
  },
  {
    label: "500",
    rates: { internal: 1 },
    methods: ["PUT"],
    keys: /\/o\d+$/,
    rw: "write",
    timeout: "30",
    says: /: InternalError \(HTTP 500\) after 4 attempts; the server failed/,
  },
  {
    label: "GET bodies dropped halfway",
    rates: { reset: 1 },
    methods: ["GET"],
    keys: /\/obj\d+$/,
    rw: "read",
    timeout: "30",
    says: /GetObject( \(body\))? \S+: \S+ after 4 attempts; the connection to \S+ was dropped/,
  },
  {
    label: "stalls",
    rates: { stall: 1 },
    methods: ["PUT"],
    keys: /\/o\d+$/,
    rw: "write",
    timeout: "4",
    says: /: timed out after 4 s \(--timeout\)/,
  },
];

Deno.test({
  name:
    "S3 faults that never let up (stub): one line naming the cause, exit 1, partial results beside --output, nothing left",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using s3 = stubS3();
    await withTempDir(async (dir) => {
      for (const f of STORMS_THAT_STAY) {
        await using proxy = await startFaultProxy({
          upstream: s3.endpoint,
          rates: f.rates,
          methods: f.methods,
          keys: f.keys,
          stallMs: STALL_MS,
        });
        const out = join(dir, `${f.label.replaceAll(" ", "-")}.json`);
        await Deno.writeTextFile(out, "an earlier result\n");
        const r = await runAgainst(proxy.endpoint, [
          ...["run", "--quiet", "--tier", "s3://faults/stay", "--rw", f.rw, "--bs", "64k"],
          ...["--size", "1m", "--iodepth", "2", "--timeout", f.timeout, "--output", out],
        ]);
        assertFailedLine(r, f.says);
        assert.equal(r.stderr.trim().split("\n").length, 1, `${f.label}: ${r.stderr}`);
        assert.match(r.stderr, /; partial results in \S+\.partial\.json$/m, f.label);
        assert.equal(await Deno.readTextFile(out), "an earlier result\n", "--output kept");
        const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out))) as ResultDocument;
        assert.equal(doc.status, "failed", f.label);
        assert.deepEqual(await s3.keys("faults", "stay/"), [], `${f.label}: objects left`);
      }
    });
  },
});

remoteTest(
  "S3 faults through the proxy in front of RGW: retried and counted by cause, ranged GETs and multipart uploads verified intact, nothing left",
  async (env) => {
    await using proxy = await startFaultProxy({
      upstream: env.endpoint,
      rates: STORM,
      maxFaultsInARow: STORM_IN_A_ROW,
      stallMs: STALL_MS,
      seed: 11,
    });
    const prefix = uniquePrefix("storm");
    const tier = `s3://${env.bucket}/${prefix}`;
    const jobs = [
      // ranged GETs of 1 MiB out of 2 MiB objects, and 1 MiB PUTs
      ["--rw", "randrw", "--bs", "1m", "--object-size", "2m", "--size", "8m", "--io-size", "48m"],
      // 10 MiB objects in two 5 MiB parts each
      ["--rw", "write", "--bs", "10m", "--size", "80m", "--part-size", "5m"],
    ];
    await withTempDir(async (dir) => {
      for (const [i, job] of jobs.entries()) {
        const out = join(dir, `rgw${i}.json`);
        const r = await runAgainst(proxy.endpoint, [
          ...["run", "--quiet", "--tier", tier, ...job, "--multipart-threshold", "5m"],
          ...["--iodepth", "4", "--verify", "--timeout", "8", "--output", out],
        ], {
          AWS_ACCESS_KEY_ID: env.accessKeyId,
          AWS_SECRET_ACCESS_KEY: env.secretAccessKey,
          AWS_REGION: env.region,
        });
        assert.equal(r.code, 0, r.stderr);
        const run = (JSON.parse(await Deno.readTextFile(out)) as ResultDocument).runs[0]!;
        assertSurvived(run, run.options.io_size, run.options.bs, i === 0);
        console.log(
          `RGW ${job.join(" ")}: injected so far ${JSON.stringify(proxy.injected)}; retried ` +
            JSON.stringify(run.jobs.map((j) => j.retry_causes)),
        );
      }
    });
    assert.deepEqual(await listKeys(env, prefix), []);
  },
);
