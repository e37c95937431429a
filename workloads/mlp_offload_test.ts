import assert from "node:assert/strict";
import {
  cacheOfBufferCount,
  MLP_OFFLOAD_BS,
  MLP_OFFLOAD_CACHE_SUBGROUPS,
  MLP_OFFLOAD_IODEPTH,
  MLP_OFFLOAD_THREADS,
  mlpOffload,
  remoteSubgroups,
} from "./mlp_offload.ts";
import { bytesByPath, type Op } from "./ops.ts";
import { adamMs, resolveSetup } from "./setup.ts";
import { swapLayout, zeroInfinitySettings } from "./zero_infinity.ts";

const paths = { local: ["local"], remote: "remote" };
// 7B on 4 ranks: 17 subgroups of whole parameter partitions
const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 3, warmup: 0 });
/** 15 buffers: 5 subgroups cached per path (15 // 3), fewer than the remote path's 6. */
const program = mlpOffload.build(setup, paths, { bufferCount: 15 });
const rank0 = program.ranks[0]!;
const layout = swapLayout(setup, zeroInfinitySettings({ threads: 4, bs: MLP_OFFLOAD_BS }));
const N = layout.length;
/** The fork's rule with its runs' dist_opt_ratio 3: subgroups 0, 3, 6, … are remote. */
const isRemote = (i: number) => i % 3 === 0;
const pathOf = (i: number) => isRemote(i) ? "remote" : "local";
const sgOf = (op: Op) => Number(op.label.slice(2, op.label.indexOf(".")));
const updateOps = (ops: readonly Op[], it: number, kind?: Op["kind"]) =>
  ops.filter((op) =>
    op.iteration === it && op.phase === "update" && (kind === undefined || op.kind === kind)
  );
const ascending = layout.map((_, i) => i);
/** Subgroups of `path` in the order iteration `it` updates them. */
const onPath = (it: number, path: string) =>
  (it % 2 === 0 ? ascending : [...ascending].reverse()).filter((i) => pathOf(i) === path);
const state = (i: number) => layout[i]!.stateBytes;

Deno.test("mlp-offload builds one program per rank with 17 subgroups for 7B on 4 ranks", () => {
  assert.equal(program.ranks.length, 4);
  assert.equal(N, 17);
  assert.equal(program.derived.subgroups_per_rank, 17);
  for (const r of program.ranks.slice(1)) {
    assert.deepEqual(r.ops, rank0.ops);
    assert.deepEqual(r.initial, rank0.initial);
  }
  // padded to 1024 B × 4 threads: 1024 fp32 elements
  for (const sg of layout) assert.equal(sg.swapElements, Math.ceil(sg.elements / 1024) * 1024);
  assert.equal(program.derived.swap_alignment_elements, 1024);
});

Deno.test("mlp-offload puts subgroup i on the remote path when i % dist_opt_ratio == 0", () => {
  for (let k = 1; k <= 7; k++) {
    for (const n of [1, 17, 134, 200]) {
      assert.deepEqual(
        remoteSubgroups(n, 1 / k),
        Array.from({ length: n }, (_, i) => i % k === 0),
        `K ${k}, ${n}`,
      );
    }
  }
  assert.equal(program.derived.dist_opt_ratio, 3);
  assert.equal(program.derived.remote_rule, "i % 3 == 0");
  assert.equal(program.derived.subgroups_remote, 6);
  assert.equal(program.derived.subgroups_local, 11);
  for (const op of updateOps(rank0.ops, 0, "read")) assert.equal(op.path, pathOf(sgOf(op)));
  // K = 0: nothing remote; K = 2 given as distOptRatio
  assert.ok(remoteSubgroups(20, 0).every((r) => !r));
  const two = mlpOffload.build(setup, paths, { distOptRatio: 2 });
  assert.equal(two.derived.subgroups_remote, 9);
});

