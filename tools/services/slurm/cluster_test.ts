/**
 * End-to-end tests of slurmUp() and slurmDown() on a real single-node Slurm
 * in {@linkcode SLURM_TEST_DIR}: srun runs tasks with the ranks Slurm gives
 * them (and an MPI job through PMIx), a killed task fails the step, and
 * `down` leaves no process and no directory behind, a job step running or
 * not. Each test brings its own cluster up and down (the ports are fixed, so
 * one at a time). Ignored (loudly) without root or Slurm, unless `CI=true`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { needing, type Requirement } from "../../../tests/_requirements.ts";
import { slurmDown, type SlurmEnv, slurmUp } from "./cluster.ts";
import { DAEMONS, layout, pidFile, SLURM_TEST_DIR } from "./config.ts";
import { slurmProcesses } from "./daemons.ts";
import { alive, exists, type Proc, procStat, readText } from "./_process.ts";

const quiet = { dir: SLURM_TEST_DIR, progress: () => {} };
const PROBE = fileURLToPath(new URL("./testdata/mpi_probe.ts", import.meta.url));
/** Open MPI's library, which the MPI probe loads through FFI. */
const LIBMPI: Requirement = {
  name: "libmpi",
  detection: { library: "libmpi.so.40" },
  packages: ["openmpi-bin"],
};
/** The most any srun here may take; a hung one is killed and fails its test. */
const SRUN_TIMEOUT_MS = 60_000;

/** Runs srun with the cluster's environment; its exit status and output, killed at the limit. */
async function srun(env: SlurmEnv, args: string[]): Promise<{ code: number; stdout: string }> {
  const child = new Deno.Command("srun", {
    args,
    env: { ...env },
    stdout: "piped",
    stderr: "piped",
  })
    .spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), SRUN_TIMEOUT_MS);
  try {
    const out = await child.output();
    assert.notEqual(out.signal, "SIGKILL", `srun ${args.join(" ")} hung`);
    return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
  } finally {
    clearTimeout(timer);
  }
}

/** The live children of process `pid`. */
async function childrenOf(pid: number): Promise<Proc[]> {
  const found: Proc[] = [];
  for await (const e of Deno.readDir("/proc")) {
    const stat = await readText(`/proc/${e.name}/stat`);
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(f[1]) === pid && f[0] !== "Z") {
      found.push({ pid: Number(e.name), start: f[19] ?? "" });
    }
  }
  return found;
}

/** The processes in the daemons' pid files. */
async function daemonPids(): Promise<Proc[]> {
  const l = layout(SLURM_TEST_DIR);
  const procs: Proc[] = [];
  for (const d of DAEMONS) {
    const pid = Number((await readText(pidFile(l, d))).trim());
    const s = await procStat(pid);
    assert.ok(s, `${d.name} (pid ${pid}) is not running`);
    procs.push({ pid, start: s.start });
  }
  return procs;
}

/** Brings the cluster down and checks that nothing of it is left. */
async function downAndCheck(daemons: Proc[]): Promise<void> {
  await slurmDown(quiet);
  assert.deepEqual(await slurmProcesses(SLURM_TEST_DIR), [], "processes of the cluster left");
  for (const p of daemons) assert.equal(await alive(p), false, `pid ${p.pid} still runs`);
  assert.equal(await exists(SLURM_TEST_DIR), false, `${SLURM_TEST_DIR} still exists`);
}

/** Runs `fn` on a cluster brought up for it, and down (checked) after, whatever happened. */
async function withCluster(fn: (env: SlurmEnv) => Promise<void>): Promise<void> {
  const env = await slurmUp(quiet);
  let daemons: Proc[] = [];
  try {
    daemons = await daemonPids();
    await fn(env);
  } finally {
    await downAndCheck(daemons);
  }
}

Deno.test(needing(["root", "slurm"], {
  name: "srun -n 3 gives tasks ranks 0–2 of 3 on node 0; up is idempotent; down leaves nothing",
  fn: () =>
    withCluster(async (env) => {
      assert.deepEqual(await slurmUp(quiet), env);
      const r = await srun(env, [
        ...["-n", "3", "--overcommit", "sh", "-c"],
        'echo "$SLURM_PROCID $SLURM_NTASKS $SLURM_LOCALID $SLURM_NODEID"',
      ]);
      assert.equal(r.code, 0);
      assert.deepEqual(r.stdout.trim().split("\n").sort(), ["0 3 0 0", "1 3 1 0", "2 3 2 0"]);
    }),
}));

Deno.test(needing(["root", "slurm", LIBMPI], {
  name: "srun --mpi=pmix runs an MPI job through Deno FFI: ranks 0–2 of 3",
  fn: () =>
    withCluster(async (env) => {
      const r = await srun(env, [
        ...["-n", "3", "--overcommit", "--mpi=pmix"],
        ...[Deno.execPath(), "run", "-A", PROBE],
      ]);
      assert.equal(r.code, 0);
      assert.deepEqual(r.stdout.trim().split("\n").sort(), ["0 3", "1 3", "2 3"]);
    }),
}));

Deno.test(needing(["root", "slurm"], {
  name: "a task killed with SIGKILL fails srun, and down still leaves nothing",
  fn: () =>
    withCluster(async (env) => {
      const r = await srun(env, [
        ...["-n", "3", "--overcommit", "sh", "-c"],
        'if [ "$SLURM_PROCID" = 1 ]; then kill -KILL $$; fi; echo "$SLURM_PROCID"',
      ]);
      assert.notEqual(r.code, 0);
    }),
}));

Deno.test(needing(["root", "slurm"], {
  name: "down while a job step runs stops its slurmstepd and tasks too",
  fn: async () => {
    let child: Deno.ChildProcess | undefined;
    try {
      await withCluster(async (env) => {
        child = new Deno.Command("srun", {
          args: ["-n", "2", "--overcommit", "sleep", "300"],
          env: { ...env },
          stdout: "null",
          stderr: "null",
        }).spawn();
        // Bounded: until both tasks run (their sleeps are in a slurmstepd's session).
        const deadline = Date.now() + SRUN_TIMEOUT_MS;
        while (
          (await slurmProcesses(SLURM_TEST_DIR)).filter((p) => p.comm === "sleep").length < 2
        ) {
          assert.ok(Date.now() < deadline, "the job step's tasks never started");
          await new Promise((r) => setTimeout(r, 100));
        }
      });
    } finally {
      // srun, the client, keeps retrying once the cluster is gone: it is ours to stop.
      // It forks a second srun: stop that one too, before its parent goes and it is orphaned.
      if (child) {
        const forked = await childrenOf(child.pid);
        child.kill("SIGKILL");
        await child.status;
        for (const p of forked) if (await alive(p)) Deno.kill(p.pid, "SIGKILL");
        for (const p of forked) {
          const deadline = Date.now() + SRUN_TIMEOUT_MS;
          while (await alive(p)) {
            assert.ok(Date.now() < deadline, `srun's child (pid ${p.pid}) outlived SIGKILL`);
            await new Promise((r) => setTimeout(r, 50));
          }
        }
      }
    }
  },
}));
