import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../tests/_helpers.ts";
import { profileErrorOf } from "../tests/_profile.ts";
import { loadProfile, readProfile } from "./profile.ts";

const MiB = 1048576;
// deno-lint-ignore no-explicit-any
type Json = any;

/** A hand-written profile whose file tier has curves at 1 MiB and 2 MiB, changed by `edit`. */
function withCurves(edit: (doc: Json) => void = () => {}): Json {
  const point = (processes: number, read: number, write: number) => ({
    processes,
    read_bw_bytes: read,
    write_bw_bytes: write,
    mixed_read_bw_bytes: read / 2,
    mixed_write_bw_bytes: write / 2,
  });
  const doc: Json = {
    schema: "tierbench/profile@1",
    created: "2026-11-21",
    host: { name: "n1", memory_bytes: 512 * 2 ** 30, cpus: 64 },
    tiers: {
      file: {
        kind: "file",
        read_bw_bytes: 6e9,
        write_bw_bytes: 3e9,
        bs: MiB,
        iodepth: 8,
        concurrency: [
          { bs: MiB, iodepth: 8, points: [point(1, 6e9, 3e9), point(2, 5e9, 2.5e9)] },
          { bs: 2 * MiB, iodepth: 8, points: [point(1, 6.5e9, 3.2e9), point(4, 5e9, 2e9)] },
        ],
      },
    },
  };
  edit(doc);
  return doc;
}

const CURVE = "tiers.file.concurrency";

Deno.test("hand-written concurrency curves load as stated, per request size", () => {
  const c = loadProfile(withCurves(), "p.json").tiers.file!.concurrency!;
  assert.deepEqual(c.map((x) => [x.basis, x.bs, x.iodepth]), [
    ["stated", MiB, 8],
    ["stated", 2 * MiB, 8],
  ]);
  assert.deepEqual(c[1]!.points.map((p) => p.processes), [1, 4]);
  assert.equal(c[0]!.points[1]!.mixed_write_bw_bytes, 1.25e9);
  const bare = withCurves((d) => {
    for (const p of d.tiers.file.concurrency[0].points) {
      delete p.mixed_read_bw_bytes;
      delete p.mixed_write_bw_bytes;
    }
  });
  assert.equal(
    loadProfile(bare, "p.json").tiers.file!.concurrency![0]!.points[0]!.mixed_read_bw_bytes,
    undefined,
  );
  const none = withCurves((d) => delete d.tiers.file.concurrency);
  assert.equal(loadProfile(none, "p.json").tiers.file!.concurrency, undefined);
});

Deno.test("bad hand-written concurrency curves are refused naming the field", () => {
  const cases: [(d: Json) => void, string, RegExp][] = [
    [
      (d) => d.tiers.file.concurrency[0].points[0].processes = 2,
      `${CURVE}[0].points[0].processes`,
      /first point must be 1/,
    ],
    [
      (d) => d.tiers.file.concurrency[1].points[1].processes = 1,
      `${CURVE}[1].points[1].processes`,
      /1 does not follow 1/,
    ],
    [
      (d) => d.tiers.file.concurrency[0].points[1].processes = 0,
      `${CURVE}[0].points[1].processes`,
      /processes at once/,
    ],
    [
      (d) => d.tiers.file.concurrency[0].points[1].processes = 1.5,
      `${CURVE}[0].points[1].processes`,
      /integer/,
    ],
    [
      (d) => d.tiers.file.concurrency[0].points[1].read_bw_bytes = 0,
      `${CURVE}[0].points[1].read_bw_bytes`,
      /all the processes reading/,
    ],
    [
      (d) => d.tiers.file.concurrency[0].points[0].write_bw_bytes = -1,
      `${CURVE}[0].points[0].write_bw_bytes`,
      /from 1 to 1e15/,
    ],
    [
      (d) => delete d.tiers.file.concurrency[0].points[1].mixed_write_bw_bytes,
      `${CURVE}[0].points[1].mixed_write_bw_bytes`,
      /is missing, and mixed_read_bw_bytes is given/,
    ],
    [(d) => d.tiers.file.concurrency[1].bs = MiB, `${CURVE}[1].bs`, /does not follow/],
    [
      (d) => d.tiers.file.concurrency[0].iodepth = 0,
      `${CURVE}[0].iodepth`,
      /requests in flight per process/,
    ],
    [
      (d) => d.tiers.file.concurrency[0].points = [],
      `${CURVE}[0].points`,
      /ascending by processes from 1/,
    ],
    [(d) => d.tiers.file.concurrency = [], CURVE, /one per request size/],
    [
      (d) => d.tiers.file.concurrency[0].points[0].threads = 4,
      `${CURVE}[0].points[0].threads`,
      /unknown field; use one of the fields processes/,
    ],
  ];
  for (const [edit, path, text] of cases) {
    const e = profileErrorOf(withCurves(edit));
    assert.equal(e.path, path, e.message);
    assert.match(e.message, text);
  }
});

Deno.test("only the artifact node's reference profile carries curves, each with a source", async () => {
  for await (const f of Deno.readDir(join(ROOT, "results/reference"))) {
    if (!f.name.endsWith(".json")) continue;
    const p = await readProfile(join(ROOT, "results/reference", f.name));
    for (const t of Object.values(p.tiers)) {
      if (f.name !== "mlpoffload-artifact-4gpu-nvme-vast.json") {
        assert.equal(t.concurrency, undefined, f.name);
        continue;
      }
      // NVMe and VAST at the artifact's 2 MiB requests, at 1 and 4 processes (its 4 ranks)
      assert.deepEqual(t.concurrency!.map((c) => [c.basis, c.bs, c.iodepth]), [[
        "stated",
        2 << 20,
        8,
      ]]);
      assert.deepEqual(t.concurrency![0]!.points.map((x) => x.processes), [1, 4]);
      const cited = p.sources.filter((s) => s.fields.includes(`tiers.${t.label}.concurrency`));
      assert.equal(cited.length, 1, `${t.label}: one source for its curve`);
      assert.equal(cited[0]!.basis, "derived");
    }
  }
});
