import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { readProfile } from "./profile.ts";
import { predictUpdate, scaledTier } from "./predict.ts";
import { resolveSetup } from "../workloads/setup.ts";

const ARTIFACT = fileURLToPath(
  new URL("../results/reference/mlpoffload-artifact-4gpu-nvme-vast.json", import.meta.url),
);
const setup = (iterations: number, warmup: number) =>
  resolveSetup({ model: "llama2-70b", subgroupSize: 1e8, adamRate: 1e12, iterations, warmup });

Deno.test("predictUpdate() simulates the workload's own program: twice the bandwidth, half the I/O-bound phase", async () => {
  const profile = await readProfile(ARTIFACT);
  const run = {
    workload: "mlp-offload" as const,
    setup: setup(2, 1),
    options: { bufferCount: 25 },
  };
  const one = predictUpdate(profile, run), two = predictUpdate(profile, run, 2);
  assert.deepEqual([one.local, one.remote], ["file", "pfs"]);
  // Adam is near-free here: the phase is I/O alone
  assert.ok(Math.abs(two.update_s / one.update_s - 0.5) < 1e-4, `${one.update_s} ${two.update_s}`);
  // the program's bytes: 8 of 54 local and 8 of 28 remote subgroups cached per rank
  const zero = predictUpdate(profile, {
    workload: "zero-infinity",
    setup: setup(1, 0),
    // DeepSpeed's pipelined swapper needs 12 buffers with several subgroups (4 is refused)
    options: { pipeline: true, bufferCount: 12 },
  });
  assert.equal(zero.remote, undefined);
  assert.ok(zero.bytes["local:read"]! > one.bytes["local:read"]!);
});

Deno.test("scaledTier() scales every bandwidth of a tier, its curves' points included", () => {
  const t = scaledTier({
    label: "file",
    readBw: 2,
    writeBw: 4,
    bs: 1,
    iodepth: 1,
    mixedReadBw: 1,
    mixedWriteBw: 1,
    concurrency: [{
      basis: "stated",
      bs: 1,
      iodepth: 1,
      points: [{
        processes: 1,
        read_bw_bytes: 2,
        write_bw_bytes: 4,
        mixed_read_bw_bytes: 1,
        mixed_write_bw_bytes: 1,
      }],
    }],
  }, 3);
  assert.deepEqual([t.readBw, t.writeBw, t.mixedReadBw, t.mixedWriteBw], [6, 12, 3, 3]);
  assert.deepEqual(t.concurrency![0]!.points[0], {
    processes: 1,
    read_bw_bytes: 6,
    write_bw_bytes: 12,
    mixed_read_bw_bytes: 3,
    mixed_write_bw_bytes: 3,
  });
});
