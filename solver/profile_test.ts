import assert from "node:assert/strict";
import { join } from "node:path";
import { slowdownKey } from "../schema/contention.ts";
import { ConfigError } from "../core/errors.ts";
import { formatPath } from "../core/zod_issue.ts";
import { ROOT, runCli, withTempDir } from "../tests/_helpers.ts";
import { loadProfile, readProfile, slowdownKeyOf } from "./profile.ts";
import { type Direction, parsePath, ProfileError } from "../schema/profile.ts";
import { lookupSlowdown, slowdownLookup, slowdownOf, togetherOf } from "./slowdown.ts";

const REFERENCE = join(ROOT, "results", "reference");
// deno-lint-ignore no-explicit-any
type Json = any;
const MiB = 1048576;

/** The reference profiles, by file name. */
async function referenceFiles(): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(REFERENCE)) if (e.name.endsWith(".json")) names.push(e.name);
  return names.sort();
}

/** Every path under `v` that holds a number. */
function numberPaths(v: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof v === "number") return [path];
  if (v === null || typeof v !== "object") return [];
  return Object.entries(v).flatMap(([k, x]) =>
    numberPaths(x, [...path, Array.isArray(v) ? Number(k) : k])
  );
}

/** Whether a source's field (a path) covers `path`: it is the path or a prefix of it. */
function covers(field: string, path: (string | number)[]): boolean {
  const f = parsePath(field);
  return f !== undefined && f.length <= path.length && f.every((k, i) => k === path[i]);
}

/** A small valid hand-written profile, changed by `edit`. */
function handWritten(edit: (doc: Json) => void = () => {}): Record<string, unknown> {
  const tier = { read_bw_bytes: 6e9, write_bw_bytes: 3e9, bs: MiB, iodepth: 8 };
  const doc: Json = {
    schema: "tierbench/profile@1",
    created: "2026-11-21T10:00:00Z",
    host: { name: "n1", memory_bytes: 512 * 2 ** 30, cpus: 64, gpus_per_node: 4 },
    tiers: {
      memory: { kind: "memory", ...tier, read_bw_bytes: 1.4e10, write_bw_bytes: 1e10 },
      file: { kind: "file", ...tier, capacity_bytes: 3.2e12, read_lat_us: { p50: 900, p99: 2000 } },
      pfs: { kind: "pfs", ...tier, read_bw_bytes: 3e9, write_bw_bytes: 2e9 },
    },
    contention: {
      slowdown: {
        read: { file: { pfs: 1.1, "pfs:write": 1.3, "memory+pfs": 1.4 } },
        write: { pfs: { "file:read": 1.5 } },
      },
    },
    sources: [{ fields: ["tiers.file"], basis: "datasheet", what: "x", citation: "y" }],
  };
  edit(doc);
  return doc;
}

/** The message of the ProfileError that loading `doc` throws. */
function errorOf(doc: unknown, source = "p.json"): ProfileError {
  try {
    loadProfile(doc, source);
  } catch (e) {
    assert.ok(e instanceof ProfileError, `not a ProfileError: ${e}`);
    assert.ok(e instanceof ConfigError);
    assert.ok(!e.message.includes("\n"), `more than one line: ${e.message}`);
    assert.ok(!/Zod|issues|"code"| {4}at /.test(e.message), `a zod dump or stack: ${e.message}`);
    return e;
  }
  assert.fail("no error");
}

