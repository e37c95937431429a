/**
 * `tierbench plan` end to end on the reference profiles: a plan document
 * with placement, the three predictions, why, and exports; bad input named.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, runCli, withTempDir } from "../tests/_helpers.ts";

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
    assert.match(r.stdout, /zero-infinity \(all on local NVMe\).*faster/);
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
      [["--profile", POLARIS, "--model", "6b"], /--model: /],
      [
        ["--profile", POLARIS, "--deepspeed-version", "0.1"],
        /--deepspeed-version: "0.1" has no verified key set/,
      ],
    ];
    for (const [args, want] of cases) {
      const r = await runCli(["plan", ...args]);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, want);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    }
  });
});