Deno.test("mlp-offload maps a plan's share s to ⌈(i+1)·s⌉ > ⌈i·s⌉: exactly the plan's count", () => {
  for (const n of [17, 134, 179]) {
    for (let r = 0; r <= n; r++) {
      const remote = remoteSubgroups(n, r / n);
      assert.equal(remote.filter(Boolean).length, r, `${r} of ${n}`);
    }
  }
  const p = mlpOffload.build(setup, paths, { remoteRatio: 4 / 17 });
  assert.equal(p.derived.subgroups_remote, 4);
  assert.equal(p.derived.remote_rule, "ceil((i+1)*share) > ceil(i*share)");
  assert.equal(p.derived.dist_opt_ratio, undefined);
  // a share of 1/K is the fork's rule and says so
  assert.equal(mlpOffload.build(setup, paths, { remoteRatio: 0.25 }).derived.dist_opt_ratio, 4);
});

Deno.test("mlp-offload caches buffer_count // 3 subgroups per path (25 buffers: 8), // 4 − 1 with swapped gradients", () => {
  // the artifact's logs: 25 → 8 (70B), 28 → 9 (52B), 18 → 6 (100B) with the gradients kept
  assert.deepEqual([25, 28, 18, 2].map((n) => cacheOfBufferCount(n)), [8, 9, 6, 0]);
  assert.deepEqual([25, 64, 36, 4, 3].map((n) => cacheOfBufferCount(n, true)), [5, 15, 8, 0, 0]);
  assert.equal(MLP_OFFLOAD_CACHE_SUBGROUPS, 8);
  const dflt = mlpOffload.build(setup, paths);
  assert.equal(dflt.derived.buffer_count, 25);
  assert.equal(dflt.derived.cache_subgroups_per_path, 8);
  assert.equal(dflt.derived.cache_rule, "buffer_count // 3");
  assert.equal(
    mlpOffload.build(setup, paths, { swapGradients: true }).derived.cache_subgroups_per_path,
    5,
  );
  const p = mlpOffload.build(setup, paths, { bufferCount: 12 });
  assert.equal(p.derived.cache_subgroups_per_path, 4);
  // cacheSubgroups overrides the buffer count's
  assert.equal(
    mlpOffload.build(setup, paths, { bufferCount: 12, cacheSubgroups: 1 }).derived
      .cache_subgroups_per_path,
    1,
  );
});

Deno.test("mlp-offload alternates order; each pass starts on what the last one kept", () => {
  const adamOrder = (it: number) =>
    updateOps(rank0.ops, it, "compute").filter((op) => op.label.endsWith(".adam")).map(sgOf);
  assert.deepEqual(adamOrder(0), ascending);
  assert.deepEqual(adamOrder(1), [...ascending].reverse());
  assert.equal(updateOps(rank0.ops, 0, "hit").length, 0);
  for (const it of [1, 2]) {
    for (const path of ["local", "remote"]) {
      const hits = updateOps(rank0.ops, it, "hit").filter((op) => op.path === path).map(sgOf);
      assert.deepEqual(hits, onPath(it - 1, path).slice(-5).reverse());
    }
  }
});

Deno.test("mlp-offload moves 12 B/param per subgroup per path, minus what the cache holds", () => {
  const sum = (ids: readonly number[]) => ids.reduce((t, i) => t + 3 * state(i), 0);
  for (const it of [0, 1, 2]) {
    const want: Record<string, number> = {};
    for (const path of ["local", "remote"]) {
      const seq = onPath(it, path);
      const hits = it === 0 ? [] : seq.slice(0, 5);
      want[`${path}:read`] = sum(seq) - sum(hits);
      want[`${path}:write`] = sum(seq.slice(0, -5));
      if (it > 0) want[`${path}:hit`] = sum(hits);
    }
    assert.deepEqual(bytesByPath(updateOps(rank0.ops, it)), want);
    if (it === 2) continue;
    for (const path of ["local", "remote"]) {
      for (const kind of ["read", "write", "hit"]) {
        assert.equal(
          program.derived[`update_${path}_${kind}_bytes_it${it}`],
          want[`${path}:${kind}`] ?? 0,
        );
      }
    }
  }
});

