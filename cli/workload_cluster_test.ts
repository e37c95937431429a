/**
 * `tierbench workload` across 3 torchrun-style processes on this machine,
 * each a node of its own: one document whose `workload` aggregates the
 * nodes' results (bytes summed, iteration times the slowest node's), every
 * node's own result in `cluster`, nothing left behind; a rank lost stops the
 * others and is named.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { scratchLeft, withShmDir, withTempDir } from "../tests/_helpers.ts";
import { clusterDoc, killRank, launchRanks } from "../tests/_launch.ts";
import { exclusiveHolds } from "../tests/_lock_holds.ts";
import type { ResultDocument } from "../schema/result.ts";
import { checkpointFile } from "../workloads/datastates.ts";

const host = Deno.hostname();

/** Runs `workload NAME` on 3 processes with `tiers`; returns the root's document, checked. */
async function runAcross3(name: string, tiers: string, out: string): Promise<ResultDocument> {
  const ranks = launchRanks(3, [
    "workload",
    name,
    "--model",
    "7b",
    "--scale",
    "0.0002",
    "--ranks-per-node",
    "2",
    "--iterations",
    "2",
    "--tiers",
    tiers,
    "--quiet",
    "--output",
    out,
  ]);
  const doc = await clusterDoc(ranks, out);
  assert.equal(doc.kind, "workload");
  assert.equal(doc.status, "ok", doc.error);
  const c = doc.cluster!;
  assert.equal(c.coordination.barrier_ms?.length, 1);
  const shares = c.workloads_per_process!;
  assert.deepEqual(shares.map((s) => [s.rank, s.node, s.status]), [
    [0, `${host}#0`, "ok"],
    [1, `${host}#1`, "ok"],
    [2, `${host}#2`, "ok"],
  ]);
  const w = doc.workload!;
  assert.equal(w.name, name);
  // per-path bytes: the sum over processes
  const keys = Object.keys(w.summary!.bytes);
  assert.ok(keys.length > 0);
  for (const k of keys) {
    const sum = shares.reduce((t, s) => t + (s.workload.summary!.bytes[k] ?? 0), 0);
    assert.equal(w.summary!.bytes[k], sum, k);
  }
  // iteration times: the slowest process's, iteration by iteration
  assert.equal(w.iterations.length, 3); // one warm-up
  for (const [i, it] of w.iterations.entries()) {
    const times = shares.map((s) => s.workload.iterations[i]!.iteration_s);
    assert.equal(it.iteration_s, Math.max(...times), `iteration ${i}`);
    for (const [phase, p] of Object.entries(it.phases)) {
      for (const [k, io] of Object.entries(p.io)) {
        const sum = shares.reduce(
          (t, s) => t + (s.workload.iterations[i]!.phases[phase]?.io[k]?.bytes ?? 0),
          0,
        );
        assert.equal(io.bytes, sum, `iteration ${i} ${phase} ${k}`);
        if (p.time_s > 0) assert.equal(io.bw_bytes, io.bytes / p.time_s);
      }
    }
  }
  assert.equal(w.ranks.length, 6);
  return doc;
}

Deno.test("workload zero-infinity across 3 processes: one document, bytes summed, iteration times the slowest node's, nothing left", async () => {
  await withShmDir(async (shm) => {
    await withTempDir(async (dir) => {
      const doc = await runAcross3(
        "zero-infinity",
        `memory:${shm},file:${dir}`,
        join(dir, "o.json"),
      );
      for (const s of doc.cluster!.workloads_per_process!) {
        assert.ok(s.workload.summary!.bytes["local:read"]! > 0);
      }
      assert.deepEqual(await scratchLeft(dir), []);
      assert.deepEqual(await scratchLeft(shm), []);
    });
  });
});

Deno.test("workload mlp-offload across 3 processes: every node on the shared remote path, no two ranks in one lock, nothing left", async () => {
  await withTempDir(async (dir) => {
    await withTempDir(async (remote) => {
      const doc = await runAcross3(
        "mlp-offload",
        `file:${dir},pfs:${remote}`,
        join(dir, "o.json"),
      );
      for (const s of doc.cluster!.workloads_per_process!) {
        assert.ok(s.workload.summary!.bytes["remote:write"]! > 0, `rank ${s.rank}`);
        // no two ranks of the node in one node-wide lock at once
        const holds = exclusiveHolds(s.workload.timeline);
        assert.ok(holds.length > 0, `rank ${s.rank}: no lock held`);
      }
      assert.deepEqual(await scratchLeft(dir), []);
      assert.deepEqual(await scratchLeft(remote), []);
    });
  });
});

Deno.test("workload datastates across 3 processes: every node flushes to the shared remote path, nothing left", async () => {
  await withShmDir(async (shm) => {
    await withTempDir(async (dir) => {
      await withTempDir(async (remote) => {
        const doc = await runAcross3(
          "datastates",
          `memory:${shm},file:${dir},pfs:${remote}`,
          join(dir, "o.json"),
        );
        for (const s of doc.cluster!.workloads_per_process!) {
          assert.ok(s.workload.summary!.bytes["remote:write"]! > 0, `rank ${s.rank}`);
        }
        for (const d of [shm, dir, remote]) assert.deepEqual(await scratchLeft(d), []);
      });
    });
  });
});

Deno.test("workload across processes: a rank killed mid-run stops the others, the root names it, writes what it has, and every scratch goes", async () => {
  await withShmDir(async (shm) => {
    await withTempDir(async (dir) => {
      await withTempDir(async (remote) => {
        const out = join(dir, "o.json");
        const ranks = launchRanks(3, [
          "workload",
          "datastates",
          "--model",
          "7b",
          "--scale",
          "0.0002",
          "--ranks-per-node",
          "2",
          "--iterations",
          "300",
          "--tiers",
          `memory:${shm},file:${dir},pfs:${remote}`,
          "--quiet",
          "--output",
          out,
        ]);
        // A checkpoint object exists only once its node's iterations run (the layout has none):
        // wait (bounded) until every node has flushed one.
        const flushing = async () => {
          let n = 0;
          for (const d of await scratchLeft(remote)) {
            try {
              await Deno.stat(join(remote, d, "r0", checkpointFile(1, 0)));
              n++;
            } catch { /* not yet */ }
          }
          return n;
        };
        for (let i = 0; i < 1200 && (await flushing()) < 3; i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        assert.equal(await flushing(), 3, "the nodes never reached their first checkpoint");
        const doc = await killRank(ranks, 1, out);
        assert.match(doc.error!, /rank 1 .* was lost/);
        // what the root has: its own run, cut short long before its 300 iterations
        const shares = doc.cluster!.workloads_per_process!;
        assert.deepEqual(shares.map((s) => [s.rank, s.status]), [[0, "interrupted"]]);
        assert.equal(doc.cluster!.coordination.barrier_ms?.length, 1);
        // no gather ended: not measured, so absent rather than an empty list
        assert.equal(doc.cluster!.coordination.gather_ms, undefined);
        for (const d of [shm, dir, remote]) assert.deepEqual(await scratchLeft(d), []);
      });
    });
  });
});
