/**
 * `tierbench contention` end to end, and the matrix `tierbench bench` adds
 * after its points; the last test adds a CephFS mount (the tests' local Ceph).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, scratchLeft, withTempDir } from "../tests/_helpers.ts";
import { assertOneLine } from "../tests/_cli.ts";
import { remoteTest, uniquePrefix } from "../tests/_remote.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** Short runs, matrix only: the curves have their own tests (bench/concurrency_test.ts). */
const SHORT = ["--runtime", "0.5", "--ramp", "0.2", "--size", "16m", "--quiet", "--no-concurrency"];

/**
 * Every group of the matrix ran, with positive figures (but for tiers in
 * `mayStarve`) and windows measured together: `groups` reading then writing,
 * then (unless `mixed` is false) each of its pairs one way and the other,
 * the first tier reading while the second writes, then the reverse.
 */
function assertMatrix(
  c: Json,
  tiers: string[],
  groups: string[],
  mayStarve: string[] = [],
  mixed = true,
): void {
  assert.equal(c.schema, "tierbench/contention@1");
  assert.equal(c.status, "ok", c.error);
  assert.deepEqual(c.tiers, tiers);
  assert.equal(c.pattern.mixed, mixed);
  for (const t of tiers) {
    assert.ok(c.alone[t].read_bw_bytes > 0 && c.alone[t].write_bw_bytes > 0, t);
  }
  const pairs = mixed ? groups.map((g) => g.split("+")).filter((g) => g.length === 2) : [];
  assert.deepEqual(c.groups.map((g: Json) => `${g.key} ${g.direction}`), [
    ...groups.flatMap((g) => [`${g} read`, `${g} write`]),
    ...pairs.flatMap(([a, b]) => [`${a}:read+${b}:write mixed`, `${a}:write+${b}:read mixed`]),
  ]);
  for (const g of c.groups) {
    const rw = g.tiers.map((t: string) => g.rw[t]);
    if (g.direction === "mixed") assert.deepEqual([...rw].sort(), ["read", "write"], g.key);
    else assert.ok(rw.every((d: string) => d === g.direction), g.key);
    for (const t of g.tiers) {
      const starved = mayStarve.includes(t) && g.bw_bytes[t] === 0;
      if (starved) assert.equal(g.slowdown[t], null, `${t} moved nothing in ${g.key}`);
      else assert.ok(g.bw_bytes[t] > 0 && g.slowdown[t] > 0, `${t} in ${g.key}`);
    }
    assert.equal(g.layout_clear, true, JSON.stringify(g.windows_ms));
    assert.ok(g.overlap >= 0.9, `${g.key} ${g.direction}: windows overlap ${g.overlap}`);
  }
}