Deno.test("mlp-offload has no gradient I/O: backward is forward and backward think time", () => {
  for (let it = 0; it < 3; it++) {
    const ops = rank0.ops.filter((op) => op.iteration === it && op.phase === "backward");
    assert.deepEqual(ops.map((op) => op.kind), ["barrier", "compute", "compute"]);
  }
  assert.ok(!rank0.ops.some((op) => op.object?.includes("grad")));
  for (const op of updateOps(rank0.ops, 0, "compute")) {
    assert.equal(op.ms, adamMs(setup, layout[sgOf(op)]!.elements));
  }
});

Deno.test("mlp-offload with swapGradients writes each subgroup's gradients (4 B/param) to its path in backward and reads them back in the update, cached or not", () => {
  const swapped = mlpOffload.build(setup, paths, { swapGradients: true });
  const r0 = swapped.ranks[0]!;
  assert.equal(swapped.derived.gradients, "swapped");
  for (const it of [0, 1, 2]) {
    const backward = r0.ops.filter((op) => op.iteration === it && op.phase === "backward");
    const grads = backward.filter((op) => op.kind === "write");
    assert.deepEqual(
      grads.map((op) => [op.object, op.path, op.bytes]),
      layout.map((_, i) => [`sg${i}.grad`, pathOf(i), state(i)]),
    );
    const reads = updateOps(r0.ops, it, "read").filter((op) => op.object!.endsWith(".grad"));
    // one gradient read per subgroup, the cached ones included: 4 B/param on its own path
    assert.deepEqual(
      reads.map((op) => [op.object, op.path, op.bytes]).sort(),
      layout.map((_, i) => [`sg${i}.grad`, pathOf(i), state(i)]).sort(),
    );
    if (it === 2) continue;
    for (const path of ["local", "remote"]) {
      const want = layout.reduce((t, _, i) => t + (pathOf(i) === path ? state(i) : 0), 0);
      assert.equal(swapped.derived[`update_${path}_gradient_read_bytes_it${it}`], want);
    }
  }
  // without it, no gradient I/O (the runs' grad skip)
  assert.equal(program.derived.gradients, "host");
});

/** The lock and unlock ops of iteration `it` for subgroup `i`, in program order. */
function locksAround(ops: readonly Op[], it: number, i: number): Op[] {
  return updateOps(ops, it).filter((op) =>
    (op.kind === "lock" || op.kind === "unlock") && sgOf(op) === i
  );
}

Deno.test("mlp-offload takes the node-wide locks around remote subgroups only, by default", () => {
  for (const it of [0, 1]) {
    for (const i of ascending) {
      const around = locksAround(rank0.ops, it, i).map((op) => `${op.kind}.${op.lock}`);
      if (!isRemote(i)) {
        assert.deepEqual(around, [], `sg${i}`);
        continue;
      }
      // the read lock, then the write lock unless the subgroup stays cached
      const kept = onPath(it, "remote").slice(-5).includes(i);
      assert.deepEqual(
        around.slice(0, 2),
        ["lock.read", "unlock.read"],
        `it ${it} sg${i}`,
      );
      assert.deepEqual(around.slice(2), kept ? [] : ["lock.write", "unlock.write"]);
    }
  }
  assert.equal(program.derived.locks, "remote");
  const both = mlpOffload.build(setup, paths, { locks: "both", bufferCount: 15 }).ranks[0]!.ops;
  for (const i of ascending) {
    assert.deepEqual(
      locksAround(both, 0, i).slice(0, 2).map((op) => op.kind),
      ["lock", "unlock"],
    );
  }
  const none = mlpOffload.build(setup, paths, { locks: "none", bufferCount: 15 }).ranks[0]!.ops;
  assert.ok(!none.some((op) => op.kind === "lock" || op.kind === "unlock"));
});

