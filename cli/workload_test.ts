/**
 * `tierbench workload` end to end on the local tiers: results written,
 * usage errors named, Ctrl-C leaving nothing behind.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, scratchLeft, spawnCli, withTempDir } from "../tests/_helpers.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";

Deno.test("tierbench workload zero-infinity writes a workload result with a summary and prints its table", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "zi.json");
    const r = await runCli([
      "workload",
      "zero-infinity",
      "--model",
      "7b",
      "--scale",
      "0.0002",
      "--ranks-per-node",
      "2",
      "--iterations",
      "2",
      "--tiers",
      `memory:/dev/shm,file:${dir}`,
      "--quiet",
      "--output",
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /zero-infinity \(median of 2\): iteration [\d.]+ s, update [\d.]+ s/);
    const doc = JSON.parse(await Deno.readTextFile(out));
    assert.equal(doc.kind, "workload");
    assert.equal(doc.status, "ok");
    assert.equal(doc.workload.name, "zero-infinity");
    assert.equal(doc.workload.setup.model, "7b");
    assert.equal(doc.workload.summary.iterations, 2);
    assert.ok(doc.workload.summary.update_s > 0);
    assert.ok(doc.workload.summary.bytes["local:read"] > 0);
    assert.equal(doc.workload.iterations.length, 3); // one warm-up
    assert.deepEqual(await scratchLeft(dir), []);
    assert.deepEqual((await scratchLeft("/dev/shm")).filter((d) => d.includes(doc.run_id)), []);
  });
});

Deno.test({
  name:
    "tierbench workload --engine io_uring: the rank streams move the same bytes per path as with libaio",
  ignore: ioUringRefusal() !== undefined,
  fn: () =>
    withTempDir(async (dir) => {
      const shm = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tierbench-test-" });
      try {
        const run = async (engine: string) => {
          const out = join(dir, `${engine}.json`);
          const r = await runCli([
            "workload",
            "zero-infinity",
            "--model",
            "7b",
            "--scale",
            "0.0002",
            "--ranks-per-node",
            "2",
            "--iterations",
            "1",
            "--tiers",
            `memory:${shm},file:${dir}`,
            "--engine",
            engine,
            "--quiet",
            "--output",
            out,
          ]);
          assert.equal(r.code, 0, r.stderr);
          const doc = JSON.parse(await Deno.readTextFile(out));
          assert.equal(doc.status, "ok", doc.error);
          assert.equal(doc.config.engine, engine);
          for (const p of doc.workload.paths) assert.equal(p.engine, engine, p.name);
          return doc.workload;
        };
        const aio = await run("libaio");
        const uring = await run("io_uring");
        assert.ok(aio.summary.bytes["local:read"] > 0 && aio.summary.bytes["local:write"] > 0);
        assert.deepEqual(uring.summary.bytes, aio.summary.bytes);
        assert.deepEqual(
          uring.paths.map((p: { name: string; direct: boolean }) => [p.name, p.direct]),
          aio.paths.map((p: { name: string; direct: boolean }) => [p.name, p.direct]),
        );
        assert.deepEqual(await scratchLeft(dir), []);
        assert.deepEqual(await scratchLeft(shm), []);
      } finally {
        await Deno.remove(shm, { recursive: true });
      }
    }),
});

Deno.test("tierbench workload refuses bad input with exit 2 and a line naming the field", async () => {
  const cases: [string[], RegExp][] = [
    [
      ["workload", "nope", "--tiers", "memory:"],
      /workload "nope" is unknown: use one of zero-infinity/,
    ],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--model", "6b"], /--model: .*7b, 13b/],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--scale", "0"], /--scale: .*\(0, 1\]/],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--tp", "3"], /--tp: 3 does not divide/],
    [
      ["workload", "zero-infinity", "--tiers", "memory:"],
      /--tiers: zero-infinity needs a local path/,
    ],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--bs", "1000"], /--bs: "1000"/],
    [["workload", "zero-infinity", "--tiers", "pfs:/a,pfs:/b"], /--tiers: name at most one remote/],
    [
      ["workload", "zero-infinity", "--tiers", "file:/tmp", "--readers", "-1"],
      /--readers: "-1" is not an integer ≥ 0/,
    ],
    // the old share form of --remote-ratio: now the fork's integer dist_opt_ratio
    [
      ["workload", "mlp-offload", "--tiers", "file:/tmp,pfs:/tmp", "--remote-ratio", "0.33"],
      /--remote-ratio: "0.33" is a share.*i % K == 0.*use 3/,
    ],
    [
      ["workload", "mlp-offload", "--tiers", "file:/tmp,pfs:/tmp", "--remote-ratio", "1.5"],
      /--remote-ratio: "1.5" is not an integer ≥ 0/,
    ],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--threads", "0"], /--threads: "0"/],
    [
      ["workload", "mlp-offload", "--tiers", "file:/tmp,pfs:/tmp", "--locks", "all"],
      /--locks/,
    ],
  ];
  for (const [args, want] of cases) {
    const r = await runCli(args);
    assert.equal(r.code, 2, `${args.join(" ")}: exit ${r.code}: ${r.stderr}`);
    assert.match(r.stderr, want);
    assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
  }
});

Deno.test("tierbench workload: SIGINT stops every rank, removes scratch files, exits 1", async () => {
  await withTempDir(async (dir) => {
    const child = spawnCli([
      "workload",
      "zero-infinity",
      "--model",
      "70b",
      "--scale",
      "0.001",
      "--iterations",
      "50",
      "--tiers",
      `file:${dir}`,
      "--output",
      join(dir, "partial.json"),
    ]);
    for (let i = 0; i < 600 && (await scratchLeft(dir)).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal((await scratchLeft(dir)).length, 1, "the run never started");
    await new Promise((r) => setTimeout(r, 1500));
    child.kill("SIGINT");
    const out = await child.output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, stderr);
    assert.match(stderr, /interrupted by SIGINT.*scratch files removed/);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});
