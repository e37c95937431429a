import assert from "node:assert/strict";
import { parseTierSpec } from "../core/config.ts";
import { type ContentionOptions, runContention } from "./contention.ts";
import {
  contentionGroups,
  layoutClear,
  mixedContentionGroups,
  tierLabels,
  windowOverlap,
} from "./contention_groups.ts";
import { ConfigError } from "../core/errors.ts";
import { profileTiers } from "./node_profile.ts";
import { withTempDir } from "../tests/_helpers.ts";
import { newRunId } from "../tiers/scratch.ts";
import {
  type ContentionWindow,
  groupKey,
  slowdown,
  slowdownKey,
  slowdownMatrix,
} from "../schema/contention.ts";

/** Short runs: the tests check the matrix, not the figures. */
const SHORT: ContentionOptions = { runtime: "0.5", ramp: "0.2", size: "16m" };

/** Scratch directories of `runId` (any tier) left in `dir`. */
async function scratchOf(dir: string, runId: string): Promise<string[]> {
  const left: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.name.startsWith(`tierbench-scratch-${runId}`)) left.push(e.name);
  }
  return left;
}

const keys = (groups: string[][]) => groups.map((g) => g.join("+"));

Deno.test("contentionGroups(): each alone, then each pair; all together only from three", () => {
  assert.deepEqual(keys(contentionGroups(["memory", "file"])), ["memory", "file", "memory+file"]);
  assert.deepEqual(keys(contentionGroups(["memory", "file", "pfs"])), [
    "memory",
    "file",
    "pfs",
    "memory+file",
    "memory+pfs",
    "file+pfs",
    "memory+file+pfs",
  ]);
  const four = contentionGroups(["a", "b", "c", "d"]);
  assert.equal(four.filter((g) => g.length === 2).length, 6);
  assert.deepEqual(four.filter((g) => g.length > 2), [["a", "b", "c", "d"]]);
  assert.deepEqual(keys(contentionGroups(["a"])), ["a"]);
});

Deno.test("mixedContentionGroups(): per pair, the first reading while the second writes, then the reverse", () => {
  const order = (items: string[]) =>
    mixedContentionGroups(items).map((g) => `${g.read}<${g.write}`);
  assert.deepEqual(order(["memory", "file"]), ["memory<file", "file<memory"]);
  assert.deepEqual(order(["memory", "file", "pfs"]), [
    "memory<file",
    "file<memory",
    "memory<pfs",
    "pfs<memory",
    "file<pfs",
    "pfs<file",
  ]);
  assert.equal(mixedContentionGroups(["a", "b", "c", "d"]).length, 12, "n·(n−1)");
  assert.deepEqual(mixedContentionGroups(["a"]), []);
});

Deno.test("groupKey() and slowdownKey(): a label alone in the same direction, label:direction in the other", () => {
  const same = { memory: "read", file: "read" } as const;
  const mixed = { memory: "write", file: "read" } as const;
  assert.equal(groupKey(["memory", "file"], same), "memory+file");
  assert.equal(groupKey(["memory", "file"], mixed), "memory:write+file:read");
  assert.equal(slowdownKey(["memory", "file"], same, "file"), "memory");
  assert.equal(slowdownKey(["memory", "file"], mixed, "file"), "memory:write");
  assert.equal(slowdownKey(["memory", "file"], mixed, "memory"), "file:read");
  const three = { memory: "read", file: "write", pfs: "read" } as const;
  assert.equal(slowdownKey(["memory", "file", "pfs"], three, "pfs"), "memory+file:write");
});

Deno.test("tierLabels(): the kind, numbered only where two tiers share one", () => {
  const specs = ["memory:", "file:/a", "pfs:/m", "file:/b"].map(parseTierSpec);
  assert.deepEqual(tierLabels(specs), ["memory", "file1", "pfs", "file2"]);
  assert.deepEqual(tierLabels(specs.slice(0, 3)), ["memory", "file", "pfs"]);
});

Deno.test("slowdown(): bandwidth alone over bandwidth in the group; null without both", () => {
  assert.equal(slowdown(1000, 1000), 1);
  assert.equal(slowdown(1000, 500), 2);
  assert.equal(slowdown(1000, 800), 1.25);
  assert.equal(slowdown(500, 1000), 0.5, "faster in company reads below 1");
  assert.equal(slowdown(3000, 7000), 0.429, "rounded to 3 decimals");
  assert.equal(slowdown(0, 500), null);
  assert.equal(slowdown(500, 0), null);
});