Deno.test("the reference profiles load, and every figure in them has a source", async () => {
  const names = await referenceFiles();
  assert.ok(names.length >= 2, `reference profiles: ${names.join(", ")}`);
  for (const name of names) {
    const raw = JSON.parse(await Deno.readTextFile(join(REFERENCE, name)));
    const p = await readProfile(join(REFERENCE, name));
    assert.equal(p.schema, "tierbench/profile@1");
    assert.ok(p.host.gpus_per_node && p.host.pcie_bytes_per_s && p.host.gpu_adam_params_per_s);
    assert.ok(p.host.cpu_adam_params_per_s);
    assert.ok(p.contention?.basis === "stated", name);
    for (const t of Object.values(p.tiers)) {
      assert.equal(t.measured_with, "stated");
      assert.ok(t.read_bw_bytes > 0 && t.write_bw_bytes > 0 && t.bs === MiB && t.iodepth === 8);
    }
    const unsourced = numberPaths({ host: raw.host, tiers: raw.tiers, contention: raw.contention })
      .filter((path) => !p.sources.some((s) => s.fields.some((f) => covers(f, path))))
      .map(formatPath);
    assert.deepEqual(unsourced, [], `${name}: figures without a source`);
    for (const s of p.sources) {
      assert.ok(s.basis === "assumption" || s.citation || s.url, `${name}: ${s.what}`);
    }
    // every slowdown the matrix states is found by a lookup with the same members
    for (const d of ["read", "write"] as const) {
      for (const [tier, row] of Object.entries(p.contention!.slowdown[d])) {
        for (const [key, value] of Object.entries(row)) {
          const others = key.split("+").map((m) => {
            const [label, dir] = m.split(":");
            return { tier: label!, direction: (dir ?? d) as Direction };
          });
          assert.equal(
            slowdownOf(p, tier, d, others.reverse()),
            value,
            `${name} ${d} ${tier} ${key}`,
          );
        }
      }
    }
  }
});

Deno.test("the reference nodes: a 4-GPU node with NVMe and Lustre, an 8-GPU node with NVMe and S3", async () => {
  const polaris = await readProfile(join(REFERENCE, "polaris-4gpu-nvme-lustre.json"));
  assert.equal(polaris.host.gpus_per_node, 4);
  assert.equal(polaris.host.memory_bytes, 512 * 2 ** 30);
  assert.deepEqual(Object.keys(polaris.tiers), ["memory", "file", "pfs"]);
  assert.ok(polaris.tiers.file!.read_bw_bytes > polaris.tiers.pfs!.read_bw_bytes);
  const dgx = await readProfile(join(REFERENCE, "dgx-a100-8gpu-nvme-s3.json"));
  assert.equal(dgx.host.gpus_per_node, 8);
  assert.equal(dgx.host.memory_bytes, 2 * 2 ** 40);
  assert.deepEqual(Object.keys(dgx.tiers), ["memory", "file", "s3"]);
  assert.equal(dgx.tiers.s3!.kind, "s3");
  const look = slowdownLookup(polaris);
  assert.equal(look("file", "read", "pfs", "write"), 1.03);
  assert.equal(look("pfs", "write", "file", "read"), 1.1);
});