Deno.test("mlp-offload holds a lock only to wait for the previous transfer and issue the next", () => {
  const ops = rank0.ops;
  for (const it of [0, 1]) {
    const seq = onPath(it, "remote");
    for (const [k, i] of seq.entries()) {
      const [lr, ur, lw, uw] = locksAround(ops, it, i);
      const reads = updateOps(ops, it).filter((op) =>
        (op.kind === "read" || op.kind === "hit") && sgOf(op) === i
      );
      // the read lock is released once this subgroup's read is in
      assert.deepEqual(ur!.after, reads.map((op) => op.id));
      // the next read on the path is issued inside it, after this one is in
      const next = seq[k + 1];
      const nextRead = updateOps(ops, it, "read").find((op) => sgOf(op) === next);
      if (next !== undefined && nextRead && nextRead.after.includes(lr!.id)) {
        assert.ok(nextRead.after.includes(reads.at(-1)!.id));
      }
      if (lw === undefined) continue;
      // the write lock is released once the previous write on the path is done (and this one
      // too when no later subgroup of the path is written in the pass)
      const myWrites = updateOps(ops, it, "write").filter((op) => sgOf(op) === i);
      for (const w of myWrites) assert.ok(w.after.includes(lw.id));
      const before = updateOps(ops, it, "write").filter((op) =>
        op.path === "remote" && op.id < myWrites[0]!.id
      ).at(-1);
      for (const id of uw!.after) {
        assert.ok(id === before?.id || id === myWrites.at(-1)!.id);
      }
      // the write is issued inside the lock and runs on outside it: the unlock does not wait
      // for it unless nothing later on the path will
      const later = seq.slice(k + 1).some((j) => !onPath(it, "remote").slice(-5).includes(j));
      assert.equal(uw!.after.includes(myWrites.at(-1)!.id), !later, `it ${it} sg${i}`);
    }
  }
});

Deno.test("mlp-offload with lock scope transfer holds a lock from issuing a transfer to its end", () => {
  const p = mlpOffload.build(setup, paths, { bufferCount: 15, lockScope: "transfer" });
  assert.equal(p.derived.lock_scope, "transfer");
  assert.equal(program.derived.lock_scope, "wait-issue");
  const ops = p.ranks[0]!.ops;
  for (const it of [0, 1]) {
    for (const i of onPath(it, "remote")) {
      const [lr, ur, lw, uw] = locksAround(ops, it, i);
      const reads = updateOps(ops, it, "read").filter((op) => sgOf(op) === i);
      // no read ahead: a remote subgroup's reads start after its own read lock, and the
      // unlock waits for them
      for (const r of reads) assert.ok(r.after.includes(lr!.id), `it ${it} sg${i}`);
      for (const r of reads) assert.ok(ur!.after.includes(r.id));
      if (lw === undefined) continue;
      // every write ends inside the write lock
      const writes = updateOps(ops, it, "write").filter((op) => sgOf(op) === i);
      assert.ok(uw!.after.includes(writes.at(-1)!.id), `it ${it} sg${i}`);
    }
  }
  // the local path, unlocked, still reads ahead
  const local = onPath(0, "local");
  const second = updateOps(ops, 0, "read").find((op) => sgOf(op) === local[1]);
  const adamOf = (i: number) =>
    updateOps(ops, 0, "compute").find((op) => op.label === `sg${i}.adam`)!;
  assert.ok(!second!.after.includes(adamOf(local[0]!).id) && second!.id < adamOf(local[1]!).id);
  assert.throws(
    () => mlpOffload.build(setup, paths, { lockScope: "whole" as "transfer" }),
    /--lock-scope: "whole" is not one of wait-issue, transfer/,
  );
});

Deno.test("mlp-offload's one swap-out loop makes the next subgroup wait for the previous write on the path", () => {
  const ops = mlpOffload.build(setup, paths, { locks: "none", bufferCount: 15 }).ranks[0]!.ops;
  const adam = updateOps(ops, 0, "compute").filter((op) => op.label.endsWith(".adam"));
  for (const [k, c] of adam.entries()) {
    const i = sgOf(c);
    const next = adam[k + 1];
    if (next === undefined) break;
    // subgroup i's swap-out waited for the write before it on i's path: the next Adam (on
    // either path) waits for it too
    const myFirst = updateOps(ops, 0, "write").find((op) => sgOf(op) === i);
    if (!myFirst) continue;
    const before = updateOps(ops, 0, "write").filter((op) =>
      op.path === pathOf(i) && op.id < myFirst.id
    ).at(-1);
    if (before) assert.ok(next.after.includes(before.id), `sg${sgOf(next)} after sg${i}'s wait`);
  }
});

