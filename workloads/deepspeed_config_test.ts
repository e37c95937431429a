import assert from "node:assert/strict";
import { DEEPSPEED_DEFAULTS, parseDeepSpeedConfig } from "./deepspeed_config.ts";

const nvme = { device: "nvme", nvme_path: "/var/tmp/dsnvme" };
const zero = (more: Record<string, unknown> = {}) => ({
  zero_optimization: { stage: 3, offload_optimizer: nvme, ...more },
});

Deno.test('a DeepSpeed config gets DeepSpeed v0.14.5\'s defaults, and "auto" stands for them', () => {
  const c = parseDeepSpeedConfig(
    zero({ sub_group_size: "auto", reduce_bucket_size: "auto" }),
    "ds.json",
  );
  assert.equal(c.subGroupSize, DEEPSPEED_DEFAULTS.subGroupSize);
  assert.equal(c.reduceBucketSize, 5e8);
  assert.deepEqual(c.aio, {
    blockSize: 1048576,
    queueDepth: 8,
    threadCount: 1,
    singleSubmit: false,
    overlapEvents: true,
  });
  assert.equal(c.bufferCount, 4);
  assert.equal(c.pipelineRead || c.pipelineWrite, false);
  assert.equal(c.offloadParam, undefined);
  assert.equal(c.modelElementBytes, 4);
  assert.deepEqual(c.optimizerStates, ["exp_avg", "exp_avg_sq"]);
});

Deno.test("a DeepSpeed config's aio, offload_param, dtype and optimizer are read as DeepSpeed reads them", () => {
  const c = parseDeepSpeedConfig({
    ...zero({
      sub_group_size: 1e7,
      offload_param: { ...nvme, buffer_count: 40, buffer_size: 5e6, max_in_cpu: 0 },
    }),
    aio: { block_size: 2097152, queue_depth: 16, intra_op_parallelism: 4, single_submit: true },
    bf16: { enabled: true },
    optimizer: { type: "Adagrad" },
  }, "ds.json");
  assert.equal(c.subGroupSize, 1e7);
  assert.equal(c.aio.threadCount, 4);
  assert.equal(c.aio.singleSubmit, true);
  assert.deepEqual(c.offloadParam, {
    bufferCount: 40,
    bufferSize: 5e6,
    maxInCpu: 0,
    nvmePath: "/var/tmp/dsnvme",
  });
  assert.equal(c.modelElementBytes, 2);
  assert.deepEqual(c.optimizerStates, ["exp_avg_sq"]);
  // offload_param on cpu: no parameter I/O to model
  const cpu = parseDeepSpeedConfig(zero({ offload_param: { device: "cpu" } }), "ds.json");
  assert.equal(cpu.offloadParam, undefined);
});

Deno.test("a DeepSpeed config DeepSpeed would refuse is refused naming the file and the key", () => {
  const cases: [unknown, RegExp][] = [
    [[], /ds\.json: \(top\): is not a JSON object/],
    [{}, /ds\.json: zero_optimization: is missing/],
    [zero({ stage: 2 }), /zero_optimization\.stage: 2/],
    [
      zero({ sub_groupsize: 1 }),
      /zero_optimization\.sub_groupsize: unknown key: DeepSpeed refuses it/,
    ],
    [
      zero({ offload_optimizer: { ...nvme, pipeline: true } }),
      /offload_optimizer\.pipeline: unknown key/,
    ],
    [zero({ offload_optimizer: { device: "nvme" } }), /offload_optimizer\.nvme_path: is missing/],
    [zero({ sub_group_size: -1 }), /zero_optimization\.sub_group_size: -1 is not an integer ≥ 0/],
    [zero({ sub_group_size: 1.5 }), /sub_group_size: 1\.5 is not an integer/],
    [{ ...zero(), aio: { queue_depth: 0 } }, /aio\.queue_depth: 0 is not an integer ≥ 1/],
    [
      { ...zero(), aio: { thread_count: 2, intra_op_parallelism: 4 } },
      /intra_op_parallelism: 4 and thread_count 2 disagree/,
    ],
    [
      { ...zero(), aio: { single_submit: "yes" } },
      /aio\.single_submit: "yes" is not true or false/,
    ],
    [{ ...zero(), optimizer: { type: "Lamb" } }, /optimizer\.type: "Lamb" is not modelled/],
    [{ ...zero(), fp16: { enabled: true }, bf16: { enabled: true } }, /both true/],
    [zero({ offload_param: { device: "disk" } }), /offload_param\.device: "disk"/],
  ];
  for (const [json, want] of cases) {
    assert.throws(() => parseDeepSpeedConfig(json, "ds.json"), (e: Error) => {
      assert.match(e.message, /^--deepspeed-config: /);
      assert.match(e.message, want);
      return true;
    });
  }
});
