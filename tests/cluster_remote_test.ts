/**
 * Runs across processes on the real shared tiers of a local Ceph (CephFS
 * and RGW), started by the real launchers: Open MPI's mpirun and Slurm's
 * srun (a single-node Slurm the test starts), 3 processes each, every one a
 * node of its own (TIERBENCH_NODE_PER_RANK=1).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, scratchLeft } from "./_helpers.ts";
import { listKeys, type RemoteEnv, remoteTest, uniquePrefix } from "./_remote.ts";
import type { ResultDocument } from "../schema/result.ts";
import { SLURM_TEST_DIR, slurmDown, type SlurmEnv, slurmUp } from "../tools/services/slurm/mod.ts";

const host = Deno.hostname();

/** Runs `cmd` to the end; its exit code and both outputs. */
async function launch(cmd: string, args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(cmd, {
    args,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", TIERBENCH_NODE_PER_RANK: "1", ...env },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** mpirun of 3 tierbench processes (Open MPI, as root, more processes than cores). */
function mpirun(args: string[]) {
  return launch("mpirun.openmpi", [
    "--allow-run-as-root",
    "--oversubscribe",
    "-np",
    "3",
    "-x",
    "TIERBENCH_NODE_PER_RANK",
    Deno.execPath(),
    "run",
    "-q",
    "--allow-all",
    join(ROOT, "main.ts"),
    ...args,
  ]);
}

/** srun of 3 tierbench tasks on the tests' single-node Slurm (`--mpi=pmix`: MPI through PMIx). */
function srun(env: SlurmEnv, args: string[], mpi?: "pmix") {
  return launch("srun", [
    "-n",
    "3",
    "--overcommit",
    ...(mpi ? [`--mpi=${mpi}`] : []),
    Deno.execPath(),
    "run",
    "-q",
    "--allow-all",
    join(ROOT, "main.ts"),
    ...args,
  ], { SLURM_CONF: env.SLURM_CONF });
}

/** Where a run's scratch goes on each shared tier, and how to see what is left there. */
function sharedTiers(env: RemoteEnv, label: string) {
  const prefix = uniquePrefix(label);
  return [
    {
      name: "CephFS",
      args: ["--tier", `pfs:${env.pfsDir}`],
      left: () => scratchLeft(env.pfsDir),
    },
    {
      name: "RGW",
      args: ["--tier", `s3://${env.bucket}/${prefix}`, "--endpoint", env.endpoint],
      left: () => listKeys(env, prefix),
    },
  ];
}

/** The checks every 3-process run document must pass. */
function checkDocument(doc: ResultDocument, launcher: string, transport: string): void {
  const c = doc.cluster!;
  assert.equal(doc.status, "ok");
  assert.equal(c.launcher, launcher);
  assert.equal(c.transport, transport);
  assert.equal(c.processes_count, 3);
  assert.deepEqual(c.nodes, [`${host}#0`, `${host}#1`, `${host}#2`]);
  assert.deepEqual(c.hosts, [host]);
  const agg = c.runs[0]!;
  for (const dir of ["read", "write"] as const) {
    const sum = agg.per_process.reduce((a, p) => a + p[`${dir}_bw_bytes`], 0);
    assert.equal(agg[dir].common_bw_bytes, sum);
    assert.equal(doc.runs[0]![dir].bw_bytes, sum);
    assert.equal(
      doc.runs[0]![dir].lat_ns.N,
      c.processes.reduce((a, p) => a + p.runs[0]![dir].lat_ns.N, 0),
    );
  }
  assert.ok(agg.write.common_bw_bytes > 0);
}

const RUN = ["run", "--rw", "write", "--bs", "1m", "--size", "8m", "--runtime", "1", "--quiet"];

remoteTest(
  "mpirun -np 3 run on CephFS and on RGW: one document with 3 processes and the aggregate, nothing left",
  async (env) => {
    const dir = await Deno.makeTempDir({ prefix: "tierbench-cluster-" });
    try {
      for (const tier of sharedTiers(env, "mpirun")) {
        const out = join(dir, `${tier.name}.json`);
        const r = await mpirun([...RUN, ...tier.args, "--output", out]);
        assert.equal(r.code, 0, `${tier.name}: ${r.stderr}`);
        const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
        checkDocument(doc, "openmpi", "mpi");
        assert.deepEqual(await tier.left(), [], tier.name);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
  { needs: ["openmpi"] },
);

remoteTest(
  "bench under mpirun -np 3: the scaling curve of CephFS and RGW at 1, 2 and 3 nodes",
  async (env) => {
    const dir = await Deno.makeTempDir({ prefix: "tierbench-cluster-" });
    const prefix = uniquePrefix("scaling");
    try {
      const out = join(dir, "bench.json");
      const r = await mpirun([
        "bench",
        "--no-memory",
        "--no-file",
        "--pfs",
        env.pfsDir,
        "--s3",
        `s3://${env.bucket}/${prefix}`,
        "--endpoint",
        env.endpoint,
        "--runtime",
        "1",
        "--ramp",
        "0",
        "--size",
        "8m",
        "--quiet",
        "--no-concurrency",
        "--output",
        out,
      ]);
      assert.equal(r.code, 0, r.stderr);
      // the last screen has the curve: all nodes and, in brackets, each node's share
      assert.match(r.stdout, /^shared tier: MiB\/s of n nodes at once, 1 MiB, 1 proc × \d+ deep/m);
      for (const tier of ["pfs", "s3"]) {
        for (const io of ["reading", "writing"]) {
          const cell = String.raw`[\d,.]+ \([\d,.]+\)`;
          assert.match(r.stdout, new RegExp(`^${tier}\\s+${io}(\\s+${cell}){3}$`, "m"));
        }
      }
      const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
      const s = doc.scaling!;
      assert.equal(s.status ?? "ok", "ok");
      assert.equal(doc.phases?.at(-1)?.name, "scaling", "the curve's time is the last phase's");
      assert.deepEqual(s.tiers.map((t) => t.label), ["pfs", "s3"]);
      for (const t of s.tiers) {
        assert.deepEqual(t.points.map((p) => p.nodes), [1, 2, 3]);
        for (const p of t.points) {
          for (const dir of ["read", "write"] as const) {
            const d = p[dir];
            assert.ok(d.bw_bytes > 0, `${t.label} ${dir} at ${p.nodes}`);
            assert.equal(d.per_node!.length, p.nodes);
            assert.equal(d.per_node!.reduce((a, n) => a + n.bw_bytes, 0), d.bw_bytes);
            assert.equal(d.bw_bytes_per_node, Math.round(d.bw_bytes / p.nodes));
          }
        }
      }
      assert.deepEqual(await scratchLeft(env.pfsDir), []);
      assert.deepEqual(await listKeys(env, prefix), []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
  { needs: ["openmpi"] },
);

remoteTest(
  "srun -n 3 run on CephFS and on RGW (tcp), and with --mpi=pmix (MPI): one document with 3 processes and the aggregate, nothing left",
  async (env) => {
    const dir = await Deno.makeTempDir({ prefix: "tierbench-cluster-" });
    const quiet = { dir: SLURM_TEST_DIR, progress: () => {} };
    try {
      const slurm = await slurmUp(quiet);
      for (const tier of sharedTiers(env, "srun")) {
        const out = join(dir, `${tier.name}.json`);
        const r = await srun(slurm, [...RUN, ...tier.args, "--output", out]);
        assert.equal(r.code, 0, `${tier.name}: ${r.stderr}`);
        checkDocument(JSON.parse(await Deno.readTextFile(out)) as ResultDocument, "slurm", "tcp");
        assert.deepEqual(await tier.left(), [], tier.name);
      }
      const cephfs = sharedTiers(env, "srun-pmix")[0]!;
      const out = join(dir, "pmix.json");
      const r = await srun(slurm, [...RUN, ...cephfs.args, "--output", out], "pmix");
      assert.equal(r.code, 0, r.stderr);
      checkDocument(JSON.parse(await Deno.readTextFile(out)) as ResultDocument, "slurm", "mpi");
      assert.deepEqual(await cephfs.left(), []);
    } finally {
      await slurmDown(quiet);
      await Deno.remove(dir, { recursive: true });
    }
  },
  { needs: ["slurm", "openmpi"] },
);
