import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, runCli, scratchLeft, withShmDir } from "../tests/_helpers.ts";
import { clusterDoc, killRank, launchRanks as launch } from "../tests/_launch.ts";
import { needing } from "../tests/_requirements.ts";
import type { ResultDocument } from "../schema/result.ts";

const host = Deno.hostname();

/** `run` writing 64 KiB blocks to 8 MiB in `dir` (a memory tier), with `extra`, quietly into `out`. */
function writeRun(dir: string, out: string, ...extra: string[]): string[] {
  return [
    ...["run", "--tier", `memory:${dir}`, "--rw", "write", "--bs", "64k", "--size", "8m"],
    ...[...extra, "--quiet", "--output", out],
  ];
}

Deno.test("run across 3 torchrun-style processes: one document with every process and the aggregate, no scratch left", async () => {
  await withShmDir(async (dir) => {
    const out = join(dir, "out.json");
    const ranks = launch(3, writeRun(dir, out, "--runtime", "1", "--log-avg-msec", "100"));
    const doc = await clusterDoc(ranks, out);
    const c = doc.cluster!;
    assert.equal(c.transport, "tcp");
    assert.deepEqual(c.processes.map((p) => p.runs.length), [1, 1, 1]);
    const agg = c.runs[0]!;
    const sum = agg.per_process.reduce((a, p) => a + p.write_bw_bytes, 0);
    assert.ok(sum > 0);
    assert.equal(agg.write.common_bw_bytes, sum);
    assert.equal(doc.runs[0]!.write.bw_bytes, sum);
    assert.equal(
      doc.runs[0]!.write.lat_ns.N,
      c.processes.reduce((a, p) => a + p.runs[0]!.write.lat_ns.N, 0),
    );
    assert.equal(c.coordination.barrier_ms?.length, 1);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

/**
 * Kills `victim` (SIGKILL) a little into a 120 s run of 3 ranks; `writer` is
 * the rank that must write the partial document and name it.
 */
function killMidRun(victim: number, writer: number, what: string): void {
  Deno.test(`run across processes: ${what}`, async () => {
    await withShmDir(async (dir) => {
      const out = join(dir, "out.json");
      const ranks = launch(3, writeRun(dir, out, "--runtime", "120", "--timeout", "10"));
      // Wait (bounded) until every rank has its scratch, then a little into the run.
      for (let i = 0; i < 600 && (await scratchLeft(dir)).length < 3; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal((await scratchLeft(dir)).length, 3);
      await new Promise((r) => setTimeout(r, 1500));
      const doc = await killRank(ranks, victim, out, { writer, then: ".*partial results in" });
      // the writer's own run was cut short, long before its 120 s
      const mine = doc.cluster!.processes[writer]!.runs[0]!;
      assert.ok(mine.read.runtime < 120_000 && mine.write.runtime < 120_000);
      assert.deepEqual(await scratchLeft(dir), []);
    });
  });
}

killMidRun(
  1,
  0,
  "a rank killed mid-run stops the others, the root names it, writes partial results and every scratch goes",
);
killMidRun(
  0,
  1,
  "rank 0 killed mid-run, the lowest live rank writes the partial results naming it and every scratch goes",
);

Deno.test("run across processes: a rank that never arrives fails the others within --timeout, naming it", async () => {
  await withShmDir(async (dir) => {
    const ranks = launch(3, [
      "run",
      "--tier",
      `memory:${dir}`,
      "--size",
      "1m",
      "--timeout",
      "3",
      "--quiet",
      "--output",
      join(dir, "out.json"),
    ], [0, 1]);
    const results = await ranks.done();
    assert.equal(results[0]!.code, 1);
    assert.match(results[0]!.stderr, /rank 2\b.*did not reach/);
    assert.notEqual(results[1]!.code, 0);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("run across processes with --stonewalling: the first to finish stops the others, whose runs end ok with what they moved", async () => {
  await withShmDir(async (dir) => {
    const out = join(dir, "out.json");
    const TiB = 2 ** 40;
    // rank 1 would write a tebibyte; ranks 0 and 2 write 32 MiB and stop it.
    const ranks = launch(
      3,
      (rank) => writeRun(dir, out, "--io-size", rank === 1 ? "1t" : "32m", "--stonewalling"),
    );
    const doc = await clusterDoc(ranks, out);
    assert.equal(doc.cluster!.stonewalling, true);
    const moved = doc.cluster!.processes.map((p) => [p.runs[0]!.status, p.runs[0]!.write.io_bytes]);
    assert.deepEqual(moved[0], ["ok", 32 * 2 ** 20]);
    assert.deepEqual(moved[2], ["ok", 32 * 2 ** 20]);
    assert.equal(moved[1]![0], "ok");
    assert.ok((moved[1]![1] as number) < TiB);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("run --stonewalling without a launcher exits 2 naming the option", async () => {
  const r = await runCli(["run", "--tier", "null:", "--size", "1m", "--stonewalling"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--stonewalling: .*no launcher/);
});

Deno.test(needing(["mpich"], {
  name: "run under MPICH's mpirun -np 3: one document from the MPI transport, no scratch left",
  async fn() {
    await withShmDir(async (dir) => {
      const out = join(dir, "out.json");
      const r = await new Deno.Command("mpirun.mpich", {
        args: [
          "-np",
          "3",
          "-env",
          "TIERBENCH_NODE_PER_RANK",
          "1",
          Deno.execPath(),
          "run",
          "-q",
          "--allow-all",
          join(ROOT, "main.ts"),
          ...writeRun(dir, out, "--runtime", "1"),
        ],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).output();
      assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
      const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
      assert.equal(doc.cluster!.launcher, "mpich");
      assert.equal(doc.cluster!.transport, "mpi");
      assert.deepEqual(doc.cluster!.nodes, [`${host}#0`, `${host}#1`, `${host}#2`]);
      const sum = doc.cluster!.runs[0]!.per_process.reduce((a, p) => a + p.write_bw_bytes, 0);
      assert.equal(doc.runs[0]!.write.bw_bytes, sum);
      assert.deepEqual(await scratchLeft(dir), []);
    });
  },
}));
