/**
 * `tierbench contention` across 3 torchrun-style processes on this machine,
 * each its own "node": one document whose matrix is the processes' summed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { scratchLeft, withShmDir, withTempDir } from "../tests/_helpers.ts";
import { clusterDoc, killRank, launchRanks } from "../tests/_launch.ts";
import { slowdown } from "../schema/contention.ts";

function sum(xs: readonly number[]): number {
  return xs.reduce((a, x) => a + x, 0);
}

Deno.test("contention across 3 torchrun-style processes: one document, each tier's bandwidth the sum of the processes', slowdowns from the sums, no scratch left", async () => {
  await withShmDir(async (shm) => {
    await withTempDir(async (disk) => {
      const out = join(shm, "out.json");
      const ranks = launchRanks(3, [
        "contention",
        "--tiers",
        `memory:${shm},file:${disk}`,
        "--runtime",
        "0.5",
        "--ramp",
        "0",
        "--size",
        "4m",
        "--quiet",
        "--output",
        out,
      ]);
      const doc = await clusterDoc(ranks, out);
      assert.equal(doc.kind, "contention");
      assert.equal(doc.status, "ok", doc.error);
      const c = doc.cluster!;
      assert.deepEqual(c.hosts, [Deno.hostname()]);
      const mine = c.processes.map((p) => p.contention!);
      assert.equal(mine.length, 3);
      const agg = doc.contention!;
      assert.equal(agg.status, "ok");
      assert.deepEqual(agg.tiers, ["memory", "file"]);
      // every process ran the same groups, each as many times (decided together)
      const keys = agg.groups.map((g) => `${g.key} ${g.direction}`);
      assert.equal(keys.length, 4);
      for (const m of mine) {
        assert.deepEqual(m.groups.map((g) => `${g.key} ${g.direction}`), keys);
        assert.deepEqual(m.groups.map((g) => g.attempts), agg.groups.map((g) => g.attempts));
      }
      for (const t of agg.tiers) {
        for (const d of ["read", "write"] as const) {
          const alone = agg.alone[t]![`${d}_bw_bytes`];
          assert.ok(alone > 0, `${t} ${d} alone`);
          assert.equal(alone, sum(mine.map((m) => m.alone[t]![`${d}_bw_bytes`])));
        }
      }
      for (const [k, g] of agg.groups.entries()) {
        for (const t of g.tiers) {
          const bw = g.bw_bytes[t]!;
          assert.ok(bw > 0, `${t} in ${g.key}`);
          assert.equal(bw, sum(mine.map((m) => m.groups[k]!.bw_bytes[t]!)), `${t} in ${g.key}`);
          assert.equal(g.slowdown[t], slowdown(agg.alone[t]![`${g.rw[t]!}_bw_bytes`], bw));
        }
      }
      for (const t of agg.tiers) {
        const self = agg.self![t]!;
        assert.equal(self.read_bw_bytes, sum(mine.map((m) => m.self![t]!.read_bw_bytes)));
        assert.equal(self.write_bw_bytes, sum(mine.map((m) => m.self![t]!.write_bw_bytes)));
      }
      assert.equal(agg.together!.length, 1);
      // every run of every process, and one aggregate per run
      const runs = c.processes.map((p) => p.runs.length);
      assert.ok(runs[0]! > 0);
      assert.deepEqual(runs, [runs[0], runs[0], runs[0]]);
      assert.equal(doc.runs.length, runs[0]);
      assert.equal(c.runs.length, runs[0]);
      assert.ok((c.coordination.barrier_ms ?? []).length >= runs[0]! / 2);
      assert.deepEqual(await scratchLeft(shm), []);
      assert.deepEqual(await scratchLeft(disk), []);
    });
  });
});

Deno.test("contention across processes: a rank killed mid-matrix stops the others, the root names it, writes what it has and every scratch goes", async () => {
  await withShmDir(async (shm) => {
    const out = join(shm, "out.json");
    await Deno.mkdir(join(shm, "a"));
    await Deno.mkdir(join(shm, "b"));
    const ranks = launchRanks(3, [
      "contention",
      "--tiers",
      `memory:${shm}/a,memory:${shm}/b`,
      "--runtime",
      "120",
      "--ramp",
      "0",
      "--size",
      "4m",
      "--quiet",
      "--output",
      out,
    ]);
    // Wait (bounded) until every rank has its scratch in both tiers, then a little into the run.
    const left = async () =>
      (await scratchLeft(`${shm}/a`).catch(() => [])).length +
      (await scratchLeft(`${shm}/b`).catch(() => [])).length;
    for (let i = 0; i < 600 && (await left()) < 6; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(await left(), 6);
    await new Promise((r) => setTimeout(r, 1500));
    const doc = await killRank(ranks, 1, out);
    // the root's own matrix, cut short long before its 120 s
    const own = doc.cluster!.processes[0]!;
    assert.ok(own.contention !== undefined);
    assert.ok(own.runs.every((r) => r.read.runtime < 120_000 && r.write.runtime < 120_000));
    assert.deepEqual(await scratchLeft(`${shm}/a`), []);
    assert.deepEqual(await scratchLeft(`${shm}/b`), []);
  });
});
