import assert from "node:assert/strict";
import { parseJobOptions, parseTierSpec } from "../core/config.ts";
import { openTier } from "../tiers/mod.ts";
import { runJob, WORKER_URL } from "./runner.ts";
import { WorkerPool } from "./_worker_pool.ts";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";

const POOL = new URL("./_worker_pool.ts", import.meta.url).href;
const ROOT = new URL("../", import.meta.url).pathname;

const job = (numjobs: string) =>
  parseJobOptions({ tier: "null:", rw: "randread", bs: "4k", runtime: "100ms", numjobs });

Deno.test("a job's Workers take the session's next job after a clean end, and none after an interrupted one", async () => {
  await using tier = openTier(parseTierSpec("null:"), "pool-test");
  await tier.setup();
  using pool = new WorkerPool(WORKER_URL);
  const first = await runJob(tier, job("3"), { workers: pool });
  assert.equal(first.status, "ok");
  assert.equal(pool.idle, 3, "all three Workers kept");
  // the next run takes them (and starts one more): the same results, as many Workers kept
  const second = await runJob(tier, job("4"), { workers: pool });
  assert.equal(second.status, "ok");
  assert.ok(second.read.total_ios > 0);
  assert.equal(pool.idle, 4);
  // interrupted: its Workers end, never reused
  const abort = new AbortController();
  const run = runJob(tier, parseJobOptions({ ...rawOf("2"), runtime: "10" }), {
    workers: pool,
    signal: abort.signal,
  });
  setTimeout(() => abort.abort("test"), 300);
  assert.equal((await run).status, "interrupted");
  assert.equal(pool.idle, 2, "the two it took are gone, the other two still wait");
});

function rawOf(numjobs: string) {
  return { tier: "null:", rw: "randread", bs: "4k", numjobs };
}

/** Whether a process's second pool takes the Worker its first pool ended, with `leave` or not. */
async function secondPoolTakesFirstsWorker(leave: boolean): Promise<string> {
  const code = `import { leaveWorkersToExit, WorkerPool } from ${JSON.stringify(POOL)};
    if (${leave}) leaveWorkersToExit();
    const url = new URL("data:text/javascript,");
    const a = new WorkerPool(url);
    const w = a.take("a");
    a.give(w);
    a[Symbol.dispose]();
    const b = new WorkerPool(url);
    console.log(b.take("b") === w);
    Deno.exit(0);`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "-q", code],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test("a closed pool parks its idle Workers for the process's next pool once leaveWorkersToExit is called, and terminates them otherwise", async () => {
  assert.equal(await secondPoolTakesFirstsWorker(true), "true");
  assert.equal(await secondPoolTakesFirstsWorker(false), "false");
});

Deno.test(needing(["strace"], {
  name:
    "the command line leaves its job Workers to the exit: no isolate is torn down page by page after the run",
  async fn() {
    const dir = await tempDirOnDisk();
    try {
      const trace = join(dir, "trace");
      const out = await new Deno.Command("strace", {
        args: [
          "-f",
          "-qq",
          "-e",
          "trace=madvise",
          "-o",
          trace,
          Deno.execPath(),
          "run",
          "-A",
          "--v8-flags=--no-concurrent-recompilation",
          join(ROOT, "main.ts"),
          "run",
          "--tier",
          "null:",
          "--rw",
          "randread",
          "--bs",
          "4k",
          "--numjobs",
          "16",
          "--runtime",
          "200ms",
          "--output",
          join(dir, "r.json"),
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      // terminated, 16 job Workers' isolates made 3,900 MADV_DONTNEED calls as they were torn
      // down (64 made 180,000); the whole run without that makes a few dozen
      const discards = (await Deno.readTextFile(trace)).split("MADV_DONTNEED").length - 1;
      assert.ok(discards < 1_000, `${discards} madvise(MADV_DONTNEED) calls`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
