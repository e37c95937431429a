import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { driveEngine } from "../tests/_drive_engine.ts";
import type { JobPlan } from "../core/job_protocol.ts";
import { fillRandom } from "./_file.ts";
import { PsyncEngine } from "./psync.ts";

const BS = 4096;
const BLOCKS = 64;

function planOf(path: string, rw: "write" | "read"): JobPlan {
  return {
    job: 0,
    tier: "file",
    target: {
      paths: [path],
      regionOffset: 0,
      layout: rw === "read" ? "none" : "fallocate",
      ...(rw === "read" ? { existing: true } : {}),
    },
    engine: "psync",
    direct: true,
    rw,
    rwmixread: rw === "read" ? 100 : 0,
    bs: BS,
    size: BLOCKS * BS,
    ioSize: BLOCKS * BS,
    iodepth: 1,
    seed: 5,
    alignment: BS,
    endFsync: true,
  };
}

Deno.test("psync's warm-up before the barrier moves no byte and counts nothing; the run after it does every I/O", async () => {
  const dir = await tempDirOnDisk();
  try {
    // a write job: its laid-out file is still all zeros after the warm-up
    const wpath = join(dir, "w");
    const w = driveEngine(planOf(wpath, "write"), PsyncEngine.open, {
      warm: true,
      beforeStart: () => {
        assert.ok(Deno.readFileSync(wpath).every((b) => b === 0), "nothing written by warming");
      },
    });
    assert.equal(w.write.lat.totalCount, BLOCKS);
    assert.equal(w.read.lat.totalCount, 0);
    assert.ok(!Deno.readFileSync(wpath).every((b) => b === 0), "the run writes");
    // a read job on an existing file: warmed, then reads every block once
    const rpath = join(dir, "r");
    const data = new Uint8Array(BLOCKS * BS);
    fillRandom(data, 9);
    await Deno.writeFile(rpath, data);
    const before = (await Deno.stat(rpath)).mtime?.getTime();
    const r = driveEngine(planOf(rpath, "read"), PsyncEngine.open, { warm: true });
    assert.equal(r.read.lat.totalCount, BLOCKS);
    assert.equal(r.write.lat.totalCount, 0);
    assert.deepEqual(await Deno.readFile(rpath), data);
    assert.equal((await Deno.stat(rpath)).mtime?.getTime(), before);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
