import assert from "node:assert/strict";
import { join } from "node:path";
import type { JobPlan } from "../core/job_protocol.ts";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { JobFiles } from "./_file.ts";

function plan(paths: string[], regionOffset = 0): JobPlan {
  return {
    job: 0,
    tier: "pfs",
    target: { paths, regionOffset, layout: "prefill" },
    engine: "psync",
    direct: false,
    rw: "read",
    rwmixread: 100,
    bs: 4096,
    size: 10 * 4096,
    ioSize: 0,
    iodepth: 1,
    seed: 1,
    alignment: 4096,
    endFsync: true,
  };
}

Deno.test("JobFiles stripes blocks round-robin over nrfiles and lays out each file's share", async () => {
  const dir = await tempDirOnDisk();
  try {
    const paths = [0, 1, 2].map((i) => join(dir, `f${i}`));
    const files = JobFiles.open(plan(paths));
    try {
      files.layOut();
      // 10 blocks over 3 files: 4, 3 and 3 blocks.
      assert.deepEqual(paths.map((p) => Deno.statSync(p).size), [4 * 4096, 3 * 4096, 3 * 4096]);
      const blocks = [0, 1, 2, 3, 4, 9].map((b) => b * 4096);
      assert.deepEqual(blocks.map((o) => files.fileOf(o)), [0, 1, 2, 0, 1, 0]);
      assert.deepEqual(blocks.map((o) => files.offsetIn(o) / 4096), [0, 0, 0, 1, 1, 3]);
      assert.ok(files.fsyncAll() >= 0);
    } finally {
      files.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("JobFiles in a shared file addresses and lays out only the job's region", async () => {
  const dir = await tempDirOnDisk();
  try {
    const path = join(dir, "shared");
    const region = 10 * 4096;
    const files = JobFiles.open(plan([path], region));
    try {
      files.layOut();
      assert.equal(Deno.statSync(path).size, 2 * region);
      assert.equal(files.offsetIn(0), region);
      assert.equal(files.offsetIn(9 * 4096), region + 9 * 4096);
    } finally {
      files.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
