import assert from "node:assert/strict";
import { parseJobOptions, type RawJobOptions } from "../core/config.ts";
import { runJob } from "./runner.ts";
import { scratchLeft, tempDirOnDisk } from "../tests/_helpers.ts";
import { PfsTier } from "../tiers/pfs.ts";

async function runPfs(dir: string, raw: RawJobOptions) {
  const job = parseJobOptions({ tier: `pfs:${dir}`, ...raw });
  await using tier = new PfsTier(job.tier);
  await tier.setup();
  return await runJob(tier, job);
}

Deno.test("PfsTier runs a shared file with a region per job and fsyncs at the end", async () => {
  const dir = await tempDirOnDisk();
  try {
    const r = await runPfs(dir, {
      rw: "write",
      bs: "64k",
      size: "4m",
      numjobs: "2",
      fileLayout: "shared",
    });
    assert.equal(r.status, "ok", r.error);
    assert.equal(r.options.file_layout, "shared");
    assert.equal(r.options.end_fsync, true);
    assert.equal(r.write.io_bytes, 2 * 4 * 1024 * 1024);
    assert.equal(r.tier.direct, "client-dependent");
    assert.ok(r.jobs.every((j) => j.fsync_ms >= 0));
    assert.deepEqual(await scratchLeft(dir), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PfsTier stripes each job over nrfiles and reads them back", async () => {
  const dir = await tempDirOnDisk();
  try {
    const r = await runPfs(dir, {
      rw: "randread",
      bs: "4k",
      size: "1m",
      nrfiles: "3",
      engine: "libaio",
      iodepth: "4",
    });
    assert.equal(r.status, "ok", r.error);
    assert.equal(r.options.nrfiles, 3);
    assert.equal(r.read.total_ios, 256);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parseJobOptions() keeps end_fsync off for the file tier unless asked", () => {
  assert.equal(parseJobOptions({ tier: "file:/x" }).endFsync, false);
  assert.equal(parseJobOptions({ tier: "pfs:/x" }).endFsync, true);
  assert.equal(parseJobOptions({ tier: "pfs:/x", endFsync: false }).endFsync, false);
});