Deno.test("slowdownMatrix(): each tier keyed by the others in its group, per direction", () => {
  const alone = {
    memory: { read_bw_bytes: 8000, write_bw_bytes: 6000 },
    file: { read_bw_bytes: 1000, write_bw_bytes: 2000 },
    pfs: { read_bw_bytes: 400, write_bw_bytes: 300 },
  };
  const m = slowdownMatrix(alone, [
    { tiers: ["memory", "file"], direction: "read", bw_bytes: { memory: 4000, file: 1000 } },
    { tiers: ["memory", "file"], direction: "write", bw_bytes: { memory: 6000, file: 500 } },
    {
      tiers: ["memory", "file", "pfs"],
      direction: "read",
      bw_bytes: { memory: 2000, file: 500, pfs: 100 },
    },
  ]);
  assert.deepEqual(m.read, {
    memory: { file: 2, "file+pfs": 4 },
    file: { memory: 1, "memory+pfs": 2 },
    pfs: { "memory+file": 4 },
  });
  assert.deepEqual(m.write, { memory: { file: 1 }, file: { memory: 4 }, pfs: {} });
});

Deno.test("slowdownMatrix(): a mixed pair goes under each member's own direction, the other as label:direction", () => {
  const alone = {
    file: { read_bw_bytes: 1000, write_bw_bytes: 2000 },
    pfs: { read_bw_bytes: 400, write_bw_bytes: 300 },
  };
  const m = slowdownMatrix(alone, [
    { tiers: ["file", "pfs"], direction: "read", bw_bytes: { file: 500, pfs: 400 } },
    {
      tiers: ["file", "pfs"],
      direction: "mixed",
      rw: { file: "read", pfs: "write" },
      bw_bytes: { file: 250, pfs: 150 },
    },
    {
      tiers: ["file", "pfs"],
      direction: "mixed",
      rw: { file: "write", pfs: "read" },
      bw_bytes: { file: 2000, pfs: 0 },
    },
    // No rw: which member did which is unknown, so it is left out.
    { tiers: ["file", "pfs"], direction: "mixed", bw_bytes: { file: 1, pfs: 1 } },
  ]);
  assert.deepEqual(m.read, {
    file: { pfs: 2, "pfs:write": 4 },
    pfs: { file: 1, "file:write": null },
  });
  assert.deepEqual(m.write, { file: { "pfs:read": 1 }, pfs: { "file:read": 2 } });
});

Deno.test("windowOverlap() and layoutClear() read the members' windows", () => {
  const w = (ready: number, start: number, layout = 0): ContentionWindow => ({
    layout_start: layout,
    ramp_start: ready,
    measure_start: start,
    measure_end: start + 1000,
  });
  assert.equal(windowOverlap([w(100, 500), w(300, 500)], 1000), 1);
  assert.equal(windowOverlap([w(100, 500), w(300, 750)], 1000), 0.75);
  assert.equal(windowOverlap([w(100, 500), w(300, 2000)], 1000), 0);
  assert.equal(windowOverlap([w(100, 500), null], 1000), null);
  assert.equal(layoutClear([w(100, 500), w(500, 500)]), true, "ready just as measuring starts");
  assert.equal(layoutClear([w(100, 500), w(600, 600)]), false, "still laying out at 500-600");
  assert.equal(layoutClear([w(100, 500), w(1600, 1600, 1500)]), true, "laid out after it ended");
  assert.equal(layoutClear([w(100, 500), null]), null);
  // no ramp: both laid out and met by 480; the second started 3 ms late, its layout long done
  const met = (start: number) => ({ ...w(start, start), layout_end: 480 });
  assert.equal(layoutClear([met(500), met(503)]), true, "met, one started late");
  assert.equal(layoutClear([w(500, 500), w(503, 503)]), false, "without layout_end: ramp_start");
});

Deno.test("profileTiers(): the tiers bench profiles, in its order", () => {
  const base = { runtime: "3", ramp: "1", size: "256m" };
  const all = profileTiers({
    ...base,
    memoryDir: "/dev/shm",
    fileDir: "/data",
    pfsDir: "/mnt/ceph",
    s3: "s3://b/p",
  });
  assert.deepEqual(all.map((t) => `${t.kind}:${t.path}`), [
    "memory:/dev/shm",
    "file:/data",
    "pfs:/mnt/ceph",
    "s3:b/p",
  ]);
  assert.deepEqual(profileTiers({ ...base, memoryDir: undefined, fileDir: "/data" }).length, 1);
});

