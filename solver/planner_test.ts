import assert from "node:assert/strict";
import { resolveSetup } from "../workloads/setup.ts";
import { FLAT_CONCURRENCY_NOTE, type Profile, type ProfileTier } from "../schema/profile.ts";
import { makePlan } from "./planner.ts";
import { placementOptions } from "../schema/plan.ts";

const GiB = 2 ** 30;
const MiB = 1 << 20;

function tierOf(
  label: string,
  kind: ProfileTier["kind"],
  read: number,
  write: number,
): ProfileTier {
  return {
    label,
    kind,
    read_bw_bytes: read,
    write_bw_bytes: write,
    bs: MiB,
    iodepth: 8,
    measured_with: "stated",
    path: `/mnt/${label}`,
  };
}

/** A node of `memory` bytes with a file and a pfs tier; `file` given its own concurrency curve. */
function profileOf(memory: number, file: Partial<ProfileTier> = {}): Profile {
  return {
    source: "inline",
    schema: "tierbench/profile@1",
    host_name: "n1",
    created: "2026-11-24T00:00:00Z",
    tiers: {
      file: { ...tierOf("file", "file", 6e9, 3e9), ...file },
      pfs: tierOf("pfs", "pfs", 3e9, 2e9),
    },
    host: { memory_bytes: memory, cpus: 64 },
    sources: [],
    notes: [],
  };
}

Deno.test("makePlan() records each path's readers and writers and their basis, and the replay runs them", async () => {
  // the file tier gains with concurrency: 1.8 × its total at 4 processes
  const curve = {
    basis: "stated" as const,
    bs: MiB,
    iodepth: 8,
    points: [1, 2, 4].map((n) => {
      const f = { 1: 1, 2: 1.5, 4: 1.8 }[n]!;
      return { processes: n, read_bw_bytes: 6e9 * f, write_bw_bytes: 3e9 * f };
    }),
  };
  const setup = resolveSetup({ model: "70b" });
  const plan = await makePlan(profileOf(2048 * GiB, { concurrency: [curve] }), setup, {
    hostCacheBytes: 64 * GiB,
  });
  const [local, remote] = plan.placement.paths;
  assert.equal(local!.readers, 4);
  assert.equal(local!.writers, 4);
  assert.match(local!.concurrency_basis![0]!, /^file read at 4 processes: 10\.80 GB\/s in all/);
  assert.equal(remote!.readers, 1);
  assert.ok(remote!.concurrency_basis!.every((b) => b.includes(FLAT_CONCURRENCY_NOTE)));
  const o = placementOptions(plan.placement.paths); // what `tierbench replay` runs
  assert.deepEqual(
    [o.readers, o.writers, o.remoteReaders, o.remoteWriters],
    [4, 4, 1, 1],
  );
  assert.ok(plan.why.some((w) => w.startsWith("ZeRO-Infinity costed with all 4 ranks on file")));
});

Deno.test("makePlan(): where the gradients do not fit in host memory, the plan swaps them and says so", async () => {
  // 7B on 2 ranks: 28 GB of fp32 gradients beside 25.6 GB of pinned swap buffers (16 × 0.4 GB
  // per rank and path) against 32 GiB less the default 10 % reserve, 30.9 GB
  const setup = resolveSetup({ model: "7b", ranksPerNode: 2 });
  const plan = await makePlan(profileOf(32 * GiB), setup, { hostCacheBytes: 4 * GiB });
  const mem = plan.predictions.plan.host_memory!;
  assert.equal(mem.gradients, "swapped");
  assert.equal(mem.gradients_bytes, 0);
  assert.ok(mem.fits);
  assert.ok(
    plan.why.some((w) => /^gradients swapped to the paths/.test(w) && /more than the/.test(w)),
  );
  // every prediction states the host memory it assumes
  for (const [name, p] of Object.entries(plan.predictions)) {
    assert.ok(p.host_memory, name);
    assert.equal(p.host_memory.available_bytes, 32 * GiB * 0.9, name);
  }
  // gradients read back in the update: more local reads than p, m, v alone
  const gradients = setup.bytesPerState * setup.parameters;
  const reads = Object.entries(plan.predictions.plan.bytes)
    .filter(([k]) => k.endsWith(":read"))
    .reduce((t, [, v]) => t + v, 0);
  assert.ok(reads >= gradients * 0.99);
});