Deno.test("a contention result measured here loads: tiers from the alone runs, the matrix as measured", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "contention.json");
    const r = await runCli([
      "contention",
      "--tiers",
      `memory:/dev/shm,file:${dir}`,
      "--runtime",
      "0.3",
      "--ramp",
      "0",
      "--size",
      "8m",
      "--quiet",
      "--no-concurrency",
      "--output",
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(await Deno.readTextFile(out));
    const p = await readProfile(out);
    assert.equal(p.schema, "tierbench/result@1");
    assert.equal(p.kind, "contention");
    assert.equal(p.host_name, doc.host.hostname);
    assert.equal(p.host.memory_bytes, doc.host.memory_bytes);
    assert.equal(p.host.cpus, doc.host.cores);
    assert.deepEqual(Object.keys(p.tiers), ["memory", "file"]);
    for (const label of ["memory", "file"]) {
      const t = p.tiers[label]!;
      assert.equal(t.measured_with, "contention-alone");
      assert.equal(t.read_bw_bytes, doc.contention.alone[label].read_bw_bytes);
      assert.equal(t.write_bw_bytes, doc.contention.alone[label].write_bw_bytes);
      assert.equal(t.bs, MiB);
      assert.equal(t.iodepth, 8);
      assert.deepEqual(t.runs, [
        `${label} read alone`,
        `${label} write alone`,
        `${label} read ${label} read+write`,
        `${label} write ${label} read+write`,
      ]);
      assert.ok(t.read_lat_us && t.read_lat_us.p99 >= t.read_lat_us.p50 && t.read_lat_us.p50 > 0);
      assert.ok(t.write_lat_us);
    }
    assert.equal(p.tiers.file!.path, dir);
    // the mixed bandwidths: the matrix's read and write jobs at once on each tier
    for (const label of ["memory", "file"]) {
      assert.equal(p.tiers[label]!.mixed_read_bw_bytes, doc.contention.self[label].read_bw_bytes);
      assert.equal(p.tiers[label]!.mixed_write_bw_bytes, doc.contention.self[label].write_bw_bytes);
    }
    assert.equal(p.tiers.memory!.path, "/dev/shm");
    assert.equal(p.contention?.basis, "measured");
    assert.equal(p.contention?.runtime_ms, 300);
    // both tiers reading and writing at once, looked up in either order
    const both = doc.contention.together[0].members;
    for (const [t, other] of [["memory", "file"], ["file", "memory"]]) {
      assert.deepEqual(togetherOf(p, t!, other!), {
        read_bw_bytes: both[t!].read_bw_bytes,
        write_bw_bytes: both[t!].write_bw_bytes,
      });
    }
    assert.equal(togetherOf(p, "file", "pfs"), undefined);
    const s = doc.contention.slowdown;
    const same = lookupSlowdown(p, "file", "read", [{ tier: "memory", direction: "read" }]);
    assert.equal(same.key, "memory");
    assert.equal(same.status, s.read.file.memory === null ? "starved" : "measured");
    if (s.read.file.memory !== null) assert.equal(same.slowdown, s.read.file.memory);
    const mixed = lookupSlowdown(p, "memory", "write", [{ tier: "file", direction: "read" }]);
    assert.equal(mixed.key, "file:read");
    if (s.write.memory["file:read"] !== null) {
      assert.equal(mixed.slowdown, s.write.memory["file:read"]);
    }
    // no three-tier groups and no pfs: unmeasured, 1
    const none = lookupSlowdown(p, "file", "write", [{ tier: "pfs", direction: "write" }]);
    assert.deepEqual(none, { slowdown: 1, status: "unmeasured", key: "pfs" });

    // the same runs as the points of a profile (kind "profile"): the libaio runs give the figures
    const alone = doc.runs.filter((run: { name: string }) => run.name.endsWith(" alone"));
    const profileDoc = { ...doc, kind: "profile", runs: alone, contention: undefined };
    const q = loadProfile(JSON.parse(JSON.stringify(profileDoc)), "profile.json");
    assert.equal(q.tiers.file!.measured_with, "libaio-runs");
    assert.equal(q.tiers.file!.read_bw_bytes, doc.contention.alone.file.read_bw_bytes);
    assert.equal(q.contention, undefined);
    assert.equal(slowdownOf(q, "file", "read", [{ tier: "memory", direction: "read" }]), 1);

    // a randrw run at twice the depth (a read and a write stream, 8 deep each) is the mixed point;
    // at the pattern's own depth it is not
    const fileRead = alone.find((run: { name: string }) => run.name === "file read alone");
    const randrw = (iodepth: number) => ({
      ...structuredClone(fileRead),
      name: `file randrw ${iodepth}`,
      options: { ...fileRead.options, rw: "randrw", rwmixread: 50, iodepth },
      read: { ...fileRead.read, bw_bytes: 3e8 },
      write: { ...fileRead.read, bw_bytes: 2e8 },
    });
    const withMixed = (iodepth: number) =>
      loadProfile(
        JSON.parse(JSON.stringify({ ...profileDoc, runs: [...alone, randrw(iodepth)] })),
        "m.json",
      ).tiers.file!;
    const m16 = withMixed(16);
    assert.equal(m16.mixed_read_bw_bytes, 3e8);
    assert.equal(m16.mixed_write_bw_bytes, 2e8);
    assert.ok(m16.runs?.includes("file randrw 16"));
    assert.equal(withMixed(8).mixed_read_bw_bytes, undefined);

    // points in another I/O mode than the matrix's (bench's buffered pfs points beside the
    // matrix's O_DIRECT runs) are passed over for the matrix's figures of the tier alone
    assert.equal(doc.contention.pattern.tiers.file.direct, true);
    const buffered = alone.map((run: { name: string; options: object }) => ({
      ...structuredClone(run),
      options: { ...run.options, direct: false },
      read: { bw_bytes: 9e9 },
      write: { bw_bytes: 9e9 },
    }));
    const mixedModes = { ...doc, kind: "profile", runs: buffered };
    const f = loadProfile(JSON.parse(JSON.stringify(mixedModes)), "modes.json").tiers.file!;
    assert.equal(f.measured_with, "contention-alone");
    assert.equal(f.read_bw_bytes, doc.contention.alone.file.read_bw_bytes);
    // the same points in the matrix's mode are taken
    const direct = buffered.map((run: { options: object }) => ({
      ...run,
      options: { ...run.options, direct: true },
    }));
    const sameMode = loadProfile(
      JSON.parse(JSON.stringify({ ...mixedModes, runs: direct })),
      "same.json",
    ).tiers.file!;
    assert.equal(sameMode.measured_with, "libaio-runs");
    assert.equal(sameMode.read_bw_bytes, 9e9);

    // a starved tier: at least its alone bandwidth × window / request size
    const starved = structuredClone(doc);
    starved.contention.slowdown.read.file.memory = null;
    const st = lookupSlowdown(loadProfile(starved, "s.json"), "file", "read", [{
      tier: "memory",
      direction: "read",
    }]);
    assert.equal(st.status, "starved");
    const bound = doc.contention.alone.file.read_bw_bytes * 0.3 / MiB;
    assert.ok(Math.abs(st.slowdown - Math.max(1, bound)) < 0.01, `${st.slowdown} vs ${bound}`);

    // no usable figures: runs at depth 1 only, no matrix
    const shallow = structuredClone(profileDoc);
    for (const run of shallow.runs) run.options.iodepth = 1;
    const e = errorOf(JSON.parse(JSON.stringify(shallow)), "shallow.json");
    assert.equal(e.path, "runs");
    assert.match(
      e.message,
      /no usable tier figures \(memory: no read or write run of 1 MiB at depth 8/,
    );
  });
});

