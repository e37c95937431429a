/**
 * The end-of-suite check: after every other test module, nothing of
 * tierbench is left — no scratch directory in /tmp, /dev/shm or the working
 * directory, no scratch prefix in the tests' S3 bucket, no tierbench process,
 * no process or directory of the tests' Slurm (tools/services/slurm/cluster_test.ts).
 *
 * Why here and under this name: `deno test` runs test modules one after the
 * other in the sorted order of their paths, and `zz_leftovers_test.ts` at the
 * repository root sorts after every directory (bench/ … workloads/). It must
 * run inside the suite's own test process, because the tests' Ceph cluster
 * (and so the bucket) lives only as long as that process; that the cluster's
 * own daemons are gone once it is stopped is checked by .ci/run afterwards.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { SCRATCH_PREFIX } from "./tiers/scratch.ts";
import { ROOT } from "./tests/_helpers.ts";
import { CEPH_TEST_DIR, listKeys, remoteEnv, remoteSource } from "./tests/_remote.ts";
import { SLURM_TEST_DIR, slurmProcesses } from "./tools/services/slurm/mod.ts";

/** Scratch directories directly inside `dir` (none when it does not exist). */
async function scratchIn(dir: string): Promise<string[]> {
  const left: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.name.startsWith(SCRATCH_PREFIX)) left.push(join(dir, e.name));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return left;
}

/** When a process started, in clock ticks since boot (field 22 of /proc/PID/stat). */
async function startTicks(pid: number | "self"): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
}

/**
 * Processes of this checkout's tierbench that started after this test process
 * did (so the suite's, not a developer's run beside it): the CLI, the S3 stub,
 * fio on a scratch file.
 */
async function tierbenchProcesses(): Promise<string[]> {
  const root = ROOT.replace(/\/$/, "");
  const since = await startTicks("self");
  const found: string[] = [];
  for await (const e of Deno.readDir("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid) || pid === Deno.pid) continue;
    let args: string[];
    let cwd = "";
    try {
      if (await startTicks(pid) < since) continue;
      args = (await Deno.readTextFile(`/proc/${pid}/cmdline`)).split("\0").filter((a) => a);
      cwd = await Deno.readLink(`/proc/${pid}/cwd`).catch(() => "");
    } catch {
      continue; // gone meanwhile
    }
    const cli = args.some((a) =>
      a === `${root}/main.ts` || (a === "main.ts" && cwd === root) ||
      a.endsWith("tools/services/s3_stub.ts") || a.endsWith("tools/bench/_s3_raw_worker.ts")
    );
    const fio = args[0]?.endsWith("fio") === true && args.some((a) => a.includes(SCRATCH_PREFIX));
    if (cli || fio) found.push(`${pid}: ${args.join(" ")}`);
  }
  return found;
}

Deno.test("after the whole suite: no scratch directory, S3 scratch prefix or tierbench process is left", async () => {
  const dirs = [
    ...await scratchIn("/tmp"),
    ...await scratchIn("/dev/shm"),
    ...await scratchIn(Deno.cwd()),
    ...await scratchIn(ROOT),
  ];
  assert.deepEqual([...new Set(dirs)], [], "scratch directories left");
  assert.deepEqual(await tierbenchProcesses(), [], "tierbench processes left");
  // The tests' Slurm: munged, slurmctld, slurmd (started with its directory in their
  // environment), slurmscriptd and slurmstepd (working in it) and the steps' tasks.
  const slurm = (await slurmProcesses(SLURM_TEST_DIR)).map((p) => `${p.comm} (pid ${p.pid})`);
  assert.deepEqual(slurm, [], `processes of the tests' Slurm (${SLURM_TEST_DIR}) left`);
  const slurmDir = await Deno.lstat(SLURM_TEST_DIR).then(() => true, () => false);
  assert.equal(slurmDir, false, `${SLURM_TEST_DIR} left`);

  // The bucket, when this test process has the remote tiers: the environment's
  // server, or the tests' cluster if an earlier module started it (starting one
  // only to find it empty would prove nothing).
  const source = remoteSource();
  let owner = "";
  try {
    owner = (await Deno.readTextFile(`${CEPH_TEST_DIR}.owner`)).trim();
  } catch { /* no cluster owned */ }
  if (source === "env" || (source === "ceph" && owner === String(Deno.pid))) {
    const env = await remoteEnv();
    assert.ok(env, "the remote tiers are configured but not reachable");
    const keys = (await listKeys(env, "")).filter((k) => k.includes(SCRATCH_PREFIX));
    assert.deepEqual(keys, [], `scratch objects left in s3://${env.bucket}`);
  }
});
