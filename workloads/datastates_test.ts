import assert from "node:assert/strict";
import {
  checkpointBytesPerParam,
  checkpointFile,
  checkpointSubgroups,
  checkpointTensors,
  datastates,
  DATASTATES_FLUSH_THREADS,
  headerBytes,
  modelStatesBytes,
  modelStatesFile,
  ringPlacement,
} from "./datastates.ts";
import { GPU_ADAM_SPEEDUP } from "./deep_optimizer_states.ts";
import { bytesByPath, type Op } from "./ops.ts";
import { adamMs, resolveSetup, scaledBytes, shardParameters } from "./setup.ts";
import { zeroInfinity } from "./zero_infinity.ts";

const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 2, warmup: 0 });
const paths = { host: "host", local: ["local"], remote: "remote" };
const program = datastates.build(setup, paths);
const rank0 = program.ranks[0]!;
// DeepSpeed's subgroups at its default sub_group_size, 1e9: the checkpoint's tensors
const sizes = checkpointSubgroups(setup, 1e9);
const ms = modelStatesBytes(setup);
const state = (el: number) => scaledBytes(setup, el * 4);
// fp32 params + m + v: 3 × 4 = 12 B/param of the rank's shard, one tensor per state and subgroup
const ckpt = sizes.reduce((t, el) => t + 3 * state(el), 0);
const header = headerBytes(setup, 3 * sizes.length);

const phaseOps = (ops: readonly Op[], it: number, phase: string) =>
  ops.filter((op) => op.iteration === it && op.phase === phase);
const isIo = (op: Op) => op.kind === "read" || op.kind === "write";

Deno.test("datastates saves 12 B/param of each ZeRO-3 rank's shard (fp32 params, m, v): into the host ring, then to remote", () => {
  assert.equal(program.ranks.length, 4);
  assert.equal(checkpointBytesPerParam(setup), 12);
  assert.equal(program.derived.checkpoint_bytes_per_param, 12);
  assert.equal(program.derived.checkpoint_bytes_per_rank_unscaled, shardParameters(setup) * 12);
  assert.equal(program.derived.checkpoint_bytes_per_rank, ckpt);
  assert.equal(program.derived.checkpoint_tensors_per_rank, 3 * sizes.length);
  // tensors round up to 4 KiB each: within a block per tensor of the scaled shard
  const exact = shardParameters(setup) * 12 * setup.scale;
  assert.ok(ckpt >= exact && ckpt - exact < 4096 * 3 * sizes.length);
  for (let it = 0; it < 2; it++) {
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it, "checkpoint")), { "host:write": ckpt });
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it, "flush")), {
      "remote:write": ms + header + ckpt,
    });
  }
  assert.equal(checkpointBytesPerParam(resolveSetup({ model: "7b", bytesPerState: 2 })), 6);
});

Deno.test("datastates lists m and v of every subgroup, then the fp32 partitions, as DeepSpeed's ZeRO-3 state dict holds them", () => {
  const names = checkpointTensors(setup).map((t) => t.name);
  const n = sizes.length;
  assert.deepEqual(names.slice(0, 4), ["sg0.m", "sg0.v", "sg1.m", "sg1.v"]);
  assert.deepEqual(names.slice(2 * n), sizes.map((_, i) => `sg${i}.params`));
  assert.deepEqual(
    checkpointTensors(setup).map((t) => t.bytes),
    [...sizes.flatMap((el) => [state(el), state(el)]), ...sizes.map(state)],
  );
});

Deno.test("datastates without optimizer offload trains on the GPU alone: forward, backward and Adam, no I/O", () => {
  assert.equal(program.derived.offload_optimizer, false);
  assert.deepEqual(program.paths.map((p) => [p.name, p.role]), [
    ["host", "host"],
    ["remote", "remote"],
  ]);
  assert.equal(rank0.initial.length, 0);
  for (let it = 0; it < 2; it++) {
    const train = rank0.ops.filter((op) =>
      op.iteration === it && (op.phase === "backward" || op.phase === "update")
    );
    assert.ok(train.every((op) => !isIo(op)));
    const adam = train.filter((op) => op.label === "adam (GPU)");
    assert.equal(adam.length, 1);
    assert.equal(adam[0]!.ms, adamMs(setup, shardParameters(setup)) / GPU_ADAM_SPEEDUP);
  }
  // no local path is needed
  const p = datastates.build(setup, { host: "host", local: [], remote: "remote" });
  assert.equal(p.ranks.length, 4);
});

