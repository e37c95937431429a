import assert from "node:assert/strict";
import { needing } from "../tests/_requirements.ts";
import { probeArgs, spawn } from "./testdata/_run_probe.ts";

const host = Deno.hostname();

/** Checks what 3 "ok" probes printed: the same as the torchrun-style run. */
function checkOk(lines: ReturnType<ReturnType<typeof spawn>["results"]>, launcher: string) {
  const results = lines.sort((a, b) => a.rank - b.rank);
  assert.deepEqual(
    results.map((r) => [r.rank, r.ok, r.launcher]),
    [0, 1, 2].map((i) => [i, true, launcher]),
  );
  for (const r of results) {
    assert.equal(r.broadcast, "run-42");
    assert.equal(r.root, 0);
    assert.deepEqual(
      r.members!.map((m) => [m.rank, m.node]),
      [0, 1, 2].map((i) => [i, `${host}#${i}`]),
    );
  }
  assert.deepEqual(results[0]!.gathered, [0, 1, 2].map((i) => `payload of rank ${i}`));
  assert.equal(results[2]!.gathered, undefined);
}

Deno.test(needing(["openmpi"], {
  name: "Open MPI: mpirun -np 3 gives the same barrier, gather, broadcast and members",
  fn: async () => {
    const p = spawn("mpirun.openmpi", [
      "--allow-run-as-root",
      "--oversubscribe",
      "-np",
      "3",
      "-x",
      "TIERBENCH_NODE_PER_RANK=1",
      ...probeArgs(),
    ], { PROBE: "ok" });
    const end = await p.done;
    assert.equal(end.code, 0, end.stderr);
    checkOk(p.results(), "openmpi");
  },
}));

Deno.test(needing(["openmpi"], {
  name: "Open MPI: a process that dies makes mpirun end the whole job non-zero, naming its rank",
  fn: async () => {
    // The survivors never see a RankLostError: mpirun kills them first (documented in mpi.ts).
    const p = spawn("mpirun.openmpi", [
      "--allow-run-as-root",
      "--oversubscribe",
      "-np",
      "3",
      ...probeArgs(),
    ], { PROBE: "die", PROBE_VICTIM: "2" });
    const end = await p.done;
    assert.notEqual(end.code, 0);
    assert.match(end.stderr + p.lines.join("\n"), /process rank 2 .*exited on signal 9/);
    assert.deepEqual(p.results().filter((r) => r.ok), []);
  },
}));

Deno.test(needing(["mpich"], {
  name: "MPICH: mpirun.mpich -np 3 gives the same barrier, gather, broadcast and members",
  fn: async () => {
    const p = spawn("mpirun.mpich", [
      "-np",
      "3",
      "-env",
      "TIERBENCH_NODE_PER_RANK",
      "1",
      ...probeArgs(),
    ], { PROBE: "ok" });
    const end = await p.done;
    assert.equal(end.code, 0, end.stderr);
    checkOk(p.results(), "mpich");
  },
}));
