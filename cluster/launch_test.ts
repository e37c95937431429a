import assert from "node:assert/strict";
import { expandNodeList } from "./_nodelist.ts";
import { detectLaunch } from "./launch.ts";
import { ConfigError, InputError } from "../core/errors.ts";

const host = Deno.hostname();

Deno.test("detectLaunch: no launcher is a single process of rank 0 of 1", () => {
  assert.deepEqual(detectLaunch({}), {
    launcher: "none",
    transport: "single",
    rank: 0,
    size: 1,
    localRank: 0,
    node: host,
  });
});

Deno.test("detectLaunch: Open MPI's variables make an mpi launch", () => {
  const info = detectLaunch({
    OMPI_COMM_WORLD_RANK: "2",
    OMPI_COMM_WORLD_SIZE: "4",
    OMPI_COMM_WORLD_LOCAL_RANK: "0",
    PMIX_RANK: "2",
    SLURM_PROCID: "7",
  });
  assert.deepEqual(
    [info.launcher, info.transport, info.rank, info.size, info.localRank],
    ["openmpi", "mpi", 2, 4, 0],
  );
});

Deno.test("detectLaunch: MPICH's PMI variables make an mpi launch with MPI_LOCALRANKID", () => {
  const info = detectLaunch({ PMI_RANK: "1", PMI_SIZE: "3", MPI_LOCALRANKID: "1" });
  assert.deepEqual(
    [info.launcher, info.transport, info.rank, info.size, info.localRank],
    ["mpich", "mpi", 1, 3, 1],
  );
});

Deno.test("detectLaunch: srun with PMIx is an mpi launch by slurm", () => {
  const info = detectLaunch({
    SLURM_PROCID: "1",
    SLURM_NTASKS: "3",
    SLURM_LOCALID: "1",
    PMIX_RANK: "1",
    SLURM_JOB_NODELIST: "n1",
  });
  assert.deepEqual([info.launcher, info.transport, info.rank, info.size], ["slurm", "mpi", 1, 3]);
  assert.equal(info.address, undefined);
});

Deno.test("detectLaunch: plain Slurm is tcp to the step's first node on a port from the job and step", () => {
  const env = {
    SLURM_PROCID: "2",
    SLURM_NTASKS: "4",
    SLURM_LOCALID: "0",
    SLURM_NODEID: "1",
    SLURM_STEP_NODELIST: "gpu[07-09,12]",
    SLURM_JOB_NODELIST: "gpu[01-16]",
    SLURM_JOB_ID: "123456",
    SLURM_STEP_ID: "3",
  };
  const info = detectLaunch(env);
  assert.deepEqual([info.launcher, info.transport, info.rank, info.size], ["slurm", "tcp", 2, 4]);
  assert.equal(info.address?.host, "gpu07");
  const port = info.address!.port;
  assert.ok(port >= 20000 && port <= 29999, `port ${port}`);
  assert.equal(detectLaunch(env).address?.port, port, "every task derives the same port");
  assert.notEqual(detectLaunch({ ...env, SLURM_STEP_ID: "4" }).address?.port, port);
  assert.equal(detectLaunch({ ...env, TIERBENCH_PORT: "31000" }).address?.port, 31000);
  const { SLURM_STEP_NODELIST: _, ...jobOnly } = env;
  assert.equal(detectLaunch(jobOnly).address?.host, "gpu01");
});

Deno.test("detectLaunch: torchrun-style variables are tcp to MASTER_ADDR:MASTER_PORT", () => {
  const info = detectLaunch({
    RANK: "1",
    WORLD_SIZE: "3",
    LOCAL_RANK: "1",
    MASTER_ADDR: "10.0.0.5",
    MASTER_PORT: "29500",
  });
  assert.deepEqual(
    [info.launcher, info.transport, info.rank, info.size, info.localRank, info.address],
    ["torchrun", "tcp", 1, 3, 1, { host: "10.0.0.5", port: 29500 }],
  );
});

Deno.test("detectLaunch: TIERBENCH_NODE_PER_RANK=1 makes each rank a node of its own", () => {
  const env = { RANK: "2", WORLD_SIZE: "3", MASTER_ADDR: "h", MASTER_PORT: "1" };
  assert.equal(detectLaunch({ ...env, TIERBENCH_NODE_PER_RANK: "1" }).node, `${host}#2`);
  assert.equal(detectLaunch(env).node, host);
});

Deno.test("detectLaunch: bad values name the variable and what is allowed, as usage errors", () => {
  const tr = { RANK: "0", WORLD_SIZE: "3", MASTER_ADDR: "h", MASTER_PORT: "29500" };
  const says = (re: RegExp) => (e: unknown) =>
    e instanceof InputError && e instanceof ConfigError && re.test(e.message);
  assert.throws(
    () => detectLaunch({ ...tr, RANK: "3" }),
    says(/^RANK: must be an integer from 0 to 2 \(WORLD_SIZE is 3\), got 3$/),
  );
  assert.throws(
    () => detectLaunch({ ...tr, WORLD_SIZE: "two" }),
    says(/^WORLD_SIZE: must be an integer of at least 1, got "two"$/),
  );
  assert.throws(() => detectLaunch({ ...tr, RANK: "1.5" }), says(/^RANK: must be/));
  const { MASTER_PORT: _, ...noPort } = tr;
  assert.throws(
    () => detectLaunch(noPort),
    says(/^MASTER_PORT: is not set: it must be a TCP port/),
  );
  assert.throws(
    () => detectLaunch({ ...tr, MASTER_PORT: "70000" }),
    says(/^MASTER_PORT: must be a TCP port from 1 to 65535/),
  );
  assert.throws(
    () => detectLaunch({ OMPI_COMM_WORLD_RANK: "4", OMPI_COMM_WORLD_SIZE: "4" }),
    says(/^OMPI_COMM_WORLD_RANK: /),
  );
  assert.throws(
    () => detectLaunch({ SLURM_PROCID: "0", SLURM_NTASKS: "2" }),
    says(/^SLURM_STEP_NODELIST: and SLURM_JOB_NODELIST are not set/),
  );
  const slurm = { SLURM_PROCID: "0", SLURM_NTASKS: "2", SLURM_JOB_ID: "7" };
  for (const list of ["node[1-", "n[3-1]", "n[a-b]", ",", "x[]"]) {
    assert.throws(
      () => detectLaunch({ ...slurm, SLURM_JOB_NODELIST: list }),
      says(/^SLURM_JOB_NODELIST: ".*" (is not a Slurm node list|lists no host)/),
      list,
    );
  }
  assert.throws(
    () => detectLaunch({ ...slurm, SLURM_STEP_NODELIST: "n[2-1]", SLURM_JOB_NODELIST: "n1" }),
    says(/^SLURM_STEP_NODELIST: "n\[2-1\]" is not a Slurm node list: range "2-1" runs backwards/),
  );
});

Deno.test("expandNodeList: ranges keep their padding and bracket groups multiply", () => {
  assert.deepEqual(expandNodeList("node[01-03,07]"), ["node01", "node02", "node03", "node07"]);
  assert.deepEqual(expandNodeList("a,b[1-2],c"), ["a", "b1", "b2", "c"]);
  assert.deepEqual(expandNodeList("r[1-2]-n[1-2]"), ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]);
  assert.deepEqual(expandNodeList("vm"), ["vm"]);
  assert.throws(() => expandNodeList("n[3-1]"), TypeError);
  assert.throws(() => expandNodeList("n[1-2"), TypeError);
});