Deno.test("loadProfile() reads a hand-written profile into the normalized shape", () => {
  const p = loadProfile(handWritten(), "hand.json");
  assert.equal(p.source, "hand.json");
  assert.equal(p.host_name, "n1");
  assert.equal(p.created, "2026-11-21T10:00:00Z");
  assert.deepEqual(p.host, { memory_bytes: 512 * 2 ** 30, cpus: 64, gpus_per_node: 4 });
  assert.deepEqual(p.tiers.file, {
    label: "file",
    kind: "file",
    read_bw_bytes: 6e9,
    write_bw_bytes: 3e9,
    bs: MiB,
    iodepth: 8,
    capacity_bytes: 3.2e12,
    read_lat_us: { p50: 900, p99: 2000 },
    measured_with: "stated",
  });
  assert.deepEqual(p.contention?.tiers, ["memory", "file", "pfs"]);
  assert.equal(p.sources.length, 1);
  assert.deepEqual(p.notes, []);
});

Deno.test("slowdownOf(): same-direction and mixed keys, groups of three, unmeasured pairs", () => {
  const p = loadProfile(handWritten(), "hand.json");
  const r = (tier: string) => ({ tier, direction: "read" as const });
  const w = (tier: string) => ({ tier, direction: "write" as const });
  assert.equal(slowdownOf(p, "file", "read", [r("pfs")]), 1.1);
  assert.equal(slowdownOf(p, "file", "read", [w("pfs")]), 1.3);
  assert.equal(slowdownOf(p, "file", "read", [r("pfs"), r("memory")]), 1.4); // any order
  assert.equal(slowdownOf(p, "pfs", "write", [r("file")]), 1.5);
  assert.deepEqual(lookupSlowdown(p, "pfs", "write", [w("file")]), {
    slowdown: 1,
    status: "unmeasured",
    key: "file",
  });
  assert.equal(lookupSlowdown(p, "memory", "read", [r("file")]).status, "unmeasured");
  assert.deepEqual(lookupSlowdown(p, "file", "read", []), {
    slowdown: 1,
    status: "alone",
    key: "",
  });
  assert.throws(() => slowdownOf(p, "file", "read", [r("file")]), RangeError);
  assert.throws(() => slowdownOf(p, "file", "read", [r("pfs"), w("pfs")]), RangeError);
  // without a matrix every lookup is unmeasured
  const bare = loadProfile(handWritten((d) => delete d.contention), "bare.json");
  assert.equal(lookupSlowdown(bare, "file", "read", [r("pfs")]).status, "unmeasured");
});

