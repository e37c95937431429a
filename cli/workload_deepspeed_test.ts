/**
 * `tierbench workload zero-infinity --model-tensors M --deepspeed-config C`
 * end to end: a user's model and DeepSpeed config drive the run, and what
 * DeepSpeed refuses is refused in one line.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, scratchLeft, withTempDir } from "../tests/_helpers.ts";
import { assertUsageErrors, cliJson } from "../tests/_cli.ts";

/** The recordings' model (kit/train_tiny.py) as a --model-tensors file. */
function tinyModel(): unknown {
  const parameters: { name: string; shape: number[] }[] = [];
  const linear = (name: string, i: number, o: number) =>
    parameters.push({ name: `${name}.weight`, shape: [o, i] }, {
      name: `${name}.bias`,
      shape: [o],
    });
  const norm = (name: string) =>
    parameters.push({ name: `${name}.weight`, shape: [1024] }, {
      name: `${name}.bias`,
      shape: [1024],
    });
  linear("inp", 1024, 1024);
  for (let l = 0; l < 4; l++) {
    norm(`blocks.${l}.ln`);
    linear(`blocks.${l}.qkv`, 1024, 3072);
    linear(`blocks.${l}.proj`, 3072, 1024);
    norm(`blocks.${l}.ln2`);
    linear(`blocks.${l}.fc1`, 1024, 4096);
    linear(`blocks.${l}.fc2`, 4096, 1024);
  }
  linear("out", 1024, 1024);
  return { model: "tiny", dtype: "float32", parameters };
}

const dsConfig = (zero: Record<string, unknown> = {}, optimizer: Record<string, unknown> = {}) => ({
  train_micro_batch_size_per_gpu: 4,
  gradient_accumulation_steps: 1,
  optimizer: { type: "Adam", params: { lr: 1e-4 } },
  zero_optimization: {
    stage: 3,
    offload_optimizer: {
      device: "nvme",
      nvme_path: "/var/tmp/dsnvme",
      pin_memory: false,
      buffer_count: 4,
      ...optimizer,
    },
    ...zero,
  },
});

async function files(dir: string, config: unknown) {
  const model = join(dir, "model.json");
  const ds = join(dir, "ds.json");
  await Deno.writeTextFile(model, JSON.stringify(tinyModel()));
  await Deno.writeTextFile(ds, JSON.stringify(config));
  return { model, ds };
}

Deno.test("tierbench workload zero-infinity --model-tensors --deepspeed-config runs the user's model with its config", async () => {
  await withTempDir(async (dir) => {
    const { model, ds } = await files(dir, dsConfig({ sub_group_size: 1e7 }));
    const out = join(dir, "zi.json");
    const { doc } = await cliJson([
      "workload",
      "zero-infinity",
      "--model-tensors",
      model,
      "--deepspeed-config",
      ds,
      "--scale",
      "0.01",
      "--ranks-per-node",
      "1",
      "--iterations",
      "1",
      "--tiers",
      `file:${dir}`,
      "--quiet",
    ], out);
    assert.equal(doc.workload.setup.model, "tiny");
    assert.equal(doc.workload.setup.model_tensors, 52);
    assert.equal(doc.workload.setup.parameters, 60872704);
    assert.equal(doc.workload.setup.subgroup_elements, 1e7);
    assert.equal(doc.workload.derived.subgroups_per_rank, 6);
    assert.equal(doc.workload.derived.gradient_files_per_rank, 18);
    assert.deepEqual(doc.config.setup.tensors, { label: "tiny", count: 52 });
    assert.equal(doc.config.options.deepspeed.source, ds);
    assert.deepEqual(
      doc.workload.iterations.map((i: { phases: Record<string, unknown> }) =>
        Object.keys(i.phases)
      ),
      [["forward", "backward", "update"], ["forward", "backward", "update"]],
    );
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("tierbench workload refuses what DeepSpeed refuses in its config, naming the file, the key and the source line", async () => {
  await withTempDir(async (dir) => {
    const cases: [unknown, string[], RegExp][] = [
      [
        dsConfig({ sub_group_size: 1e7 }, { pipeline_read: true, pipeline_write: true }),
        [],
        /--deepspeed-config: .*ds\.json: zero_optimization\.offload_optimizer\.buffer_count: 4 is too few for the pipelined swapper with 6 swapped subgroups: it needs 12 .*pipelined_optimizer_swapper\.py L/,
      ],
      [
        dsConfig({}, { buffer_cont: 8 }),
        [],
        /ds\.json: zero_optimization\.offload_optimizer\.buffer_cont: unknown key: DeepSpeed refuses it/,
      ],
      [{ zero_optimization: { stage: 2 } }, [], /ds\.json: zero_optimization\.stage: 2/],
      [dsConfig({}, { device: "cpu" }), [], /offload_optimizer\.device: "cpu"/],
      [
        dsConfig({ sub_group_size: 1e7 }),
        ["--subgroup-size", "1e8"],
        /--subgroup-size: 1e8 disagrees with zero_optimization\.sub_group_size 10000000/,
      ],
      [dsConfig(), ["--bs", "2m"], /--bs: 2097152 disagrees with aio\.block_size 1048576/],
      [
        { ...dsConfig(), train_batch_size: 7 },
        [],
        /train_batch_size: 7 is not micro-batch 4 × gradient_accumulation_steps 1 × 1/,
      ],
    ];
    for (const [config, extra, want] of cases) {
      const { model, ds } = await files(dir, config);
      const args = [
        "workload",
        "zero-infinity",
        "--model-tensors",
        model,
        "--deepspeed-config",
        ds,
        "--ranks-per-node",
        "1",
        "--tiers",
        `file:${dir}`,
        ...extra,
      ];
      const r = await runCli(args);
      assert.equal(r.code, 2, `${JSON.stringify(config)}: exit ${r.code}: ${r.stderr}`);
      assert.match(r.stderr, want);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
    }
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("tierbench workload refuses a bad --model-tensors or --deepspeed-config file in one line", async () => {
  await withTempDir(async (dir) => {
    const { model, ds } = await files(dir, dsConfig());
    const bad = join(dir, "bad.json");
    await Deno.writeTextFile(bad, "{ not json");
    const shape = join(dir, "shape.json");
    await Deno.writeTextFile(
      shape,
      JSON.stringify({ parameters: [{ name: "w", shape: [4, -1] }] }),
    );
    const base = ["workload", "zero-infinity", "--tiers", `file:${dir}`];
    const cases: [string[], RegExp][] = [
      [
        [...base, "--model-tensors", join(dir, "none.json")],
        /--model-tensors: .*none\.json: no such file/,
      ],
      [[...base, "--deepspeed-config", bad], /--deepspeed-config: .*bad\.json: not JSON/],
      [
        [...base, "--model-tensors", shape],
        /--model-tensors: .*shape\.json: parameters\[0\]\.shape\[1\]/,
      ],
      [
        ["workload", "mlp-offload", "--tiers", `file:${dir},pfs:${dir}`, "--model-tensors", model],
        /--model-tensors: drives zero-infinity and deepspeed-checkpoint, not mlp-offload/,
      ],
      [
        [...base, "--model-tensors", model, "--params", "7e9"],
        /--params: and --model-tensors both/,
      ],
      [[...base, "--deepspeed-config", ds, "--pipeline"], /--pipeline: disagrees with/],
    ];
    await assertUsageErrors(cases);
  });
});