Deno.test("datastates with offloadOptimizer runs zero-infinity's backward and update ops unchanged on the local path", () => {
  const off = datastates.build(setup, paths, { offloadOptimizer: true });
  const mine0 = off.ranks[0]!;
  assert.equal(off.derived.offload_optimizer, true);
  assert.deepEqual(off.paths.map((p) => p.name), ["local", "host", "remote"]);
  const zi = zeroInfinity.build(setup, { local: ["local"] }).ranks[0]!;
  const shape = (op: Op) => [op.kind, op.stream, op.phase, op.object, op.bytes, op.ms, op.label];
  for (let it = 0; it < 2; it++) {
    for (const phase of ["backward", "update"]) {
      const mine = phaseOps(mine0.ops, it, phase);
      const theirs = phaseOps(zi.ops, it, phase);
      assert.deepEqual(mine.map(shape), theirs.map(shape), `${it} ${phase}`);
      const rel = (ops: Op[]) =>
        ops.filter((op) => op.kind !== "barrier").map((op) => op.after.map((a) => a - ops[0]!.id));
      assert.deepEqual(rel(mine), rel(theirs), `${it} ${phase}`);
    }
  }
  assert.deepEqual(mine0.initial, zi.initial);
  assert.throws(
    () =>
      datastates.build(setup, { host: "h", local: [], remote: "r" }, { offloadOptimizer: true }),
    /needs a local path/,
  );
});

Deno.test("datastates writes one file per save in a new global_step directory: the header at 0, each tensor at its offset after it", () => {
  for (let it = 0; it < 2; it++) {
    const [states, ...flush] = phaseOps(rank0.ops, it, "flush");
    // DeepSpeed saves the module's states first, a small file of each rank
    assert.equal(
      modelStatesFile(it + 1, 0),
      `global_step${it + 1}/zero_pp_rank_0_mp_rank_00_model_states.pt`,
    );
    assert.deepEqual(
      [states!.object, states!.stream, states!.bytes, states!.fsync],
      [modelStatesFile(it + 1, 0), "remote:write", ms, undefined],
    );
    const file = `global_step${it + 1}/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt`;
    assert.equal(checkpointFile(it + 1, 0), file);
    assert.ok(flush.every((op) => op.object === file && op.path === "remote"));
    assert.ok(flush.every((op) => op.direct === false && op.background === true));
    const [head, ...tensors] = flush;
    assert.deepEqual([head!.stream, head!.offset ?? 0, head!.bytes], ["remote:header", 0, header]);
    let at = header;
    for (const [k, t] of checkpointTensors(setup).entries()) {
      const op = tensors[k]!;
      assert.deepEqual([op.stream, op.label, op.offset, op.bytes], [
        "remote:write",
        `${t.name}.flush`,
        at,
        t.bytes,
      ]);
      at += t.bytes;
    }
  }
  // other ranks write their own file
  assert.ok(
    program.ranks[3]!.ops.some((op) =>
      op.object === "global_step1/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt"
    ),
  );
  assert.equal(program.derived.flush_threads_per_rank, DATASTATES_FLUSH_THREADS);
  assert.equal(DATASTATES_FLUSH_THREADS, 1);
  // one flush thread: one request at a time on the remote path
  assert.equal(program.paths.find((p) => p.name === "remote")!.iodepth, 1);
});

Deno.test("datastates flushes each tensor after its snapshot, and the snapshots follow the update", () => {
  for (let it = 0; it < 2; it++) {
    const snap = phaseOps(rank0.ops, it, "checkpoint");
    const flush = phaseOps(rank0.ops, it, "flush").slice(2);
    assert.equal(snap[0]!.kind, "barrier");
    const copies = snap.slice(1);
    assert.equal(copies.length, 3 * sizes.length);
    for (const [k, c] of copies.entries()) {
      assert.deepEqual([c.stream, c.path, c.object], ["host:write", "host", "ring"]);
      assert.ok(!c.background && c.direct === undefined);
      assert.deepEqual(flush[k]!.after, [c.id]);
    }
    const update = phaseOps(rank0.ops, it, "update");
    assert.ok(snap[0]!.after.includes(update.at(-1)!.id));
  }
});

Deno.test("ringPlacement() places tensors at the head or at 0, each waiting for the newest flush in its space", () => {
  // 4 bytes: 2 + 2 fill it; the third goes at 0 over the first and waits for its flush; 3 does
  // not fit after it, goes at 0 over the second and third, and waits for the third's flush; 1 fits
  // after it
  assert.deepEqual(ringPlacement([2, 2, 2, 3, 1], 4), [
    { offset: 0, waitsFor: -1 },
    { offset: 2, waitsFor: -1 },
    { offset: 0, waitsFor: 0 },
    { offset: 0, waitsFor: 2 },
    { offset: 3, waitsFor: -1 },
  ]);
  // a ring that holds everything never waits
  assert.ok(ringPlacement([1, 2, 3], 6).every((s) => s.waitsFor === -1));
  assert.throws(() => ringPlacement([5], 4), /larger than the ring/);
});

