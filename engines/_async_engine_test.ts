import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { driveEngine, startedRuntime } from "../tests/_drive_engine.ts";
import type { JobPlan } from "../core/job_protocol.ts";
import { fillRandom } from "./_file.ts";
import { IoUringEngine, ioUringRefusal } from "./io_uring.ts";
import { Uring } from "./_uring.ts";
import { LibaioEngine } from "./libaio.ts";

const BS = 4096;
const BLOCKS = 64;
const REFUSED = ioUringRefusal();

function planOf(path: string, engine: "libaio" | "io_uring", rw: "write" | "read"): JobPlan {
  return {
    job: 0,
    tier: "file",
    target: {
      paths: [path],
      regionOffset: 0,
      layout: rw === "read" ? "none" : "fallocate",
      ...(rw === "read" ? { existing: true } : {}),
    },
    engine,
    direct: true,
    rw,
    rwmixread: rw === "read" ? 100 : 0,
    bs: BS,
    size: BLOCKS * BS,
    ioSize: BLOCKS * BS,
    iodepth: 8,
    seed: 5,
    alignment: BS,
    endFsync: true,
    ...(engine === "io_uring"
      ? { ioUring: { fixedbufs: true, registerfiles: true, sqthreadPoll: false } }
      : {}),
  };
}

function open(plan: JobPlan) {
  return plan.engine === "libaio" ? LibaioEngine.open(plan) : IoUringEngine.open(plan);
}

for (const engine of ["libaio", "io_uring"] as const) {
  Deno.test({
    name:
      `${engine}'s warm-up before the barrier moves no byte and counts nothing; the run after it does every I/O`,
    ignore: engine === "io_uring" && REFUSED !== undefined,
    fn: async () => {
      const dir = await tempDirOnDisk();
      try {
        // a write job: its laid-out file is still all zeros after the warm-up
        const wpath = join(dir, "w");
        const w = driveEngine(planOf(wpath, engine, "write"), open, {
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
        const r = driveEngine(planOf(rpath, engine, "read"), open, { warm: true });
        assert.equal(r.read.lat.totalCount, BLOCKS);
        assert.equal(r.write.lat.totalCount, 0);
        assert.deepEqual(await Deno.readFile(rpath), data);
        assert.equal((await Deno.stat(rpath)).mtime?.getTime(), before);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

Deno.test({
  name:
    "the warm-up keeps two requests in flight, so it reaps every other request; the run after it fills iodepth",
  ignore: REFUSED !== undefined,
  fn: async () => {
    const dir = await tempDirOnDisk();
    const submit = Uring.prototype.submit;
    const most = { warm: 0, run: 0 };
    let phase: "warm" | "run" = "warm";
    Uring.prototype.submit = function (this: Uring): number {
      const rc = submit.call(this);
      most[phase] = Math.max(most[phase], this.inFlight);
      return rc;
    };
    try {
      const path = join(dir, "r");
      await Deno.writeFile(path, new Uint8Array(BLOCKS * BS));
      const plan = planOf(path, "io_uring", "read");
      const engine = IoUringEngine.open(plan);
      const warm = startedRuntime(plan);
      const rt = startedRuntime(plan);
      try {
        engine.warm(warm);
        phase = "run";
        engine.run(rt);
      } finally {
        engine.close();
        warm.finish();
        rt.finish();
      }
      assert.equal(rt.read.lat.totalCount, BLOCKS);
      assert.equal(most.warm, 2);
      assert.ok(most.run > 2, `the run kept ${most.run} in flight at most`);
    } finally {
      Uring.prototype.submit = submit;
      await Deno.remove(dir, { recursive: true });
    }
  },
});
