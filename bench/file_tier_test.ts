import assert from "node:assert/strict";
import { join } from "node:path";
import { parseJobOptions } from "../core/config.ts";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { FileTier } from "../tiers/mod.ts";
import { runJob } from "./runner.ts";

Deno.test("FileTier reads an existing --filename in place, without writing or removing it", async () => {
  const dir = await tempDirOnDisk();
  try {
    const path = join(dir, "data.bin");
    const data = crypto.getRandomValues(new Uint8Array(65536));
    const bytes = new Uint8Array(1024 * 1024);
    for (let i = 0; i < 16; i++) bytes.set(data, i * 65536);
    await Deno.writeFile(path, bytes);
    const before = await Deno.stat(path);
    const job = parseJobOptions({
      tier: `file:${dir}`,
      rw: "randread",
      bs: "4k",
      size: "1m",
      numjobs: "2",
      direct: true,
      filename: path,
    });
    {
      await using tier = new FileTier(job.tier);
      await tier.setup();
      const r = await runJob(tier, job);
      assert.equal(r.status, "ok", r.error);
      assert.equal(r.read.total_ios, 2 * 256);
    }
    assert.deepEqual(await Deno.readFile(path), bytes);
    assert.equal((await Deno.stat(path)).mtime?.getTime(), before.mtime?.getTime());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