Deno.test("datastates with a host cache smaller than a checkpoint makes snapshots wait for flushes, tensor by tensor", () => {
  // subgroups of 1e8 elements: room for about 4 tensors of a full one (1e8 elements × 4 B)
  const small = { checkpointSubgroupSize: 1e8 };
  const p = datastates.build(setup, paths, { ...small, hostCacheBytes: 4 * 4e8 });
  const ops = p.ranks[0]!.ops;
  const cache = scaledBytes(setup, 4 * 4e8);
  assert.equal(p.derived.host_cache_bytes, cache);
  assert.equal(p.derived.host_cache_bytes_unscaled, 4 * 4e8);
  const copies = ops.filter((op) => op.phase === "checkpoint" && op.kind === "write");
  const flushes = ops.filter((op) => op.phase === "flush" && op.label.endsWith(".flush"));
  const slots = ringPlacement(copies.map((op) => op.bytes), cache);
  for (const [k, c] of copies.entries()) {
    const s = slots[k]!;
    assert.equal(c.offset, s.offset);
    assert.equal(c.offset! + c.bytes <= cache, true);
    if (s.waitsFor >= 0) assert.ok(c.after.includes(flushes[s.waitsFor]!.id), `copy ${k}`);
    else assert.ok(c.after.every((a) => ops[a]!.kind === "barrier"), `copy ${k}`);
  }
  // tensors of the first checkpoint already wait; the next checkpoint's first on the one before
  const first = copies.filter((op) => op.iteration === 0).length;
  assert.ok(slots.slice(0, first).some((s) => s.waitsFor >= 0));
  assert.ok(slots[first]!.waitsFor >= 0 && slots[first]!.waitsFor < first);
  assert.equal(p.derived.ring_waits_per_rank, slots.filter((s) => s.waitsFor >= 0).length);
  // the default ring holds one checkpoint: only the next checkpoint's tensors wait
  assert.equal(program.derived.host_cache_bytes, ckpt);
  const d = rank0.ops.filter((op) => op.phase === "checkpoint" && op.kind === "write");
  assert.ok(d.filter((op) => op.iteration === 0).every((op) => op.after.length === 1));
  assert.throws(
    () => datastates.build(setup, paths, { ...small, hostCacheBytes: 1e8 }),
    /a host cache of 100000000 bytes cannot hold a tensor of 415617024 bytes/,
  );
});

Deno.test("datastates blocks the next iteration on the snapshot, not on the flush", () => {
  const next = phaseOps(rank0.ops, 1, "backward")[0]!;
  assert.equal(next.kind, "barrier");
  const snap0 = phaseOps(rank0.ops, 0, "checkpoint");
  assert.ok(next.after.includes(snap0.at(-1)!.id));
  assert.ok(next.after.every((a) => rank0.ops[a]!.phase !== "flush"));
  // nothing but a snapshot and the drain waits for a flush op
  for (const op of rank0.ops) {
    if (op.after.some((a) => rank0.ops[a]!.phase === "flush")) {
      assert.ok(["checkpoint", "drain"].includes(op.phase), op.label);
    }
  }
});

Deno.test("datastates drains the last flush and header with a final barrier", () => {
  const drain = rank0.ops.at(-1)!;
  assert.deepEqual([drain.kind, drain.phase, drain.iteration], ["barrier", "drain", 1]);
  const flush = phaseOps(rank0.ops, 1, "flush");
  assert.ok(drain.after.includes(flush.at(-1)!.id));
  assert.ok(drain.after.includes(flush.find((op) => op.label === "header")!.id));
  assert.equal(rank0.ops.filter((op) => op.phase === "drain").length, 1);
});

Deno.test("datastates checkpoints every checkpointEvery iterations", () => {
  const s = resolveSetup({ model: "7b", scale: 0.001, iterations: 4, warmup: 1 });
  const p = datastates.build(s, paths, { checkpointEvery: 2 });
  const ops = p.ranks[0]!.ops;
  const at = [...new Set(ops.filter((op) => op.phase === "checkpoint").map((op) => op.iteration))];
  assert.deepEqual(at, [1, 3]);
  assert.equal(p.derived.checkpoints, 2);
  assert.equal(p.derived.checkpoint_files_per_rank, 2);
  const files = new Set(ops.filter((op) => op.phase === "flush").map((op) => op.object));
  assert.deepEqual([...files], [
    modelStatesFile(2, 0),
    checkpointFile(2, 0),
    modelStatesFile(4, 0),
    checkpointFile(4, 0),
  ]);
  const drain = ops.at(-1)!;
  assert.deepEqual([drain.phase, drain.iteration], ["drain", 4]);
  const byIt = (it: number) => bytesByPath(ops, (op) => op.iteration === it);
  const g = checkpointSubgroups(s, 1e9);
  const c = g.reduce((t, el) => t + 3 * scaledBytes(s, el * 4), 0);
  const h = headerBytes(s, 3 * g.length);
  assert.deepEqual(byIt(1), { "host:write": c, "remote:write": modelStatesBytes(s) + h + c });
  assert.deepEqual(byIt(2), {});
  assert.throws(() => datastates.build(s, paths, { checkpointEvery: 0 }), /checkpointEvery 0/);
});

