import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../tests/_helpers.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { makePlan } from "./planner.ts";
import { loadProfile, readProfile } from "./profile.ts";
import { profileAtNodes, remoteShare } from "./remote_share.ts";

const MiB = 1048576;

/** A node with a file tier and a pfs tier; the pfs curve is `points` (none when undefined). */
function profileWith(
  points?: { nodes: number; read_bw_bytes_per_node: number; write_bw_bytes_per_node: number }[],
) {
  const tier = { bs: MiB, iodepth: 8 };
  return loadProfile({
    schema: "tierbench/profile@1",
    created: "2026-11-21",
    host: { name: "n1", memory_bytes: 512 * 2 ** 30, cpus: 64 },
    tiers: {
      file: { kind: "file", read_bw_bytes: 6e9, write_bw_bytes: 4e9, ...tier },
      pfs: { kind: "pfs", read_bw_bytes: 5e9, write_bw_bytes: 3e9, ...tier },
    },
    ...(points ? { scaling: { pfs: { ...tier, points } } } : {}),
  }, "inline");
}

const CURVE = [
  { nodes: 1, read_bw_bytes_per_node: 5e9, write_bw_bytes_per_node: 3e9 },
  { nodes: 2, read_bw_bytes_per_node: 4e9, write_bw_bytes_per_node: 2.5e9 },
  { nodes: 8, read_bw_bytes_per_node: 1e9, write_bw_bytes_per_node: 0.5e9 },
];

Deno.test("remoteShare() at a measured count is that point's per-node figure", () => {
  const p = profileWith(CURVE);
  for (const point of CURVE) {
    const r = remoteShare(p, "pfs", "read", point.nodes);
    assert.equal(r.bw, point.read_bw_bytes_per_node);
    assert.equal(r.basis, "measured");
    assert.equal(remoteShare(p, "pfs", "write", point.nodes).bw, point.write_bw_bytes_per_node);
  }
});

Deno.test("remoteShare() between two counts interpolates per-node bandwidth linearly in N", () => {
  const p = profileWith(CURVE);
  const [, a, b] = CURVE as [unknown, typeof CURVE[0], typeof CURVE[0]];
  for (const n of [3, 4, 5, 7]) {
    const r = remoteShare(p, "pfs", "write", n);
    const want = a.write_bw_bytes_per_node +
      (b.write_bw_bytes_per_node - a.write_bw_bytes_per_node) * (n - a.nodes) / (b.nodes - a.nodes);
    assert.equal(r.basis, "interpolated");
    assert.ok(Math.abs(r.bw - want) < 1e-6 * want, `${n}: ${r.bw} vs ${want}`);
    assert.match(r.note, /interpolated between 2 nodes and 8 nodes/);
  }
});

Deno.test("remoteShare() past the last count holds that point's aggregate, shared by N, and says so", () => {
  const p = profileWith(CURVE);
  const last = CURVE[CURVE.length - 1]!;
  for (const n of [9, 16, 100]) {
    const r = remoteShare(p, "pfs", "read", n);
    assert.equal(r.basis, "extrapolated");
    assert.equal(r.bw, last.read_bw_bytes_per_node * last.nodes / n);
    assert.match(r.note, /extrapolated.*aggregate.*held.*conservative/);
  }
});

Deno.test("remoteShare() without a curve is the single-node figure, noted as not measured across nodes", () => {
  const p = profileWith();
  const r = remoteShare(p, "pfs", "read", 8);
  assert.deepEqual([r.bw, r.basis], [5e9, "single-node"]);
  assert.match(r.note, /not measured across nodes/);
  // a curve that starts past 1 node: 1 node is the tier's own figure, 2 lies between it and 4
  const late = profileWith([{
    nodes: 4,
    read_bw_bytes_per_node: 2e9,
    write_bw_bytes_per_node: 1e9,
  }]);
  assert.deepEqual([
    remoteShare(late, "pfs", "read", 1).bw,
    remoteShare(late, "pfs", "read", 1).basis,
  ], [
    5e9,
    "single-node",
  ]);
  assert.equal(remoteShare(late, "pfs", "read", 2).bw, 5e9 + (2e9 - 5e9) / 3);
  assert.throws(() => remoteShare(p, "pfs", "read", 0), RangeError);
  assert.throws(() => remoteShare(p, "pfs", "read", 1.5), RangeError);
  assert.throws(() => remoteShare(p, "nfs", "read", 1), RangeError);
});