Deno.test("runContention() refuses fewer than two tiers, null: and a tier named twice, before any I/O", async () => {
  const cases: [string[], ContentionOptions, RegExp][] = [
    [["memory:"], {}, /at least two tiers/],
    [["null:", "memory:"], {}, /null: does no I\/O/],
    [["file:/tmp", "file:/tmp"], {}, /file:\/tmp is named twice/],
    [["memory:", "file:/tmp"], { bs: "1x" }, /--bs: "1x" is not a size/],
  ];
  for (const [tiers, o, pattern] of cases) {
    const out = await runContention(tiers.map(parseTierSpec), o);
    assert.ok(out.error instanceof ConfigError, String(out.error));
    assert.match(out.error.message, pattern);
    assert.equal(out.contention.status, "failed");
    assert.deepEqual(out.runs, []);
  }
});

Deno.test("runContention() on memory and a disk directory: alone, together reading and writing, then one reading while the other writes; nothing left", async () => {
  await withTempDir(async (dir) => {
    const runId = newRunId();
    const tiers = [parseTierSpec("memory:/dev/shm"), parseTierSpec(`file:${dir}`)];
    const { contention: c, runs, error } = await runContention(tiers, { ...SHORT, runId });
    assert.equal(error, undefined);
    assert.equal(c.status, "ok", c.error);
    assert.equal(c.schema, "tierbench/contention@1");
    assert.deepEqual(c.tiers, ["memory", "file"]);
    assert.deepEqual(c.pattern.tiers.memory, {
      spec: "memory:/dev/shm",
      engine: "libaio",
      iodepth: 8,
      direct: false,
      end_fsync: false,
    });
    assert.equal(c.pattern.tiers.file!.direct, true);
    assert.equal(c.pattern.bs, 1024 * 1024);
    assert.equal(c.pattern.runtime_ms, 500);
    for (const t of c.tiers) {
      assert.ok(c.alone[t]!.read_bw_bytes > 0, `${t} read alone`);
      assert.ok(c.alone[t]!.write_bw_bytes > 0, `${t} write alone`);
    }
    assert.equal(c.pattern.mixed, true);
    assert.deepEqual(c.groups.map((g) => `${g.key} ${g.direction}`), [
      "memory+file read",
      "memory+file write",
      "memory:read+file:write mixed",
      "memory:write+file:read mixed",
    ]);
    assert.deepEqual(c.groups.map((g) => g.rw), [
      { memory: "read", file: "read" },
      { memory: "write", file: "write" },
      { memory: "read", file: "write" },
      { memory: "write", file: "read" },
    ]);
    for (const g of c.groups) {
      assert.equal(g.status, "ok");
      assert.deepEqual(g.tiers, ["memory", "file"]);
      for (const t of g.tiers) {
        // a member's window can hold no completion under load (a 1 MiB O_DIRECT write slower
        // than 500 ms): its figure is 0 and its slowdown unknown, never made up
        assert.ok(g.bw_bytes[t]! >= 0, `${t} ${g.rw[t]} in ${g.key}`);
        assert.equal(g.slowdown[t], slowdown(c.alone[t]![`${g.rw[t]!}_bw_bytes`], g.bw_bytes[t]!));
        const w = g.windows_ms[t]!;
        assert.ok(w.layout_start <= w.layout_end! && w.layout_end! <= w.ramp_start);
        assert.ok(w.ramp_start <= w.measure_start);
        assert.equal(Math.round(w.measure_end - w.measure_start), 500);
      }
      // the members start measuring at one moment; how close they came is what their windows
      // say (under load a late member's window starts late), and an unclear layout is run again
      const windows = g.tiers.map((t) => g.windows_ms[t]!);
      assert.equal(g.overlap, windowOverlap(windows, 500));
      assert.ok(g.overlap! >= 0 && g.overlap! <= 1, `measured windows overlap ${g.overlap}`);
      assert.equal(g.layout_clear, layoutClear(windows));
      assert.ok(g.layout_clear || g.attempts > 1, JSON.stringify(g));
      assert.ok(g.ramp_ms >= 200 && (g.attempts === 1 || g.ramp_ms > 200), JSON.stringify(g));
    }
    for (const d of ["read", "write"] as const) {
      const other = d === "read" ? "write" : "read";
      assert.deepEqual(Object.keys(c.slowdown[d]), ["memory", "file"]);
      assert.deepEqual(Object.keys(c.slowdown[d].file!), ["memory", `memory:${other}`]);
      assert.equal(
        c.slowdown[d].memory!.file,
        c.groups.find((g) => g.direction === d)!.slowdown.memory,
      );
      // memory doing d while file does the other direction.
      assert.equal(
        c.slowdown[d].memory![`file:${other}`],
        c.groups.find((g) => g.direction === "mixed" && g.rw.memory === d)!.slowdown.memory,
      );
    }
    assert.deepEqual(runs.map((r) => r.name), [
      "memory read alone",
      "memory write alone",
      "file read alone",
      "file write alone",
      "memory read memory+file",
      "file read memory+file",
      "memory write memory+file",
      "file write memory+file",
      "memory read memory:read+file:write",
      "file write memory:read+file:write",
      "memory write memory:write+file:read",
      "file read memory:write+file:read",
      "memory read memory read+write",
      "memory write memory read+write",
      "file read file read+write",
      "file write file read+write",
      "memory read memory+file read+write",
      "memory write memory+file read+write",
      "file read memory+file read+write",
      "file write memory+file read+write",
    ]);
    // each tier reading and writing at once: its two jobs' figures, against its own alone
    assert.deepEqual(Object.keys(c.self!), ["memory", "file"]);
    for (const t of c.tiers) {
      const x = c.self![t]!;
      const [r, w] = runs.filter((run) => run.name.endsWith(`${t} read+write`));
      assert.equal(x.read_bw_bytes, r!.read.bw_bytes);
      assert.equal(x.write_bw_bytes, w!.write.bw_bytes);
      assert.equal(x.slowdown.read, slowdown(c.alone[t]!.read_bw_bytes, x.read_bw_bytes));
      assert.ok(x.overlap! >= 0 && x.overlap! <= 1, `${t} read+write windows overlap ${x.overlap}`);
    }
    // both tiers reading and writing at once: each one's figures, against its own read+write
    assert.equal(c.together?.length, 1);
    const both = c.together![0]!;
    assert.deepEqual([both.key, both.tiers], ["memory+file", ["memory", "file"]]);
    assert.ok(both.overlap! >= 0 && both.overlap! <= 1, `memory+file overlap ${both.overlap}`);
    for (const t of c.tiers) {
      const x = both.members[t]!;
      const [r, w] = runs.filter((run) =>
        run.name.startsWith(`${t} `) && run.name.endsWith(`memory+file read+write`)
      );
      assert.equal(x.read_bw_bytes, r!.read.bw_bytes);
      assert.equal(x.write_bw_bytes, w!.write.bw_bytes);
      assert.equal(x.slowdown.write, slowdown(c.self![t]!.write_bw_bytes, x.write_bw_bytes));
    }
    assert.ok(runs.every((r) => r.status === "ok" && r.options.iodepth === 8));
    // each tier did I/O beside the other: one short window may hold none, not all eight
    for (const t of c.tiers) {
      const beside = runs.filter((r) => r.name.startsWith(`${t} `) && !r.name.endsWith(" alone"));
      assert.equal(beside.length, 8);
      assert.ok(beside.some((r) => r.read.total_ios + r.write.total_ios > 0), `${t}: no I/O`);
    }
    assert.deepEqual(await scratchOf(dir, runId), []);
    assert.deepEqual(await scratchOf("/dev/shm", runId), []);
  });
});

