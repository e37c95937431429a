import assert from "node:assert/strict";
import { deepspeedCheckpoint, offloadedTensorFile } from "./deepspeed_checkpoint.ts";
import { bytesByPath, type Op } from "./ops.ts";
import { resolveSetup, shardParameters } from "./setup.ts";
import { swapLayout, zeroInfinity, zeroInfinitySettings } from "./zero_infinity.ts";
import { zero3Layout } from "./zero3.ts";

const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 2, warmup: 0 });
const paths = { local: ["local"], remote: "remote" };
const program = deepspeedCheckpoint.build(setup, paths);
const rank0 = program.ranks[0]!;
// the swap files zero-infinity has: params, m and v of each swapped subgroup (padded to the
// swapper's alignment), 3 × 4 = 12 B/param of the shard; gradient files left out
const swapped = swapLayout(setup, zeroInfinitySettings()).filter((sg) => sg.swapped);
const layout = zero3Layout(setup, zeroInfinitySettings()).subgroups;
const sizes = swapped.map((sg) => sg.stateBytes);
const ckpt = sizes.reduce((t, bytes) => t + 3 * bytes, 0);

const phaseOps = (ops: readonly Op[], it: number, phase: string) =>
  ops.filter((op) => op.iteration === it && op.phase === phase);

Deno.test("deepspeed-checkpoint copies 12 B/param per rank (params, m, v swap files), reading local and writing remote", () => {
  assert.equal(program.ranks.length, 4);
  assert.equal(program.derived.checkpoint_bytes_per_param, 12);
  assert.equal(program.derived.checkpoint_bytes_per_rank_unscaled, shardParameters(setup) * 12);
  assert.equal(program.derived.checkpoint_bytes_per_rank, ckpt);
  assert.equal(program.derived.checkpoint_files_per_rank, 3 * sizes.length);
  for (let it = 0; it < 2; it++) {
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it, "checkpoint")), {
      "local:read": ckpt,
      "remote:write": ckpt,
    });
  }
  // no gradient file is copied
  assert.ok(
    rank0.ops.filter((op) => op.phase === "checkpoint").every((op) => !op.label.includes("grad")),
  );
});

Deno.test("deepspeed-checkpoint copies each swap file, read then written, one after the other, buffered, into a new global_step directory", () => {
  for (let it = 0; it < 2; it++) {
    const [open, ...copy] = phaseOps(rank0.ops, it, "checkpoint");
    assert.equal(open!.kind, "barrier");
    assert.equal(copy.length, 2 * 3 * sizes.length);
    assert.ok(copy.every((op) => op.stream === "copy" && op.direct === false && !op.background));
    // the optimizer folder's files as DeepSpeed names them: the fp32 partition, exp_avg, exp_avg_sq
    const files = layout.filter((sg) => sg.swapped).flatMap((sg) =>
      ["", "exp_avg-", "exp_avg_sq-"].map((st) => `${st}${sg.id}.tensor.swp`)
    );
    for (const [f, swap] of files.entries()) {
      const read = copy[2 * f]!, write = copy[2 * f + 1]!;
      assert.deepEqual(
        [read.kind, read.path, read.object],
        ["read", "local", `zero_stage_3/optimizer/rank0/${swap}`],
      );
      assert.deepEqual(
        [write.kind, write.path, write.object, write.bytes],
        ["write", "remote", `global_step${it + 1}/offloaded_tensors/rank0/${swap}`, read.bytes],
      );
    }
  }
  assert.equal(
    offloadedTensorFile(3, 2, "exp_avg-0_51.tensor.swp"),
    "global_step3/offloaded_tensors/rank2/exp_avg-0_51.tensor.swp",
  );
  // the remote path takes one request at a time (a synchronous sendfile)
  assert.deepEqual(program.paths.map((p) => [p.name, p.iodepth]), [["local", 8], ["remote", 1]]);
});

Deno.test("deepspeed-checkpoint blocks training: the next iteration's barrier waits for the last copy", () => {
  const next = phaseOps(rank0.ops, 1, "forward")[0]!;
  const copy = phaseOps(rank0.ops, 0, "checkpoint");
  assert.equal(next.kind, "barrier");
  assert.ok(next.after.includes(copy.at(-1)!.id));
  // the copy starts after the update's last write
  const update = phaseOps(rank0.ops, 0, "update");
  assert.ok(copy[0]!.after.includes(update.at(-1)!.id));
});

Deno.test("deepspeed-checkpoint runs zero-infinity's backward and update ops unchanged", () => {
  const zi = zeroInfinity.build(setup, { local: ["local"] }).ranks[0]!;
  const shape = (op: Op) => [op.kind, op.stream, op.phase, op.object, op.bytes, op.ms, op.label];
  for (let it = 0; it < 2; it++) {
    for (const phase of ["forward", "backward", "update"]) {
      assert.deepEqual(
        phaseOps(rank0.ops, it, phase).map(shape),
        phaseOps(zi.ops, it, phase).map(shape),
      );
    }
  }
  assert.deepEqual(rank0.initial, zi.initial);
});

Deno.test("deepspeed-checkpoint checkpoints every checkpointEvery iterations and needs local and remote paths", () => {
  const s = resolveSetup({ model: "7b", scale: 0.001, iterations: 3, warmup: 1 });
  const p = deepspeedCheckpoint.build(s, paths, { checkpointEvery: 2 });
  const at = [
    ...new Set(p.ranks[0]!.ops.filter((op) => op.phase === "checkpoint").map((op) => op.iteration)),
  ];
  assert.deepEqual(at, [1, 3]);
  assert.equal(p.derived.checkpoints, 2);
  assert.throws(
    () => deepspeedCheckpoint.build(s, paths, { checkpointEvery: 0 }),
    /checkpointEvery 0/,
  );
  assert.throws(() => deepspeedCheckpoint.build(s, { local: ["local"] }), /needs a remote path/);
  assert.throws(
    () => deepspeedCheckpoint.build(s, { local: [], remote: "r" }),
    /needs a local path/,
  );
});

Deno.test("deepspeed-checkpoint follows the DeepSpeed config: the optimizer's own states are the files it copies", async () => {
  const { parseDeepSpeedConfig } = await import("./deepspeed_config.ts");
  const deepspeed = parseDeepSpeedConfig({
    optimizer: { type: "Adagrad" },
    zero_optimization: {
      stage: 3,
      sub_group_size: 1e8,
      offload_optimizer: { device: "nvme", nvme_path: "/nvme" },
    },
  }, "ds.json");
  const p = deepspeedCheckpoint.build(setup, paths, { deepspeed });
  // Adagrad swaps one state (exp_avg_sq) beside the fp32 params: 8 B/param
  assert.equal(p.derived.checkpoint_bytes_per_param, 8);
  const copied = p.ranks[0]!.ops.filter((op) => op.phase === "checkpoint" && op.kind === "read")
    .map((op) => op.object!.split("/").at(-1)!);
  assert.ok(copied.every((f) => /^(exp_avg_sq-)?\d+_\d+\.tensor\.swp$/.test(f)));
  assert.equal(copied.length, 2 * swapped.length * 2);
});