Deno.test("a hand-written key may name the same direction explicitly: it is stored canonically", () => {
  const p = loadProfile(
    handWritten((d) => {
      d.contention.slowdown = { read: { file: { "pfs:read+memory:write": 2 } } };
    }),
    "hand.json",
  );
  assert.deepEqual(p.contention?.slowdown.read.file, { "memory:write+pfs": 2 });
  const others = [
    { tier: "pfs", direction: "read" as const },
    { tier: "memory", direction: "write" as const },
  ];
  assert.equal(slowdownOf(p, "file", "read", others), 2);
});

Deno.test("slowdownKeyOf() keys groups as the contention matrix does", () => {
  const order = ["memory", "file", "pfs"];
  const cases: Record<string, Direction>[] = [
    { memory: "read", file: "read" },
    { memory: "read", file: "read", pfs: "write" },
    { file: "write", pfs: "read" },
    { memory: "write", file: "write", pfs: "write" },
  ];
  for (const rw of cases) {
    const tiers = order.filter((t) => t in rw);
    for (const t of tiers) {
      const others = tiers.filter((x) => x !== t).map((x) => ({ tier: x, direction: rw[x]! }));
      assert.equal(slowdownKeyOf(rw[t]!, others.reverse(), order), slowdownKey(tiers, rw, t));
    }
  }
});

Deno.test("validation errors name the JSON path and what is allowed", () => {
  const cases: [string, (d: Json) => void, string][] = [
    [
      "missing",
      (d) => delete d.tiers.file.bs,
      "p.json: tiers.file.bs: is missing; use the request size",
    ],
    [
      "negative",
      (d) => d.tiers.file.read_bw_bytes = -1,
      "tiers.file.read_bw_bytes: -1 is too small (must be ≥ 1); use a bandwidth in bytes per second",
    ],
    [
      "zero",
      (d) => d.host.memory_bytes = 0,
      "host.memory_bytes: 0 is too small (must be > 0); use bytes",
    ],
    [
      "string",
      (d) => d.host.cpus = "64",
      'host.cpus: "64" is not a number; use the number of logical CPUs',
    ],
    ["fraction", (d) => d.tiers.pfs.iodepth = 2.5, "tiers.pfs.iodepth: 2.5 is not an integer"],
    ["object", (d) => d.tiers.file = 5, "tiers.file: 5 is not an object"],
    [
      "kind",
      (d) => d.tiers.pfs.kind = "lustre",
      'tiers.pfs.kind: "lustre" is not one of "memory", "file", "pfs", "s3"',
    ],
    [
      "unknown field",
      (d) => d.tiers.file.read_bw = 1,
      "tiers.file.read_bw: unknown field; use one of the fields kind, read_bw_bytes, write_bw_bytes",
    ],
    [
      "unknown top-level",
      (d) => d.tier = {},
      "p.json: tier: unknown field; use one of the fields schema",
    ],
    ["date", (d) => d.created = "last week", 'created: "last week" is not an ISO 8601 date'],
    [
      "latency",
      (d) => d.tiers.file.read_lat_us.p99 = 10,
      "tiers.file.read_lat_us.p99: 10 is below p50 900",
    ],
    ["no tiers", (d) => d.tiers = {}, "tiers: has no tier"],
    ["label", (d) => d.tiers["nv:me"] = d.tiers.file, 'tiers["nv:me"]: is not a tier label'],
    [
      "factor",
      (d) => d.contention.slowdown.read.file.pfs = -2,
      "contention.slowdown.read.file.pfs: -2 is too small (must be ≥ 0.001); use a slowdown factor from 0.001 to 1000",
    ],
    [
      "factor null",
      (d) => d.contention.slowdown.read.file.pfs = null,
      "contention.slowdown.read.file.pfs: null is not a number",
    ],
    [
      "key",
      (d) => d.contention.slowdown.read.file["s3:write"] = 1.2,
      'contention.slowdown.read.file["s3:write"]: s3 is not a tier of this profile',
    ],
    [
      "key direction",
      (d) => d.contention.slowdown.read.file["pfs:sideways"] = 1.2,
      'contention.slowdown.read.file["pfs:sideways"]: "pfs:sideways": the direction after ":" must be read or write',
    ],
    [
      "key itself",
      (d) => d.contention.slowdown.write.pfs.pfs = 1.2,
      "contention.slowdown.write.pfs.pfs: names pfs itself",
    ],
    [
      "row",
      (d) => d.contention.slowdown.read.s3 = {},
      "contention.slowdown.read.s3: is not a tier of this profile",
    ],
    [
      "direction",
      (d) => d.contention.slowdown.mixed = {},
      "contention.slowdown.mixed: unknown field; use one of the fields read, write",
    ],
    [
      "source field",
      (d) => d.sources[0].fields = ["tiers.file.read_bw"],
      'sources[0].fields[0]: "tiers.file.read_bw" names nothing in this document',
    ],
    [
      "derived",
      (d) => d.sources[0].basis = "derived",
      'sources[0].derivation: is missing (basis "derived")',
    ],
    ["basis", (d) => d.sources[0].basis = "folklore", 'sources[0].basis: "folklore" is not one of'],
    [
      "uncited",
      (d) => delete d.sources[0].citation,
      "sources[0].citation: is missing, and so is url",
    ],
  ];
  for (const [name, edit, want] of cases) {
    const e = errorOf(handWritten(edit));
    assert.ok(e.message.startsWith("--profile: p.json: "), `${name}: ${e.message}`);
    assert.ok(e.message.includes(want), `${name}: ${e.message}\n  wanted: ${want}`);
  }
  // a stated assumption needs no citation
  loadProfile(
    handWritten((d) => {
      d.sources[0].basis = "assumption";
      delete d.sources[0].citation;
    }),
    "p.json",
  );
});

