import assert from "node:assert/strict";
import { checkpointBytesPerParam, datastates } from "./datastates.ts";
import { bytesByPath, type Op } from "./ops.ts";
import { resolveSetup, scaledBytes, shardParameters, subgroupSizes } from "./setup.ts";
import { zeroInfinity } from "./zero_infinity.ts";

const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 2, warmup: 0 });
const paths = { host: "host", local: ["local"], remote: "remote" };
const program = datastates.build(setup, paths);
const rank0 = program.ranks[0]!;
const sizes = subgroupSizes(setup);
const chunk = (el: number) => scaledBytes(setup, el * 14);
const ckpt = sizes.reduce((t, el) => t + chunk(el), 0);

const phaseOps = (ops: readonly Op[], it: number, phase: string) =>
  ops.filter((op) => op.iteration === it && op.phase === phase);

Deno.test("datastates checkpoints 14 B/param of each rank's shard to host, then to remote", () => {
  assert.equal(program.ranks.length, 4);
  assert.equal(checkpointBytesPerParam(setup), 14);
  assert.equal(program.derived.checkpoint_bytes_per_param, 14);
  // 7B: 6.74e9 parameters over 4 ranks, in subgroups of 1e8
  assert.equal(sizes.length, Math.ceil(shardParameters(setup) / 1e8));
  assert.equal(program.derived.checkpoint_bytes_per_rank_unscaled, shardParameters(setup) * 14);
  assert.equal(program.derived.checkpoint_bytes_per_rank, ckpt);
  // chunks round up to 4 KiB each: within a block per chunk of the scaled shard
  const exact = shardParameters(setup) * 14 * setup.scale;
  assert.ok(ckpt >= exact && ckpt - exact < 4096 * sizes.length);
  for (let it = 0; it < 2; it++) {
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it, "checkpoint")), { "host:write": ckpt });
    assert.deepEqual(bytesByPath(phaseOps(rank0.ops, it, "flush")), { "remote:write": ckpt });
  }
  assert.equal(checkpointBytesPerParam(resolveSetup({ model: "7b", bytesPerState: 2 })), 8);
});

Deno.test("datastates runs zero-infinity's backward and update ops unchanged on the local path", () => {
  const zi = zeroInfinity.build(setup, { local: ["local"] }).ranks[0]!;
  const shape = (op: Op) => [op.kind, op.stream, op.phase, op.object, op.bytes, op.ms, op.label];
  for (let it = 0; it < 2; it++) {
    for (const phase of ["backward", "update"]) {
      const mine = phaseOps(rank0.ops, it, phase);
      const theirs = phaseOps(zi.ops, it, phase);
      assert.deepEqual(mine.map(shape), theirs.map(shape), `${it} ${phase}`);
      // dependencies the same, relative to the phase's first op (barriers aside)
      const rel = (ops: Op[]) =>
        ops.filter((op) => op.kind !== "barrier").map((op) => op.after.map((a) => a - ops[0]!.id));
      assert.deepEqual(rel(mine), rel(theirs), `${it} ${phase}`);
    }
  }
  assert.deepEqual(rank0.initial, zi.initial);
  const local = bytesByPath(rank0.ops, (op) => op.iteration === 1 && op.path === "local");
  // zero-infinity's own figures: p, m, v and the gradient files in, p, m, v out, gradients out
  const zd = zeroInfinity.build(setup, { local: ["local"] }).derived;
  assert.deepEqual(local, {
    "local:read": zd.update_read_bytes_per_rank,
    "local:write": Number(zd.update_write_bytes_per_rank) +
      Number(zd.gradient_write_bytes_per_rank),
  });
});

Deno.test("datastates snapshots one chunk per subgroup after the update, each flushed after it in the background", () => {
  for (let it = 0; it < 2; it++) {
    const snap = phaseOps(rank0.ops, it, "checkpoint");
    const flush = phaseOps(rank0.ops, it, "flush");
    assert.equal(snap[0]!.kind, "barrier");
    const writes = snap.slice(1);
    assert.equal(writes.length, sizes.length);
    assert.equal(flush.length, sizes.length);
    for (const [i, el] of sizes.entries()) {
      assert.deepEqual(
        [writes[i]!.stream, writes[i]!.path, writes[i]!.object, writes[i]!.bytes],
        ["host:write", "host", `snapshot.sg${i}`, chunk(el)],
      );
      assert.deepEqual(
        [flush[i]!.stream, flush[i]!.path, flush[i]!.object, flush[i]!.bytes],
        ["remote:write", "remote", `ckpt.sg${i}`, chunk(el)],
      );
      assert.deepEqual(flush[i]!.after, [writes[i]!.id]);
      assert.equal(flush[i]!.background, true);
      assert.ok(!writes[i]!.background);
    }
    // the snapshot follows the update's last write
    const update = phaseOps(rank0.ops, it, "update");
    assert.ok(snap[0]!.after.includes(update.at(-1)!.id));
    assert.ok(snap[0]!.id > update.at(-1)!.id);
  }
  assert.ok(rank0.ops.filter((op) => op.background).every((op) => op.phase === "flush"));
});