Deno.test("datastates barriers match across ranks", () => {
  const shape = (ops: readonly Op[]) =>
    ops.filter((op) => op.kind === "barrier").map((op) => `${op.iteration}.${op.phase}`);
  const want = shape(rank0.ops);
  assert.deepEqual(want, [
    "0.backward",
    "0.update",
    "0.checkpoint",
    "1.backward",
    "1.update",
    "1.checkpoint",
    "1.drain",
  ]);
  for (const r of program.ranks) assert.deepEqual(shape(r.ops), want);
});

Deno.test("datastates needs host and remote paths", () => {
  assert.deepEqual(datastates.needs, ["host", "remote"]);
  assert.throws(
    () => datastates.build(setup, { local: ["local"], remote: "remote" }),
    /needs a host path/,
  );
  assert.throws(
    () => datastates.build(setup, { host: "host", local: ["local"] }),
    /needs a remote path/,
  );
});

Deno.test("datastates' checkpoint tensors are DeepSpeed's subgroups at its default sub_group_size, not 1e8 cuts", () => {
  const big = resolveSetup({ model: "llama2-70b", scale: 1e-4, iterations: 1, warmup: 0 });
  // 17.2 G parameters per rank: 17 subgroups of whole partitions of about 1e9 → 51 tensors
  assert.equal(checkpointTensors(big).length, 51);
  assert.equal(checkpointTensors(big, 1e8).length, 3 * 82);
  const p = datastates.build(big, paths);
  assert.equal(p.derived.checkpoint_subgroup_elements, 1e9);
  assert.equal(p.derived.checkpoint_tensors_per_rank, 51);
  // the option, and the setup's subgroups under offloadOptimizer (zero-infinity's own)
  assert.equal(
    datastates.build(big, paths, { checkpointSubgroupSize: 1e8 }).derived
      .checkpoint_tensors_per_rank,
    3 * 82,
  );
  assert.equal(
    datastates.build(big, paths, { offloadOptimizer: true }).derived.checkpoint_subgroup_elements,
    big.subgroupElements,
  );
  assert.throws(
    () => datastates.build(big, paths, { checkpointSubgroupSize: 0 }),
    /--checkpoint-subgroup-size: 0 is not an integer ≥ 1/,
  );
});

Deno.test("datastates with snapshotBlocking none never holds training on the copies", () => {
  assert.equal(program.derived.snapshot_blocking, "copy");
  const p = datastates.build(setup, paths, { snapshotBlocking: "none" });
  const ops = p.ranks[0]!.ops;
  assert.equal(p.derived.snapshot_blocking, "none");
  const copies = ops.filter((op) => op.phase === "checkpoint" && op.kind === "write");
  assert.ok(copies.length > 0 && copies.every((op) => op.background === true));
  // the next iteration's first barrier waits for no copy; the drain waits for the last flush
  const next = ops.find((op) => op.iteration === 1 && op.kind === "barrier")!;
  assert.ok(next.after.every((a) => ops[a]!.phase !== "checkpoint" || ops[a]!.kind === "barrier"));
  assert.ok(ops.at(-1)!.after.includes(ops.filter((op) => op.label.endsWith(".flush")).at(-1)!.id));
  assert.throws(
    () => datastates.build(setup, paths, { snapshotBlocking: "some" as "none" }),
    /--snapshot-blocking: "some" is not one of copy, none/,
  );
});

Deno.test("datastates with flushMode pwrite-fsync persists each flushed object, ofstream none", () => {
  const flushes = (ops: readonly Op[]) =>
    ops.filter((op) => op.phase === "flush" && op.stream === "remote:write");
  assert.equal(program.derived.flush_mode, "ofstream");
  assert.ok(flushes(rank0.ops).every((op) => op.fsync === undefined));
  const p = datastates.build(setup, paths, { flushMode: "pwrite-fsync" });
  assert.equal(p.derived.flush_mode, "pwrite-fsync");
  const f = flushes(p.ranks[0]!.ops);
  assert.ok(f.length === 2 * (1 + 3 * sizes.length) && f.every((op) => op.fsync === true));
  assert.throws(
    () => datastates.build(setup, paths, { flushMode: "direct" as "ofstream" }),
    /--flush-mode: "direct" is not one of ofstream, pwrite-fsync/,
  );
});