Deno.test("profileAtNodes() replaces remote tiers' figures by their share and leaves local ones", () => {
  const p = profileWith(CURVE);
  const { profile: at8, shares } = profileAtNodes(p, 8);
  assert.equal(at8.tiers.pfs?.read_bw_bytes, 1e9);
  assert.equal(at8.tiers.pfs?.write_bw_bytes, 0.5e9);
  assert.deepEqual(at8.tiers.file, p.tiers.file);
  assert.equal(shares.pfs?.basis, "measured");
  assert.equal(shares.file, undefined);
  assert.equal(p.tiers.pfs?.read_bw_bytes, 5e9, "the profile itself is left as it was");
});

Deno.test("profileAtNodes() scales a remote tier's concurrency curve as it scales the tier's figures", () => {
  const p = profileWith(CURVE);
  const points = [
    { processes: 1, read_bw_bytes: 5e9, write_bw_bytes: 3e9 },
    {
      processes: 4,
      read_bw_bytes: 4e9,
      write_bw_bytes: 2e9,
      mixed_read_bw_bytes: 2e9,
      mixed_write_bw_bytes: 1e9,
    },
  ];
  const withCurve = {
    ...p,
    tiers: {
      ...p.tiers,
      pfs: {
        ...p.tiers.pfs!,
        concurrency: [{ basis: "stated" as const, bs: MiB, iodepth: 8, points }],
      },
    },
  };
  // at 8 nodes each node gets 1e9 of 5e9 reading (× 0.2) and 0.5e9 of 3e9 writing (× 1/6)
  const at8 = profileAtNodes(withCurve, 8).profile.tiers.pfs!.concurrency![0]!.points[1]!;
  assert.ok(Math.abs(at8.read_bw_bytes - 4e9 * 0.2) < 1);
  assert.ok(Math.abs(at8.write_bw_bytes - 2e9 / 6) < 1);
  assert.ok(Math.abs(at8.mixed_read_bw_bytes! - 2e9 * 0.2) < 1);
  assert.ok(Math.abs(at8.mixed_write_bw_bytes! - 1e9 / 6) < 1);
});

Deno.test("as the remote tier's per-node bandwidth falls with N, the plan moves state off it", async () => {
  const profile = await readProfile(
    join(ROOT, "tests", "testdata", "profiles", "scaling-pfs.json"),
  );
  const counts = profile.scaling!.pfs!.points.map((x) => x.nodes);
  const plan = await makePlan(profile, resolveSetup({ model: "70b", ranksPerNode: 4 }), {
    hostCacheBytes: 64 * 2 ** 30,
    nodes: counts[0]!,
    nodesSweep: counts,
  });
  const sweep = plan.nodes_sweep!;
  assert.deepEqual(sweep.map((s) => s.nodes), counts);
  for (let i = 1; i < sweep.length; i++) {
    const [before, now] = [sweep[i - 1]!, sweep[i]!];
    // the figures fall (both directions), so the share of state on pfs may not grow
    assert.ok(now.remote!.read_bw_bytes < before.remote!.read_bw_bytes);
    assert.ok(now.remote!.write_bw_bytes < before.remote!.write_bw_bytes);
    assert.ok((now.fraction.pfs ?? 0) <= (before.fraction.pfs ?? 0), JSON.stringify(sweep));
    // …and with it the plan's predicted phase can only lengthen, never past ZeRO-Infinity's
    assert.ok(now.update_s.plan! >= before.update_s.plan! - 1e-9);
    assert.ok(now.update_s.plan! <= now.update_s.zero_infinity! + 1e-9);
    assert.equal(now.update_s.zero_infinity, before.update_s.zero_infinity, "local only");
  }
  assert.ok(sweep.at(-1)!.fraction.pfs! < sweep[0]!.fraction.pfs!, JSON.stringify(sweep));
  assert.ok(sweep.every((s) => s.remote?.basis === "measured"));
  // the document's placement and share are the first count's
  assert.equal(plan.nodes, counts[0]);
  assert.equal(plan.remote_share?.pfs?.read_bw_bytes, sweep[0]!.remote!.read_bw_bytes);
  assert.ok(plan.predictions.mlp_offload, "MLP-Offload's fixed ratio is predicted");
});

Deno.test("makePlan() at N uses the share for every prediction: MLP-Offload's fixed ratio slows as the share falls", async () => {
  const profile = await readProfile(
    join(ROOT, "tests", "testdata", "profiles", "scaling-pfs.json"),
  );
  const setup = resolveSetup({ model: "70b", ranksPerNode: 4 });
  const at = (nodes: number) => makePlan(profile, setup, { hostCacheBytes: 64 * 2 ** 30, nodes });
  const [one, many] = [await at(1), await at(16)];
  assert.equal(many.nodes, 16);
  assert.equal(many.remote_share?.pfs?.basis, "extrapolated");
  assert.ok(many.predictions.mlp_offload!.update_s > one.predictions.mlp_offload!.update_s);
  assert.equal(many.predictions.zero_infinity.update_s, one.predictions.zero_infinity.update_s);
});
