import assert from "node:assert/strict";
import { MLP_OFFLOAD_BS, MLP_OFFLOAD_IODEPTH, mlpOffload, remoteSubgroups } from "./mlp_offload.ts";
import { bytesByPath, type Op } from "./ops.ts";
import { adamMs, resolveSetup, scaledBytes, subgroupSizes } from "./setup.ts";

const paths = { local: ["local"], remote: "remote" };
// 7B on 4 ranks: 17 subgroups, the last one smaller (64 601 088 elements)
const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 3, warmup: 0 });
const program = mlpOffload.build(setup, paths);
const rank0 = program.ranks[0]!;
const sizes = subgroupSizes(setup);
const perState = (el: number) => scaledBytes(setup, el * 4);
/** One in three on the remote path: subgroups 2, 5, 8, … */
const isRemote = (i: number) => i % 3 === 2;
const pathOf = (i: number) => isRemote(i) ? "remote" : "local";
const sgOf = (op: Op) => Number(op.label.slice(2, op.label.indexOf(".")));
const updateOps = (it: number, kind?: Op["kind"]) =>
  rank0.ops.filter((op) =>
    op.iteration === it && op.phase === "update" && (kind === undefined || op.kind === kind)
  );
const adamOrder = (it: number) =>
  updateOps(it, "compute").filter((op) => op.label.endsWith(".adam")).map(sgOf);
const ascending = sizes.map((_, i) => i);
/** Subgroups of `path` in the order iteration `it` updates them. */
const onPath = (it: number, path: string) =>
  (it % 2 === 0 ? ascending : [...ascending].reverse()).filter((i) => pathOf(i) === path);

Deno.test("mlp-offload builds one program per rank with 17 subgroups for 7B on 4 ranks", () => {
  assert.equal(program.ranks.length, 4);
  assert.equal(sizes.length, 17);
  assert.equal(program.derived.subgroups_per_rank, 17);
  for (const r of program.ranks.slice(1)) {
    assert.deepEqual(r.ops, rank0.ops);
    assert.deepEqual(r.initial, rank0.initial);
  }
});

Deno.test("mlp-offload puts one in three subgroups on the remote path, evenly", () => {
  assert.deepEqual(remoteSubgroups(17, 1 / 3), sizes.map((_, i) => isRemote(i)));
  assert.equal(program.derived.subgroups_remote, 5);
  assert.equal(program.derived.subgroups_local, 12);
  assert.equal(program.derived.remote_ratio, 1 / 3);
  // every subgroup is read from its path in iteration 0
  for (const op of updateOps(0, "read")) assert.equal(op.path, pathOf(sgOf(op)));
  // exact ratios land exactly, whatever binary makes of them
  for (const [ratio, count] of [[1 / 3, 300], [0.3, 1000], [0.25, 179], [0.1, 50]] as const) {
    const remote = remoteSubgroups(count, ratio);
    assert.equal(remote.filter((r) => r).length, Math.floor(count * ratio + 1e-9));
    // evenly: any window of 1/ratio subgroups holds at most ⌈window·ratio⌉ remote ones
    const window = Math.round(1 / ratio);
    for (let i = 0; i + window <= count; i++) {
      assert.ok(remote.slice(i, i + window).filter((r) => r).length <= 1);
    }
  }
  assert.ok(remoteSubgroups(20, 0).every((r) => !r));
});

Deno.test("mlp-offload alternates ascending and descending order each iteration", () => {
  assert.deepEqual(adamOrder(0), ascending);
  assert.deepEqual(adamOrder(1), [...ascending].reverse());
  assert.deepEqual(adamOrder(2), ascending);
  // reads follow the same order on each path's stream
  for (const it of [0, 1, 2]) {
    for (const path of ["local", "remote"]) {
      const served = updateOps(it).filter((op) => op.stream === `${path}:read`);
      const order = served.filter((op) => op.kind === "hit" || op.object!.endsWith(".params"))
        .map(sgOf);
      assert.deepEqual(order, onPath(it, path));
    }
  }
});

