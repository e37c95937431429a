import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../tests/_helpers.ts";
import { profileErrorOf } from "../tests/_profile.ts";
import { loadProfile, readProfile } from "./profile.ts";
import type { ScalingResult } from "../schema/scaling.ts";

const MiB = 1048576;
// deno-lint-ignore no-explicit-any
type Json = any;

/** A hand-written profile with a file tier, a pfs tier and a curve for pfs, changed by `edit`. */
function withCurve(edit: (doc: Json) => void = () => {}): Json {
  const tier = { read_bw_bytes: 6e9, write_bw_bytes: 3e9, bs: MiB, iodepth: 8 };
  const doc: Json = {
    schema: "tierbench/profile@1",
    created: "2026-11-21",
    host: { name: "n1", memory_bytes: 512 * 2 ** 30, cpus: 64 },
    tiers: {
      file: { kind: "file", ...tier },
      pfs: { kind: "pfs", ...tier, read_bw_bytes: 3e9, write_bw_bytes: 2e9 },
    },
    scaling: {
      pfs: {
        bs: MiB,
        iodepth: 8,
        points: [
          { nodes: 1, read_bw_bytes_per_node: 3e9, write_bw_bytes_per_node: 2e9 },
          { nodes: 4, read_bw_bytes_per_node: 1.5e9, write_bw_bytes_per_node: 1e9 },
        ],
      },
    },
  };
  edit(doc);
  return doc;
}

Deno.test("a hand-written curve loads as stated, the aggregates per node × nodes where not given", () => {
  const p = loadProfile(
    withCurve((d) => d.scaling.pfs.points[1].read_bw_bytes = 5e9),
    "p.json",
  );
  const c = p.scaling?.pfs;
  assert.equal(c?.basis, "stated");
  assert.deepEqual(c?.points.map((x) => x.nodes), [1, 4]);
  assert.equal(c?.points[1]?.read_bw_bytes, 5e9);
  assert.equal(c?.points[1]?.write_bw_bytes, 4e9);
  assert.equal(loadProfile(withCurve((d) => delete d.scaling), "p.json").scaling, undefined);
});

Deno.test("a bad curve is refused naming its JSON path and what is allowed", () => {
  const cases: [(d: Json) => void, string, RegExp][] = [
    [(d) => d.scaling.pfs.points[1].nodes = 1, "scaling.pfs.points[1].nodes", /does not follow 1/],
    [(d) => d.scaling.pfs.points[0].nodes = 0, "scaling.pfs.points[0].nodes", /integer ≥ 1/],
    [(d) => d.scaling.pfs.points[0].nodes = 1.5, "scaling.pfs.points[0].nodes", /integer ≥ 1/],
    [
      (d) => d.scaling.pfs.points[1].read_bw_bytes_per_node = 0,
      "scaling.pfs.points[1].read_bw_bytes_per_node",
      /bytes per second/,
    ],
    [
      (d) => d.scaling.pfs.points[1].write_bw_bytes_per_node = -1,
      "scaling.pfs.points[1].write_bw_bytes_per_node",
      /bytes per second/,
    ],
    [(d) => d.scaling.pfs.points = [], "scaling.pfs.points", /ascending by nodes/],
    [(d) => d.scaling.pfs.bs = 0, "scaling.pfs.bs", /integer > 0/],
    [
      (d) => d.scaling.pfs.points[0].speed = 1,
      "scaling.pfs.points[0].speed",
      /unknown field.*nodes/,
    ],
    [(d) => d.scaling.nfs = d.scaling.pfs, "scaling.nfs", /pfs or s3 tier's label \(pfs\)/],
    [(d) => d.scaling.file = d.scaling.pfs, "scaling.file", /a file tier, not a shared one/],
  ];
  for (const [edit, path, allowed] of cases) {
    const e = profileErrorOf(withCurve(edit));
    assert.equal(e.path, path, e.message);
    assert.match(e.message, allowed);
    assert.ok(e.message.startsWith(`--profile: p.json: ${path}: `), e.message);
  }
});

/** The contention result measured here, with `scaling` added. */
async function resultWith(scaling: ScalingResult): Promise<Json> {
  const path = join(ROOT, "solver", "testdata", "contention_memory_file_pfs.json");
  const doc = JSON.parse(await Deno.readTextFile(path));
  doc.scaling = scaling;
  return doc;
}

Deno.test("a result's scaling section becomes a measured curve, ascending, empty points and local tiers left out with a note", async () => {
  const point = (nodes: number, perNode: number) => ({
    nodes,
    read: { bw_bytes: perNode * nodes, bw_bytes_per_node: perNode },
    write: { bw_bytes: perNode * nodes / 2, bw_bytes_per_node: perNode / 2 },
  });
  const doc = await resultWith({
    tiers: [
      {
        label: "pfs",
        tier: "pfs:/mnt/cephfs",
        bs: MiB,
        iodepth: 8,
        points: [point(4, 1e8), point(1, 3e8), point(2, 0), point(2, 2e8)],
      },
      { label: "file", tier: "file:/tmp", bs: MiB, iodepth: 8, points: [point(1, 1e9)] },
    ],
  });
  const p = loadProfile(doc, "r.json");
  const c = p.scaling?.pfs;
  assert.equal(c?.basis, "measured");
  assert.deepEqual(c?.points.map((x) => [x.nodes, x.read_bw_bytes_per_node]), [
    [1, 3e8],
    [2, 2e8],
    [4, 1e8],
  ]);
  assert.equal(c?.points[2]?.write_bw_bytes, 2e8);
  assert.equal(p.scaling?.file, undefined);
  assert.ok(p.notes.some((n) => /scaling: file .* not a shared one/.test(n)), p.notes.join("\n"));
  assert.ok(p.notes.some((n) => /pfs at 2 nodes moved nothing/.test(n)), p.notes.join("\n"));
  // without the section: no curve
  const plain = await readProfile(
    join(ROOT, "solver", "testdata", "contention_memory_file_pfs.json"),
  );
  assert.equal(plain.scaling, undefined);
});

Deno.test("a result's scaling section of the wrong shape is refused naming the path", async () => {
  const doc = await resultWith({ tiers: [{ label: "pfs" }] } as unknown as ScalingResult);
  const e = profileErrorOf(doc);
  assert.match(e.path, /^scaling\.tiers\[0\]\./);
});

Deno.test("the testdata profile with a curve loads", async () => {
  const p = await readProfile(join(ROOT, "tests", "testdata", "profiles", "scaling-pfs.json"));
  assert.equal(p.scaling?.pfs?.points.length, 4);
});
