/**
 * Every command that moves data takes `--verify` and `--timeout`, and its
 * results say they held: contention, sweep, bench, replay, and runs and
 * workloads across processes (a torchrun-style launch of 2 processes on
 * this machine). `run` and `workload` alone are in their own tests.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { ResultDocument, RunResult } from "../schema/result.ts";
import { ROOT, runCli, scratchLeft, withShmDir, withTempDir } from "./_helpers.ts";
import { launchRanks } from "./_launch.ts";

/** Every run checked its blocks (verify on) and had its requests bounded by `ms`. */
function assertChecked(runs: readonly RunResult[], ms: number, what: string): void {
  assert.ok(runs.length > 0, `${what}: no runs`);
  for (const r of runs) {
    assert.equal(r.status, "ok", `${what}: ${r.name}: ${r.error}`);
    assert.equal(r.options.timeout_ms, ms, `${what}: ${r.name}`);
    // a randrw point deeper than 1 cannot be checked (a block may be read while rewritten), nor
    // the null tier (it moves no data)
    const unchecked = (r.options.rw === "randrw" && r.options.iodepth > 1 &&
      !r.options.tier.startsWith("s3://")) || r.options.tier === "null:";
    assert.equal(r.options.verify, unchecked ? undefined : true, `${what}: ${r.name}`);
  }
}

Deno.test("contention, sweep and bench take --verify and --timeout: every run checks its blocks within the timeout", async () => {
  await withTempDir(async (dir) => {
    await withShmDir(async (shm) => {
      const cases: [string, string[]][] = [
        ["contention", [
          ...["contention", "--tiers", `memory:${shm},file:${dir}`, "--runtime", "0.3"],
          ...["--ramp", "0", "--size", "8m", "--no-concurrency", "--no-mixed"],
        ]],
        ["sweep", [
          ...["sweep", "--tier", `file:${dir}`, "--rw", "write,read", "--bs", "64k"],
          ...["--iodepth", "1,4", "--numjobs", "1", "--size", "4m", "--runtime", "0.3"],
          ...["--ramp", "0"],
        ]],
        ["bench", [
          ...["bench", "--quick", "--no-file", "--memory-dir", shm, "--no-concurrency"],
          ...["--size", "4m"],
        ]],
      ];
      for (const [what, args] of cases) {
        const out = join(dir, `${what}.json`);
        const r = await runCli([...args, "--verify", "--timeout", "7", "--quiet", "--output", out]);
        assert.equal(r.code, 0, `${what}: ${r.stderr}`);
        const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
        assertChecked(doc.runs, 7000, what);
      }
      assert.deepEqual(await scratchLeft(dir), []);
      assert.deepEqual(await scratchLeft(shm), []);
    });
  });
});

Deno.test("tierbench replay takes --verify and --timeout: every object the plan's workload reads back is checked", async () => {
  await withTempDir(async (dir) => {
    const plan = join(dir, "plan.json");
    const p = await runCli([
      ...["plan", "--profile", join(ROOT, "results", "reference", "dgx-a100-8gpu-nvme-s3.json")],
      ...["--model", "7b", "--output", plan],
    ]);
    assert.equal(p.code, 0, p.stderr);
    const remote = join(dir, "remote");
    await Deno.mkdir(remote);
    await withShmDir(async (shm) => {
      const out = join(dir, "replay.json");
      const r = await runCli([
        ...["replay", plan, "--tiers", `memory:${shm},file:${dir},pfs:${remote}`],
        ...["--scale", "0.002", "--iterations", "1", "--warmup", "0", "--verify"],
        ...["--timeout", "9", "--quiet", "--output", out],
      ]);
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
      assert.equal(doc.config.verify, true);
      assert.equal(doc.config.timeout_ms, 9000);
      assert.ok((doc.workload?.verify?.checked_bytes ?? 0) > 0, "nothing was checked");
    });
  });
});

Deno.test("a run and a workload across processes take --verify and --timeout on every process", async () => {
  await withShmDir(async (shm) => {
    const run = join(shm, "run.json");
    const ranks = launchRanks(2, [
      ...["run", "--tier", `memory:${shm}`, "--rw", "write", "--bs", "64k", "--size", "4m"],
      ...["--verify", "--timeout", "6", "--quiet", "--output", run],
    ]);
    for (const [rank, r] of (await ranks.done()).entries()) {
      assert.equal(r.code, 0, `rank ${rank}: ${r.stderr}`);
    }
    const doc = JSON.parse(await Deno.readTextFile(run)) as ResultDocument;
    assert.equal(doc.cluster!.processes_count, 2);
    assertChecked(doc.cluster!.processes.flatMap((p) => p.runs), 6000, "run across processes");

    await withTempDir(async (dir) => {
      const wl = join(dir, "workload.json");
      const workload = launchRanks(2, [
        ...["workload", "zero-infinity", "--model", "7b", "--scale", "0.0005"],
        ...["--iterations", "1", "--tiers", `memory:${shm},file:${dir}`, "--verify"],
        ...["--timeout", "6", "--quiet", "--output", wl],
      ]);
      for (const [rank, r] of (await workload.done()).entries()) {
        assert.equal(r.code, 0, `rank ${rank}: ${r.stderr}`);
      }
      const w = JSON.parse(await Deno.readTextFile(wl)) as ResultDocument;
      const shares = w.cluster!.workloads_per_process!;
      assert.equal(shares.length, 2);
      for (const s of shares) {
        assert.ok((s.workload.verify?.checked_bytes ?? 0) > 0, `rank ${s.rank}`);
      }
      assert.equal(
        w.workload!.verify!.checked_bytes,
        shares.reduce((n, s) => n + s.workload.verify!.checked_bytes, 0),
      );
      assert.deepEqual(await scratchLeft(dir), []);
    });
    assert.deepEqual(await scratchLeft(shm), []);
  });
});