Deno.test("mlp-offload serves the last two subgroups of each path from host memory in the next pass", () => {
  assert.equal(updateOps(0, "hit").length, 0);
  for (const it of [1, 2]) {
    for (const path of ["local", "remote"]) {
      const stream = updateOps(it).filter((op) => op.stream === `${path}:read`);
      // the pass starts on the two its predecessor kept: hits, first on the path's read stream
      assert.deepEqual(stream.slice(0, 2).map((op) => op.kind), ["hit", "hit"]);
      assert.equal(stream.filter((op) => op.kind === "hit").length, 2);
      assert.deepEqual(stream.slice(0, 2).map(sgOf), onPath(it - 1, path).slice(-2).reverse());
      assert.deepEqual(stream.slice(0, 2).map(sgOf), onPath(it, path).slice(0, 2));
      for (const h of stream.slice(0, 2)) {
        assert.equal(h.path, path);
        assert.equal(h.bytes, 3 * perState(sizes[sgOf(h)]!));
      }
    }
  }
  // iteration 1 (descending) starts on 16, 15 locally and 14, 11 remotely; 2 on 0, 1 and 2, 5
  const hitsOf = (it: number) => updateOps(it, "hit").map(sgOf).sort((a, b) => a - b);
  assert.deepEqual(hitsOf(1), [11, 14, 15, 16]);
  assert.deepEqual(hitsOf(2), [0, 1, 2, 5]);
  // and those kept are not written back at the end of the pass before
  const written = (it: number) =>
    new Set(updateOps(it, "write").filter((op) => op.object!.endsWith(".v")).map(sgOf));
  for (const it of [0, 1, 2]) {
    for (const path of ["local", "remote"]) {
      const seq = onPath(it, path);
      for (const i of seq.slice(-2)) assert.ok(!written(it).has(i), `it ${it} sg${i} kept`);
      for (const i of seq.slice(0, -2)) assert.ok(written(it).has(i), `it ${it} sg${i} written`);
    }
  }
});

Deno.test("mlp-offload moves 12 B/param per subgroup per path, minus what the cache holds", () => {
  const sum = (ids: readonly number[]) => ids.reduce((t, i) => t + 3 * perState(sizes[i]!), 0);
  for (const it of [0, 1, 2]) {
    const want: Record<string, number> = {};
    for (const path of ["local", "remote"]) {
      const seq = onPath(it, path);
      const hits = it === 0 ? [] : seq.slice(0, 2);
      want[`${path}:read`] = sum(seq) - sum(hits);
      want[`${path}:write`] = sum(seq.slice(0, -2));
      if (it > 0) want[`${path}:hit`] = sum(hits);
    }
    assert.deepEqual(bytesByPath(updateOps(it)), want);
    if (it === 2) continue;
    // the derived values state iterations 0 and 1
    for (const path of ["local", "remote"]) {
      for (const kind of ["read", "write", "hit"]) {
        assert.equal(
          program.derived[`update_${path}_${kind}_bytes_it${it}`],
          want[`${path}:${kind}`] ?? 0,
        );
      }
    }
  }
  // per object: 1e8 elements × 4 B × 0.001 = 400 000 B, rounded up to 4 KiB
  for (const op of updateOps(0, "read")) assert.equal(op.bytes, perState(sizes[sgOf(op)]!));
  assert.equal(perState(1e8), 401_408);
  // iteration 0: every state read once; 3 objects per subgroup, none cached yet
  assert.equal(updateOps(0, "read").length, 3 * 17);
  assert.equal(updateOps(0, "write").length, 3 * (17 - 4));
  assert.equal(updateOps(1, "read").length, 3 * (17 - 4));
});

Deno.test("mlp-offload has no gradient I/O: backward is forward and backward think time", () => {
  for (let it = 0; it < 3; it++) {
    const ops = rank0.ops.filter((op) => op.iteration === it && op.phase === "backward");
    assert.deepEqual(ops.map((op) => op.kind), ["barrier", "compute", "compute"]);
    assert.ok(ops.every((op) => op.path === undefined && op.bytes === 0));
  }
  assert.ok(!rank0.ops.some((op) => op.object?.includes("grad")));
  // Adam on the CPU for every subgroup
  for (const op of updateOps(0, "compute")) assert.equal(op.ms, adamMs(setup, sizes[sgOf(op)]!));
});