Deno.test("unknown schemas, non-objects, other result kinds and broken results are refused clearly", async () => {
  const accepted = `"tierbench/profile@1" or "tierbench/result@1" (or fio's JSON)`;
  assert.equal(
    errorOf({ schema: "tierbench/plan@1" }).message,
    `--profile: p.json: schema: "tierbench/plan@1" is not a schema this reads; use ${accepted}`,
  );
  assert.equal(errorOf({}).message, `--profile: p.json: schema: is missing; use ${accepted}`);
  assert.match(errorOf([1, 2]).message, /^--profile: p\.json: an array is not a JSON object/);
  const result = {
    schema: "tierbench/result@1",
    kind: "workload",
    status: "ok",
    started: "2026-11-21T10:00:00Z",
    host: { hostname: "h", cores: 2, memory_bytes: 2 ** 34 },
    runs: [],
  };
  assert.match(
    errorOf(result).message,
    /kind: "workload": a workload result carries no tier figures; use/,
  );
  assert.match(
    errorOf({ ...result, kind: "run" }).message,
    /runs: no usable tier figures \(it measured no storage tier\)/,
  );
  const badRun = { ...result, kind: "run", runs: [{ name: "x", read: { bw_bytes: "fast" } }] };
  assert.match(errorOf(badRun).message, /: runs\[0\]\.status: is missing/);
  assert.match(
    errorOf({ ...result, host: { ...result.host, cores: 0 } }).message,
    /host\.cores: 0 is too small \(must be > 0\)/,
  );
  await withTempDir(async (dir) => {
    const missing = join(dir, "none.json");
    await assert.rejects(
      readProfile(missing),
      (e: ProfileError) =>
        e instanceof ProfileError &&
        e.message === `--profile: ${missing}: cannot be read (NotFound); use a readable JSON file`,
    );
    const broken = join(dir, "broken.json");
    await Deno.writeTextFile(broken, "{ not json");
    await assert.rejects(
      readProfile(broken),
      (e: ProfileError) =>
        e instanceof ProfileError && e.message.startsWith(`--profile: ${broken}: is not JSON (`),
    );
  });
});

Deno.test("formatPath() and parsePath() round-trip", () => {
  const paths: (string | number)[][] = [
    ["tiers", "file", "read_bw_bytes"],
    ["contention", "slowdown", "read", "file", "memory+pfs:write"],
    ["sources", 3, "fields", 0],
    ["tiers", "nv:me"],
  ];
  for (const p of paths) assert.deepEqual(parsePath(formatPath(p)), p);
  assert.equal(parsePath(""), undefined);
  assert.equal(parsePath(".tiers"), undefined);
  assert.equal(parsePath("tiers[x]"), undefined);
});