Deno.test("runContention(): two tiers of one kind in one directory get their own labels and scratch; mixed: false skips the mixed pairs", async () => {
  await withTempDir(async (dir) => {
    const runId = newRunId();
    const tiers = [parseTierSpec(`file:${dir}`), parseTierSpec(`file:${dir}/`)];
    const { contention: c } = await runContention(tiers, {
      runtime: "0.3",
      ramp: "0.1",
      size: "8m",
      runId,
      mixed: false,
    });
    assert.equal(c.status, "ok", c.error);
    assert.deepEqual(c.tiers, ["file1", "file2"]);
    assert.equal(c.pattern.mixed, false);
    assert.deepEqual(c.groups.map((g) => g.direction), ["read", "write"], "no mixed pairs");
    assert.equal(c.self, undefined);
    assert.equal(c.together, undefined);
    assert.deepEqual(Object.keys(c.slowdown.read.file1!), ["file2"]);
    assert.deepEqual(await scratchOf(dir, runId), []);
  });
});

Deno.test("runContention(): an abort stops the matrix, says interrupted and removes scratch", async () => {
  await withTempDir(async (dir) => {
    const runId = newRunId();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort("SIGINT"), 400);
    try {
      const { contention: c, runs } = await runContention(
        [parseTierSpec("memory:/dev/shm"), parseTierSpec(`file:${dir}`)],
        { runtime: "5", ramp: "0.1", size: "16m", runId, signal: controller.signal },
      );
      assert.equal(c.status, "interrupted");
      assert.equal(runs.length, 1);
      assert.equal(runs[0]!.status, "interrupted");
      assert.deepEqual(c.groups, []);
    } finally {
      clearTimeout(timer);
    }
    assert.deepEqual(await scratchOf(dir, runId), []);
    assert.deepEqual(await scratchOf("/dev/shm", runId), []);
  });
});