Deno.test("mlp-offload prefetches one subgroup ahead per path and keeps two write buffers per path", () => {
  const ops = rank0.ops;
  for (const it of [0, 1]) {
    const adam = updateOps(it, "compute");
    for (const path of ["local", "remote"]) {
      const seq = onPath(it, path);
      const computeOf = (i: number) => adam.find((op) => sgOf(op) === i)!;
      for (const [k, i] of seq.entries()) {
        const inputs = updateOps(it).filter((op) =>
          (op.kind === "read" || op.kind === "hit") && sgOf(op) === i
        );
        for (const r of inputs) {
          // read(k) waits for compute(k-2) of its path, not for compute(k-1)
          if (k >= 2) assert.ok(r.after.includes(computeOf(seq[k - 2]!).id));
          if (k >= 1) assert.ok(!r.after.includes(computeOf(seq[k - 1]!).id));
          assert.equal(r.stream, `${path}:read`);
        }
        const c = computeOf(i);
        assert.deepEqual(
          c.after.filter((id) => ops[id]!.stream === `${path}:read`),
          inputs.map((op) => op.id),
        );
        // compute(k) waits for the last write of k-2 on its path (when it was written)
        const w = k >= 2
          ? updateOps(it, "write").findLast((op) => sgOf(op) === seq[k - 2])
          : undefined;
        assert.deepEqual(
          c.after.filter((id) => ops[id]!.kind === "write"),
          w ? [w.id] : [],
        );
        if (w) assert.equal(w.stream, `${path}:write`);
      }
    }
  }
});

Deno.test("mlp-offload opens each phase with a barrier after the last op of every stream", () => {
  const ops = rank0.ops;
  const barriers = ops.filter((op) => op.kind === "barrier");
  assert.equal(barriers.length, 2 * 3);
  assert.deepEqual(barriers[0]!.after, []);
  for (const bar of barriers.slice(1)) {
    assert.equal(bar.stream, "compute");
    const before = ops.filter((op) =>
      op.id < bar.id && op.id > (barriers[barriers.indexOf(bar) - 1]!).id
    );
    const lastOf = new Map(before.map((op) => [op.stream, op.id]));
    assert.deepEqual(
      [...bar.after].sort((a, b) => a - b),
      [...lastOf.values()].sort((a, b) => a - b),
    );
  }
  // after an update: compute and all four I/O streams
  const lastUpdate = barriers[2]!;
  assert.deepEqual(
    lastUpdate.after.map((id) => ops[id]!.stream).sort(),
    ["compute", "local:read", "local:write", "remote:read", "remote:write"],
  );
});

Deno.test("mlp-offload lets one rank read and one write each path at a time, 2 MiB blocks at depth 8", () => {
  assert.deepEqual(program.paths, [
    { name: "local", role: "local", bs: MLP_OFFLOAD_BS, iodepth: 8, readers: 1, writers: 1 },
    { name: "remote", role: "remote", bs: MLP_OFFLOAD_BS, iodepth: 8, readers: 1, writers: 1 },
  ]);
  assert.equal(MLP_OFFLOAD_BS, 2 * 1024 * 1024);
  assert.equal(MLP_OFFLOAD_IODEPTH, 8);
  const tuned = mlpOffload.build(setup, paths, { bs: 1 << 20, iodepth: 32 });
  for (const p of tuned.paths) {
    assert.equal(p.bs, 1 << 20);
    assert.equal(p.iodepth, 32);
    assert.equal(p.readers, 1);
    assert.equal(p.writers, 1);
  }
});

Deno.test("mlp-offload lays out params, m and v of every subgroup on its path", () => {
  assert.equal(rank0.initial.length, 3 * 17);
  for (const o of rank0.initial) {
    const i = Number(o.object.slice(2, o.object.indexOf(".")));
    assert.equal(o.path, pathOf(i));
    assert.equal(o.bytes, perState(sizes[i]!));
  }
});

Deno.test("mlp-offload follows remoteRatio and cacheSubgroups", () => {
  const allLocal = mlpOffload.build(setup, paths, { remoteRatio: 0, cacheSubgroups: 0 });
  const ops = allLocal.ranks[0]!.ops;
  assert.ok(!ops.some((op) => op.path === "remote"));
  assert.ok(!ops.some((op) => op.kind === "hit"));
  const bytes = bytesByPath(ops, (op) => op.iteration === 1);
  const all = sizes.reduce((t, el) => t + 3 * perState(el), 0);
  assert.deepEqual(bytes, { "local:read": all, "local:write": all });
  const half = mlpOffload.build(setup, paths, { remoteRatio: 0.5, cacheSubgroups: 1 });
  assert.equal(half.derived.subgroups_remote, 8);
  const hits = half.ranks[0]!.ops.filter((op) => op.kind === "hit" && op.iteration === 1);
  assert.deepEqual(hits.map((op) => [op.path, op.label]), [
    ["local", "sg16.cached"],
    ["remote", "sg15.cached"],
  ]);
});

