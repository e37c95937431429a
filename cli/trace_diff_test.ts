/**
 * `tierbench trace diff` against the real DeepSpeed recordings
 * (trace/testdata/deepspeed/): each one, with its model and config, within
 * the default tolerance; a wrong config or a step DeepSpeed never finished
 * found out; bad input refused in one line.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, runCli, withTempDir } from "../tests/_helpers.ts";
import { TraceReader } from "../trace/reader.ts";
import { assertUsageErrors } from "../tests/_cli.ts";

const REC = join(ROOT, "trace", "testdata", "deepspeed", "recordings");
const log = (name: string) => join(REC, `strace-ds0.14.5-tiny-${name}.txt.gz`);
const config = (name: string) => join(REC, `ds_config_${name}.json`);
const MODEL = join(REC, "model-tiny.json");

/** Imports recording `name` into `dir` and returns the trace's path. */
async function imported(dir: string, name: string): Promise<string> {
  const out = join(dir, `${name}.trace.gz`);
  const r = await runCli(["trace", "import", "strace", log(name), "--output", out]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}

const diff = (trace: string, cfg: string, ...extra: string[]) =>
  runCli([
    "trace",
    "diff",
    trace,
    "--workload",
    "zero-infinity",
    "--model-tensors",
    MODEL,
    "--deepspeed-config",
    cfg,
    ...extra,
  ]);

for (const name of ["opt_nvme", "opt_nvme_sg1e7", "opt_nvme_pipeline"]) {
  Deno.test(`trace diff: DeepSpeed 0.14.5's ${name} recording matches zero-infinity with its model and config, every step`, async () => {
    await withTempDir(async (dir) => {
      const r = await diff(await imported(dir, name), config(name));
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /step 4/);
      assert.match(r.stdout, /trace diff: 0 of \d+ statistics beyond tolerance/);
      assert.doesNotMatch(r.stdout, /DIFFERS/);
    });
  });
}

Deno.test("trace diff: the parameter-offload recording matches in step 1; DeepSpeed 0.14.5 stopped in step 2", async () => {
  await withTempDir(async (dir) => {
    const name = "opt_param_nvme_maxcpu0";
    const trace = await imported(dir, name);
    const one = await diff(trace, config(name), "--steps", "1");
    assert.equal(one.code, 0, one.stdout + one.stderr);
    assert.match(one.stdout, /param read/);
    assert.match(one.stdout, /backward: param read/);
    assert.match(one.stdout, /optimizer-step: param write/);
    const all = await diff(trace, config(name));
    assert.equal(all.code, 1, all.stdout);
    assert.match(all.stdout, /DIFFERS/);
  });
});

Deno.test("trace diff finds a generator run with another config out: another swapper, other subgroups", async () => {
  await withTempDir(async (dir) => {
    const trace = await imported(dir, "opt_nvme");
    const sg = await diff(trace, config("opt_nvme_sg1e7"), "--steps", "2");
    assert.equal(sg.code, 1);
    assert.match(sg.stdout, /│ fp32 read\s+│[^\n]*DIFFERS: requests,/);
    const piped = await diff(trace, config("opt_nvme_pipeline"), "--steps", "2");
    assert.equal(piped.code, 1);
    assert.match(piped.stdout, /aio contexts moving swap files\s*│\s*1\s*│\s*2\s*│\s*DIFFERS/);
  });
});

Deno.test("trace diff --export writes the generator's op stream as a trace that trace stats reads", async () => {
  await withTempDir(async (dir) => {
    const trace = await imported(dir, "opt_nvme_sg1e7");
    const out = join(dir, "model.trace.gz");
    const r = await diff(trace, config("opt_nvme_sg1e7"), "--steps", "2", "--export", out);
    assert.equal(r.code, 0, r.stderr);
    const reader = await TraceReader.open(out);
    const phases: string[] = [];
    const files = new Set<string>();
    for await (const e of reader.events()) {
      if (e.kind === "phase") phases.push(e.name);
      if (e.kind === "open") files.add(e.file.split("/").at(-1)!);
    }
    assert.deepEqual(phases, [
      "STEP 1 forward",
      "STEP 1 backward",
      "STEP 1 optimizer-step",
      "STEP 2 forward",
      "STEP 2 backward",
      "STEP 2 optimizer-step",
    ]);
    assert.ok(
      files.has("exp_avg_sq-47_51.tensor.swp") &&
        files.has("19_28_gradient_3072_4194304.tensor.swp"),
    );
    const stats = await runCli(["trace", "stats", out]);
    assert.equal(stats.code, 0, stats.stderr);
    // an existing file is not overwritten
    const again = await diff(trace, config("opt_nvme_sg1e7"), "--steps", "1", "--export", out);
    assert.equal(again.code, 2);
  });
});

