import assert from "node:assert/strict";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { evalWithJobFlags, repoUrl } from "../tests/_v8.ts";
import { ioUringRefusal } from "./io_uring.ts";

/** The engines measured: io_uring only where this kernel allows it, as its own tests. */
const ENGINES = ["noop", "libaio", ...(ioUringRefusal() === undefined ? ["io_uring"] : [])];

/**
 * A child with the command line's V8 flags warms each engine up as a job
 * Worker does, then runs `ios` I/Os of it under V8's sampling heap profiler:
 * the bytes it sampled per I/O, by engine.
 */
async function bytesPerIo(
  dir: string,
  engines: string[],
  ios: number,
): Promise<Record<string, number>> {
  const code = `
    import { Session } from "node:inspector";
    import { warmUp } from ${repoUrl("engines/types.ts")};
    import { NoopEngine } from ${repoUrl("engines/noop.ts")};
    import { LibaioEngine } from ${repoUrl("engines/libaio.ts")};
    import { IoUringEngine } from ${repoUrl("engines/io_uring.ts")};
    import { readPlan, startedRuntime } from ${repoUrl("tests/_drive_engine.ts")};
    const session = new Session();
    session.connect();
    const post = (method, params = {}) =>
      new Promise((ok, fail) => session.post(method, params, (e, r) => e ? fail(e) : ok(r)));
    await post("HeapProfiler.enable");
    const sum = (node) => node.selfSize + node.children.reduce((n, c) => n + sum(c), 0);
    const out = {};
    for (const engine of ${JSON.stringify(engines)}) {
      const plan = readPlan(engine, ${JSON.stringify(dir)} + "/" + engine, 4096 * ${ios});
      const e = engine === "noop" ? new NoopEngine()
        : engine === "libaio" ? LibaioEngine.open(plan) : IoUringEngine.open(plan);
      warmUp(plan, e);
      const rt = startedRuntime(plan);
      await post("HeapProfiler.startSampling", {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      e.run(rt);
      const { profile } = await post("HeapProfiler.stopSampling");
      e.close();
      rt.finish();
      out[engine] = sum(profile.head) / (rt.read.lat.totalCount);
    }
    console.log(JSON.stringify(out));`;
  return JSON.parse(await evalWithJobFlags(code));
}

Deno.test("a warmed job allocates nothing per I/O on the null tier, libaio and io_uring: no young-generation GC in its window", async () => {
  // Each I/O's times once went to the runtime as arguments, boxed as heap numbers: 32 bytes an
  // I/O on the null tier and 65 with libaio and io_uring, a scavenge every few ms of a job.
  const dir = await tempDirOnDisk();
  try {
    const perIo = await bytesPerIo(dir, ENGINES, 200_000);
    assert.deepEqual(Object.keys(perIo), ENGINES);
    for (const [engine, bytes] of Object.entries(perIo)) {
      assert.ok(bytes < 1, `${engine}: ${bytes.toFixed(1)} bytes allocated per I/O`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