Deno.test("mlp-offload refuses to build without a remote path or with options out of range", () => {
  assert.throws(
    () => mlpOffload.build(setup, { local: ["local"] }),
    (e: unknown) => e instanceof RangeError && /needs a remote path.*pfs:DIR/.test(e.message),
  );
  assert.throws(() => mlpOffload.build(setup, { local: [], remote: "remote" }), /needs a local/);
  assert.throws(() => mlpOffload.build(setup, paths, { remoteRatio: 1 }), /--remote-ratio/);
  assert.throws(() => mlpOffload.build(setup, paths, { remoteRatio: -0.1 }), /--remote-ratio/);
  assert.throws(() => mlpOffload.build(setup, paths, { cacheSubgroups: 1.5 }), /--cache-subgroups/);
});

Deno.test("mlp-offload splits 70B's 179 subgroups 120 local, 59 remote", () => {
  const big = resolveSetup({ model: "70b", scale: 0.001, iterations: 2, warmup: 0 });
  const p = mlpOffload.build(big, paths);
  const bigSizes = subgroupSizes(big);
  assert.equal(bigSizes.length, 179);
  assert.equal(p.derived.subgroups_local, 120);
  assert.equal(p.derived.subgroups_remote, 59);
  const bytes = bytesByPath(p.ranks[0]!.ops, (op) => op.iteration === 1);
  const state = (el: number) => scaledBytes(big, el * 4);
  const local = bigSizes.filter((_, i) => !isRemote(i)).reduce((t, el) => t + 3 * state(el), 0);
  const remote = bigSizes.filter((_, i) => isRemote(i)).reduce((t, el) => t + 3 * state(el), 0);
  // descending pass: hits on 178, 177 (local) and 176, 173 (remote); keeps 0, 1 and 2, 5
  const three = (i: number) => 3 * state(bigSizes[i]!);
  assert.deepEqual(bytes, {
    "local:hit": three(178) + three(177),
    "local:read": local - three(178) - three(177),
    "local:write": local - three(0) - three(1),
    "remote:hit": three(176) + three(173),
    "remote:read": remote - three(176) - three(173),
    "remote:write": remote - three(2) - three(5),
  });
});

Deno.test("mlp-offload's node-wide limits give way to options.readers and writers; 0 removes a limit", () => {
  const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 1, warmup: 0 });
  const p = mlpOffload.build(setup, { local: ["local"], remote: "remote" }, {
    readers: 0,
    writers: 2,
  });
  for (const path of p.paths) {
    assert.equal(path.readers, undefined);
    assert.equal(path.writers, 2);
  }
});

Deno.test("mlp-offload keeps remoteCacheSubgroups of the remote path and cacheSubgroups of the local one", () => {
  const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 2, warmup: 0 });
  const p = mlpOffload.build(setup, { local: ["local"], remote: "remote" }, {
    cacheSubgroups: 3,
    remoteCacheSubgroups: 1,
  });
  const hits = p.ranks[0]!.ops.filter((op) => op.kind === "hit" && op.iteration === 1);
  assert.equal(hits.filter((op) => op.path === "local").length, 3);
  assert.equal(hits.filter((op) => op.path === "remote").length, 1);
  assert.equal(p.derived.cache_subgroups_remote, 1);
});

Deno.test("mlp-offload runs on the local path alone when nothing is remote and no remote path is given", () => {
  const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 1, warmup: 0 });
  const p = mlpOffload.build(setup, { local: ["local"] }, { remoteRatio: 0 });
  assert.deepEqual(p.paths.map((path) => path.name), ["local"]);
  assert.ok(p.ranks[0]!.ops.every((op) => op.path === undefined || op.path === "local"));
  assert.throws(
    () => mlpOffload.build(setup, { local: ["local"] }, { remoteRatio: 0.25 }),
    /needs a remote path/,
  );
});