Deno.test("trace diff refuses bad input with exit 2 and one line", async () => {
  await withTempDir(async (dir) => {
    const trace = await imported(dir, "opt_nvme");
    const noMarkers = join(dir, "plain.trace");
    await Deno.writeTextFile(
      noMarkers,
      [
        JSON.stringify({
          schema: "tierbench/trace@1",
          source: { kind: "generator" },
          origin: "",
          time_unit: "us",
        }),
        JSON.stringify(["end", 0, 0, []]),
      ].join("\n") + "\n",
    );
    const cases: [string[], RegExp][] = [
      [[
        "trace",
        "diff",
        trace,
        "--workload",
        "mlp-offload",
        "--model-tensors",
        MODEL,
        "--deepspeed-config",
        config("opt_nvme"),
      ], /--workload: "mlp-offload": trace diff compares zero-infinity/],
      [[
        "trace",
        "diff",
        trace,
        "--workload",
        "zero-infinity",
        "--model-tensors",
        MODEL,
        "--deepspeed-config",
        config("opt_nvme"),
        "--tolerance",
        "5",
      ], /--tolerance: "5" is not a share/],
      [[
        "trace",
        "diff",
        trace,
        "--workload",
        "zero-infinity",
        "--model-tensors",
        MODEL,
        "--deepspeed-config",
        config("opt_nvme"),
        "--steps",
        "9",
      ], /--steps: 9: .* has 4 steps/],
      [[
        "trace",
        "diff",
        noMarkers,
        "--workload",
        "zero-infinity",
        "--model-tensors",
        MODEL,
        "--deepspeed-config",
        config("opt_nvme"),
      ], /--trace: .*plain\.trace: no STEP markers/],
      [[
        "trace",
        "diff",
        trace,
        "--workload",
        "zero-infinity",
        "--model-tensors",
        join(dir, "none.json"),
        "--deepspeed-config",
        config("opt_nvme"),
      ], /--model-tensors: .*none\.json: no such file/],
    ];
    await assertUsageErrors(cases);
  });
});

const MORE = join(ROOT, "trace", "testdata", "deepspeed", "more");

const moreRuns: [string, string[]][] = [
  ["h1000_sg3e6", []],
  ["h1000_pipe_read", []],
  ["h1000_pipe_write_bc8", []],
  ["h1000_bucket", []],
  ["h1000_pipe_t2", []],
  ["h1000_param_cpu2", ["--steps", "1"]],
  ["h1000_gas2", []],
];
for (const [name, extra] of moreRuns) {
  Deno.test(`trace diff: a model of hidden size 1000 (${name}) matches DeepSpeed 0.14.5 too`, async () => {
    const r = await runCli([
      "trace",
      "diff",
      join(MORE, `${name}.trace.gz`),
      "--workload",
      "zero-infinity",
      "--model-tensors",
      join(MORE, "model-h1000.json"),
      "--deepspeed-config",
      join(MORE, `ds_config_${name}.json`),
      ...extra,
    ]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /trace diff: 0 of \d+ statistics beyond tolerance/);
  });
}

Deno.test("tierbench workload refuses the configs DeepSpeed 0.14.5 failed on for the same model, at the same source line", async () => {
  await withTempDir(async (dir) => {
    const cases: [string, RegExp][] = [
      ["h1000_serial_bc3", /step 2 .*partitioned_optimizer_swapper\.py L73–76/],
      [
        "h1000_pipe_write_bc7",
        /needs 8 \(DeepSpeed fails in step 2 .*ran out of swap buffers.*pipelined_optimizer_swapper\.py L207–211/,
      ],
      [
        "h1000_param_cpu",
        /buffer_size: 3000000 elements is not more than .*partitioned_param_swapper\.py L345/,
      ],
    ];
    for (const [name, want] of cases) {
      const r = await runCli([
        "workload",
        "zero-infinity",
        "--model-tensors",
        join(MORE, "model-h1000.json"),
        "--deepspeed-config",
        join(MORE, `ds_config_${name}.json`),
        "--ranks-per-node",
        "1",
        "--tiers",
        `file:${dir}`,
      ]);
      assert.equal(r.code, 2, `${name}: ${r.stderr}`);
      assert.match(r.stderr, want);
    }
  });
});