Deno.test("tierbench contention: memory and a disk directory, a table of slowdowns and the matrix in JSON", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "contention.json");
    const r = await runCli([
      "contention",
      "--tiers",
      `memory:/dev/shm,file:${dir}`,
      ...SHORT,
      "--output",
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /memory\+file/);
    assert.match(r.stdout, /│ memory\s+│ read\s+│\s+[\d.]+ [KMG]iB\/s │\s+[\d.]+× /);
    assert.match(r.stdout, /overlap/);
    // The mixed pairs' table: a row per tier reading while another writes.
    assert.match(r.stdout, /│ reads\s+│ writes\s+│\s+reader │\s+writer │\s+overlap │/);
    assert.match(r.stdout, /│ file\s+│ memory\s+│\s+[\d.]+× [\d.]+ [KMG]iB\/s │\s+[\d.]+× /);
    // …and a row per tier reading and writing at once
    assert.match(r.stdout, /│ file\s+│ file\s+│\s+[\d.]+× [\d.]+ [KMG]iB\/s │\s+[\d.]+× /);
    // the last line: the file, and the command that draws it
    const last = r.stdout.trim().split("\n").at(-1)!;
    assert.match(last, /^results: (\S+); next: .*tierbench report (\S+)$/);
    const [, shown, again] = last.match(/^results: (\S+); next: .* report (\S+)$/)!;
    assert.equal(shown, again);
    assert.ok(out.endsWith(shown!), `${shown} names ${out}`);
    const doc = JSON.parse(await Deno.readTextFile(out));
    assert.equal(doc.schema, "tierbench/result@1");
    assert.equal(doc.kind, "contention");
    assert.equal(doc.status, "ok");
    assert.equal(doc.config.command, "contention");
    assert.deepEqual(doc.config.tiers, ["memory:/dev/shm", `file:${dir}`]);
    assert.equal(doc.config.mixed, true);
    assertMatrix(doc.contention, ["memory", "file"], ["memory+file"]);
    assert.equal(
      doc.contention.slowdown.read.memory["file:write"],
      doc.contention.groups[2].slowdown.memory,
    );
    assert.equal(
      doc.runs.length,
      20,
      "each tier alone and in the pair, reading and writing, then each reading while the other " +
        "writes, then each reading and writing at once, alone and with the other doing the same",
    );
    assert.ok(doc.runs.every((run: Json) => run.status === "ok" && "lat_ns" in run.read));
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("tierbench contention --no-mixed: no mixed pairs, in the JSON or the table", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "contention.json");
    const r = await runCli([
      "contention",
      "--tiers",
      `memory:/dev/shm,file:${dir}`,
      "--runtime",
      "0.2",
      "--ramp",
      "0",
      "--size",
      "8m",
      "--no-mixed",
      "--quiet",
      "--no-concurrency",
      "--output",
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /│ reads /);
    const doc = JSON.parse(await Deno.readTextFile(out));
    assert.equal(doc.config.mixed, false);
    assertMatrix(doc.contention, ["memory", "file"], ["memory+file"], [], false);
    assert.deepEqual(Object.keys(doc.contention.slowdown.write.file), ["memory"]);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test({
  name: "tierbench contention --engine io_uring: memory and a disk directory run through io_uring",
  ignore: ioUringRefusal() !== undefined,
  fn: () =>
    withTempDir(async (dir) => {
      const out = join(dir, "contention.json");
      const r = await runCli([
        "contention",
        "--tiers",
        `memory:/dev/shm,file:${dir}`,
        "--runtime",
        "0.2",
        "--ramp",
        "0",
        "--size",
        "8m",
        "--no-mixed",
        "--engine",
        "io_uring",
        "--quiet",
        "--no-concurrency",
        "--output",
        out,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(await Deno.readTextFile(out));
      assert.equal(doc.config.engine, "io_uring");
      assertMatrix(doc.contention, ["memory", "file"], ["memory+file"], [], false);
      assert.equal(doc.contention.pattern.tiers.memory.engine, "io_uring");
      assert.equal(doc.contention.pattern.tiers.file.engine, "io_uring");
      assert.ok(doc.runs.every((run: Json) => run.options.engine === "io_uring"));
      assert.deepEqual(await scratchLeft(dir), []);
    }),
});

Deno.test("tierbench contention: fewer than two tiers, null: and a bad size exit 2 in one line", async () => {
  await withTempDir(async (dir) => {
    const cases: [string[], RegExp][] = [
      [["--tiers", "memory:"], /--tiers: needs at least two tiers/],
      [["--tiers", `null:,file:${dir}`], /--tiers: null: does no I\/O/],
      [["--tiers", `memory:,file:${dir}`, "--size", "lots"], /--size: "lots" is not a size/],
      [["--tiers", `memory:,file:${join(dir, "nope")}`], /nope does not exist/],
      [[], /required option '--tiers <specs>' not specified/],
      [
        ["--tiers", `memory:,file:${dir}`, "--processes", "2,1"],
        /--processes: 1 does not follow 2/,
      ],
      [["--tiers", `memory:,file:${dir}`, "--concurrency-bs", "1q"], /--concurrency-bs: "1q"/],
    ];
    for (const [args, pattern] of cases) {
      assertOneLine(await runCli(["contention", "--quiet", ...args]), 2, pattern);
    }
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("tierbench bench: the profile ends with the contention matrix over the tiers it profiled", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "profile.json");
    const r = await runCli([
      "bench",
      "--no-memory",
      "--file-dir",
      dir,
      "--pfs",
      dir,
      "--runtime",
      "200ms",
      "--ramp",
      "0",
      "--size",
      "8m",
      "--output",
      out,
      "--quiet",
      "--no-concurrency",
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /file\+pfs/);
    const doc = JSON.parse(await Deno.readTextFile(out));
    assert.equal(doc.kind, "profile");
    assert.equal(doc.status, "ok");
    assert.equal(doc.runs.length, 15, "the profile's points only: null, then file and pfs");
    assertMatrix(doc.contention, ["file", "pfs"], ["file+pfs"]);
    assert.equal(doc.contention.pattern.runtime_ms, 200);
    assert.equal(doc.contention.pattern.tiers.pfs.direct, true);
    // With no warm-up asked for, a group's members still start together once every one has laid
    // out: no layout falls in another's window, and no group runs twice.
    assert.ok(
      doc.contention.groups.every((g: Json) => g.layout_clear === true && g.attempts === 1),
    );
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

remoteTest(
  "tierbench contention: memory, a disk directory and CephFS, pairs and all three together, then mixed pairs",
  async (env) => {
    assert.ok(env.pfsDir, "no CephFS mount (TIERBENCH_PFS_DIR)");
    const mnt = join(env.pfsDir, uniquePrefix("contention").replace("/", "-"));
    await Deno.mkdir(mnt);
    try {
      await withTempDir(async (dir) => {
        const out = join(dir, "contention.json");
        const r = await runCli([
          "contention",
          "--tiers",
          `memory:/dev/shm,file:${dir},pfs:${mnt}`,
          ...SHORT,
          "--output",
          out,
        ]);
        assert.equal(r.code, 0, r.stderr);
        const doc = JSON.parse(await Deno.readTextFile(out));
        // The tests' Ceph keeps its data on the same disk as the file tier: there, a
        // half-second window of O_DIRECT file traffic can leave CephFS nothing done.
        assertMatrix(
          doc.contention,
          ["memory", "file", "pfs"],
          ["memory+file", "memory+pfs", "file+pfs", "memory+file+pfs"],
          ["pfs"],
        );
        assert.deepEqual(Object.keys(doc.contention.slowdown.read.pfs), [
          "memory",
          "file",
          "memory+file",
          "memory:write",
          "file:write",
        ]);
        assert.deepEqual(Object.keys(doc.contention.slowdown.write.pfs), [
          "memory",
          "file",
          "memory+file",
          "memory:read",
          "file:read",
        ]);
        const pfsRun = doc.runs.find((run: Json) => run.tier.kind === "pfs");
        assert.match(pfsRun.tier.fs.fs_type, /ceph/);
        assert.deepEqual(await scratchLeft(dir), []);
      });
      assert.deepEqual(await Array.fromAsync(Deno.readDir(mnt)), []);
    } finally {
      await Deno.remove(mnt, { recursive: true });
    }
  },
);

Deno.test("tierbench contention --output-format fio-json --output -: stdout is fio's document, each run a job, the members of a group sharing its groupid", async () => {
  await withTempDir(async (dir) => {
    const r = await runCli([
      "contention",
      "--tiers",
      `memory:/dev/shm,file:${dir}`,
      "--runtime",
      "0.5",
      "--ramp_time",
      "0.1",
      "--size",
      "16m",
      "--quiet",
      "--no-mixed",
      "--no-concurrency",
      "--output-format",
      "fio-json",
      "--output",
      "-",
    ]);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout); // stdout holds the document alone
    assert.match(r.stderr, /memory\+file/); // the table went to stderr
    const jobs = doc.jobs as Json[];
    assert.deepEqual(
      jobs.map((j) => [j.jobname, j.groupid]),
      [
        ["memory read alone", 0],
        ["memory write alone", 1],
        ["file read alone", 2],
        ["file write alone", 3],
        ["memory read memory+file", 4],
        ["file read memory+file", 4],
        ["memory write memory+file", 5],
        ["file write memory+file", 5],
      ],
    );
    assert.equal(jobs[0]["job options"].ramp_time, "100ms");
    for (const j of jobs.slice(4)) {
      const dir = j.jobname.split(" ")[1] as "read" | "write";
      assert.ok(j[dir].io_bytes > 0 && j[dir].bw > 0);
      assert.ok(j[dir].bw_agg > 0 && j[dir].bw_agg < 100, "a member's share of its group");
    }
    assert.deepEqual(await scratchLeft(dir), []);
  });
});