Deno.test("mlp-offload uses 2 MiB blocks, depth 8 and 4 threads per handle, no semaphores", () => {
  assert.deepEqual(program.paths, [
    { name: "local", role: "local", bs: MLP_OFFLOAD_BS, iodepth: 8, threads: 4 },
    { name: "remote", role: "remote", bs: MLP_OFFLOAD_BS, iodepth: 8, threads: 4 },
  ]);
  assert.equal(MLP_OFFLOAD_BS, 2 * 1024 * 1024);
  assert.equal(MLP_OFFLOAD_IODEPTH, 8);
  assert.equal(MLP_OFFLOAD_THREADS, 4);
  const tuned = mlpOffload.build(setup, paths, { bs: 1 << 20, iodepth: 32, threads: 1 });
  for (const p of tuned.paths) {
    assert.deepEqual([p.bs, p.iodepth, p.threads], [1 << 20, 32, undefined]);
  }
  // readers and writers still set the per-path semaphores; 0 removes one
  const limited = mlpOffload.build(setup, paths, { readers: 0, writers: 2 });
  for (const p of limited.paths) {
    assert.equal(p.readers, undefined);
    assert.equal(p.writers, 2);
  }
});

Deno.test("mlp-offload lays out params, m and v of every subgroup on its path", () => {
  assert.equal(rank0.initial.length, 3 * N);
  for (const o of rank0.initial) {
    const i = Number(o.object.slice(2, o.object.indexOf(".")));
    assert.equal(o.path, pathOf(i));
    assert.equal(o.bytes, state(i));
  }
});

Deno.test("mlp-offload keeps remoteCacheSubgroups of the remote path and cacheSubgroups of the local one", () => {
  const p = mlpOffload.build(setup, paths, { cacheSubgroups: 3, remoteCacheSubgroups: 1 });
  const hits = updateOps(p.ranks[0]!.ops, 1, "hit");
  assert.equal(hits.filter((op) => op.path === "local").length, 3);
  assert.equal(hits.filter((op) => op.path === "remote").length, 1);
  assert.equal(p.derived.cache_subgroups_remote, 1);
});

Deno.test("mlp-offload refuses to build without a remote path or with options out of range", () => {
  assert.throws(
    () => mlpOffload.build(setup, { local: ["local"] }),
    (e: unknown) => e instanceof RangeError && /needs a remote path.*pfs:DIR/.test(e.message),
  );
  assert.throws(() => mlpOffload.build(setup, { local: [], remote: "remote" }), /needs a local/);
  assert.throws(() => mlpOffload.build(setup, paths, { distOptRatio: 0.33 }), /--remote-ratio/);
  assert.throws(() => mlpOffload.build(setup, paths, { remoteRatio: 1.5 }), /--remote-ratio/);
  assert.throws(() => mlpOffload.build(setup, paths, { cacheSubgroups: 1.5 }), /--cache-subgroups/);
  assert.throws(() => mlpOffload.build(setup, paths, { bufferCount: 0 }), /--buffer-count/);
});

Deno.test("mlp-offload runs on the local path alone when nothing is remote and no remote path is given", () => {
  const p = mlpOffload.build(setup, { local: ["local"] }, { remoteRatio: 0 });
  assert.deepEqual(p.paths.map((path) => path.name), ["local"]);
  assert.ok(p.ranks[0]!.ops.every((op) => op.path === undefined || op.path === "local"));
  assert.throws(
    () => mlpOffload.build(setup, { local: ["local"] }, { remoteRatio: 0.25 }),
    /needs a remote path/,
  );
});