Deno.test("datastates's next snapshot waits until the previous flush has finished", () => {
  const flush0 = phaseOps(rank0.ops, 0, "flush");
  const snap1 = phaseOps(rank0.ops, 1, "checkpoint").filter((op) => op.kind === "write");
  assert.ok(snap1[0]!.after.includes(flush0.at(-1)!.id));
  // the first snapshot has no flush to wait for
  const snap0 = phaseOps(rank0.ops, 0, "checkpoint").filter((op) => op.kind === "write");
  assert.ok(snap0[0]!.after.every((a) => rank0.ops[a]!.kind === "barrier"));
});

Deno.test("datastates blocks the next iteration on the snapshot, not on the flush", () => {
  const next = phaseOps(rank0.ops, 1, "backward")[0]!;
  assert.equal(next.kind, "barrier");
  const snap0 = phaseOps(rank0.ops, 0, "checkpoint");
  assert.ok(next.after.includes(snap0.at(-1)!.id));
  assert.ok(next.after.every((a) => rank0.ops[a]!.phase !== "flush"));
  // nothing but the next snapshot and the drain waits for a flush op
  for (const op of rank0.ops) {
    if (op.after.some((a) => rank0.ops[a]!.phase === "flush")) {
      assert.ok(["checkpoint", "drain"].includes(op.phase), op.label);
    }
  }
});

Deno.test("datastates drains the last flush with a final barrier", () => {
  const drain = rank0.ops.at(-1)!;
  assert.deepEqual([drain.kind, drain.phase, drain.iteration], ["barrier", "drain", 1]);
  const lastFlush = phaseOps(rank0.ops, 1, "flush").at(-1)!;
  assert.ok(drain.after.includes(lastFlush.id));
  assert.equal(rank0.ops.filter((op) => op.phase === "drain").length, 1);
  assert.equal(drain.background, undefined);
});

Deno.test("datastates checkpoints every checkpointEvery iterations", () => {
  const s = resolveSetup({ model: "7b", scale: 0.001, iterations: 4, warmup: 1 });
  const p = datastates.build(s, paths, { checkpointEvery: 2 });
  const ops = p.ranks[0]!.ops;
  const at = [...new Set(ops.filter((op) => op.phase === "checkpoint").map((op) => op.iteration))];
  assert.deepEqual(at, [1, 3]);
  assert.equal(p.derived.checkpoints, 2);
  // the second snapshot waits for the first flush, two iterations back
  const snap3 = ops.find((op) =>
    op.kind === "write" && op.phase === "checkpoint" && op.iteration === 3
  )!;
  const flush1 = ops.filter((op) => op.phase === "flush" && op.iteration === 1).at(-1)!;
  assert.ok(snap3.after.includes(flush1.id));
  // the drain sits in the last iteration, after the last flush
  const drain = ops.at(-1)!;
  assert.deepEqual([drain.phase, drain.iteration], ["drain", 4]);
  assert.ok(drain.after.includes(ops.filter((op) => op.phase === "flush").at(-1)!.id));
  // per checkpoint, 14 B/param to host and to remote
  const byIt = (it: number) => bytesByPath(ops, (op) => op.iteration === it && op.path !== "local");
  const c = subgroupSizes(s).reduce((t, el) => t + scaledBytes(s, el * 14), 0);
  assert.deepEqual(byIt(1), { "host:write": c, "remote:write": c });
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

Deno.test("datastates drives local, host and remote paths", () => {
  assert.deepEqual(program.paths.map((p) => [p.name, p.role]), [
    ["local", "local"],
    ["host", "host"],
    ["remote", "remote"],
  ]);
  assert.throws(
    () => datastates.build(setup, { local: ["local"], remote: "remote" }),
    /needs a host path/,
  );
  assert.throws(
    () => datastates.build(setup, { host: "host", local: ["local"] }),
    /needs a remote path/,
  );
  assert.throws(
    () => datastates.build(setup, { host: "host", local: [], remote: "r" }),
    /needs a local path/,
  );
});
