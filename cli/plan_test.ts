/**
 * `tierbench plan` end to end on the reference profiles: a plan document
 * with placement, the three predictions, why, and exports; bad input named.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, runCli, withTempDir } from "../tests/_helpers.ts";
import { assertUsageErrors } from "../tests/_cli.ts";

const POLARIS = join(ROOT, "results", "reference", "polaris-4gpu-nvme-lustre.json");

Deno.test("tierbench plan writes a tierbench/plan@1 document and prints placement, predictions and why", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "plan.json");
    const r = await runCli([
      "plan",
      "--profile",
      POLARIS,
      "--model",
      "70b",
      "--ranks-per-node",
      "4",
      "--host-cache",
      "64g",
      "--output",
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /zero-infinity \(all on local NVMe, 4 ranks at once\).*faster/);
    assert.match(r.stdout, /why: split \d+:\d+ between file and pfs/);
    const plan = JSON.parse(await Deno.readTextFile(out));
    assert.equal(plan.schema, "tierbench/plan@1");
    assert.equal(plan.setup.model, "70b");
    const total = plan.placement.paths.reduce(
      (t: number, p: { subgroups: number }) => t + p.subgroups,
      0,
    );
    assert.equal(total, 179);
    assert.ok(plan.predictions.plan.update_s < plan.predictions.zero_infinity.update_s);
    assert.equal(plan.exports.deepspeed.config.zero_optimization.stage, 3);
    assert.equal(typeof plan.exports.deepspeed.config.aio.single_submit, "boolean");
    assert.match(
      plan.exports.mlp_offload.config.zero_optimization.offload_optimizer.nvme_path,
      /;/,
    );
    // activations: 88 layers of 70B, the last never offloaded, at least one layer read ahead
    assert.equal(plan.activations.layers, 88);
    assert.ok(plan.activations.offloaded <= 87 && plan.activations.prefetch >= 1);
    assert.match(r.stdout, /activations: offload/);
  });
});

Deno.test("tierbench plan refuses bad input with exit 2 and a line naming the field", async () => {
  await withTempDir(async (dir) => {
    const bad = join(dir, "bad.json");
    await Deno.writeTextFile(bad, JSON.stringify({ schema: "tierbench/profile@1" }));
    const cases: [string[], RegExp][] = [
      [["--profile", join(dir, "none.json")], /--profile: .*none\.json: cannot be read/],
      [["--profile", bad], /--profile: .*bad\.json: /],
      [["--profile", POLARIS, "--host-cache", "lots"], /--host-cache: "lots" is not a size/],
      [["--profile", POLARIS, "--host-cache", "9000t"], /--host-cache: "9000t" is too large/],
      [["--profile", POLARIS, "--model", "6b"], /--model: /],
      [["--profile", POLARIS, "--host-reserve", "lots"], /--host-reserve: "lots" is not a share/],
      [["--profile", POLARIS, "--host-reserve", "100%"], /--host-reserve: "100%" leaves no/],
      [
        ["--profile", POLARIS, "--deepspeed-version", "0.1"],
        /--deepspeed-version: "0.1" is not a DeepSpeed release/,
      ],
      ...["0", "-1", "two", "1.5", "4,2", "1,,4", "2,2", "100001"].map((
        n,
      ): [string[], RegExp] => [
        ["--profile", POLARIS, "--nodes", n],
        /--nodes: .* \(allowed: a whole number of nodes from 1 to 100000, or an ascending/,
      ]),
    ];
    await assertUsageErrors(cases.map(([args, want]) => [["plan", ...args], want]));
  });
});

const SCALING = join(ROOT, "tests", "testdata", "profiles", "scaling-pfs.json");

Deno.test("tierbench plan --nodes 1,4,16 prints the remote share used and the placement by node count", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "plan.json");
    const r = await runCli(["plan", "--profile", SCALING, "--nodes", "1,4,16", "--output", out]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /remote share at 1 node: pfs read 5\.00 GB\/s, write 3\.50 GB\/s per node \(measured\)/,
    );
    assert.match(r.stdout, /placement by node count/);
    assert.match(r.stdout, /16 .* \(extrapolated\)/);
    assert.match(r.stdout, /mlp-offload \(1 in 3 on remote, 1×1 per path\)/);
    const plan = JSON.parse(await Deno.readTextFile(out));
    assert.equal(plan.nodes, 1);
    assert.deepEqual(plan.nodes_sweep.map((p: { nodes: number }) => p.nodes), [1, 4, 16]);
    assert.equal(plan.remote_share.pfs.basis, "measured");

    const one = await runCli(["plan", "--profile", SCALING, "--nodes", "3", "--output", out]);
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /remote share at 3 nodes: .* \(interpolated\)/);
    assert.doesNotMatch(one.stdout, /placement by node count/);
    const at3 = JSON.parse(await Deno.readTextFile(out));
    assert.equal(at3.nodes, 3);
    assert.equal(at3.nodes_sweep, undefined);
  });
});
