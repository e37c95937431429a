import assert from "node:assert/strict";
import { parseTierSpec } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { withTempDir } from "../tests/_helpers.ts";
import { newRunId } from "../tiers/scratch.ts";
import type { ConcurrencyResult } from "../schema/concurrency.ts";
import type { RunResult } from "../schema/result.ts";
import { planConcurrency, runConcurrency, shorterTime } from "./concurrency.ts";
import { runContentionSession } from "./contention.ts";
import { loadProfile } from "../solver/profile.ts";
import { togetherAtOf } from "../solver/slowdown.ts";

/** Tiny points: the tests check the curves' shape, never their figures. */
const TINY = { runtime: "0.2", ramp: "0", size: "4m" } as const;

/**
 * Every tier has a curve per bs with points 1..R, each read, write and mixed, its runs in `runs`.
 * One 0.2 s window under load may hold no completion (its figure 0), a tier's every window not.
 */
function assertCurves(
  c: ConcurrencyResult,
  runs: readonly RunResult[],
  labels: string[],
  bs: number[],
  r: number,
): void {
  assert.equal(c.status, "ok", c.error);
  assert.deepEqual(c.tiers.map((t) => t.label), labels);
  for (const t of c.tiers) {
    assert.deepEqual(t.curves.map((x) => x.bs), bs);
    let bytes = 0;
    for (const curve of t.curves) {
      assert.equal(curve.iodepth, 8);
      assert.deepEqual(curve.points.map((p) => p.processes), [...Array(r)].map((_, i) => i + 1));
      for (const p of curve.points) {
        const bws = [
          p.read_bw_bytes,
          p.write_bw_bytes,
          p.mixed_read_bw_bytes!,
          p.mixed_write_bw_bytes!,
        ];
        for (const bw of bws) assert.ok(bw >= 0, JSON.stringify(p));
        bytes += bws.reduce((a, b) => a + b);
        assert.equal(p.runs.length, 4);
        for (const name of p.runs) {
          const run = runs.find((x) => x.name === name);
          assert.ok(run, `${name} is in runs`);
          assert.equal(run.options.numjobs, p.processes);
          assert.equal(run.options.bs, curve.bs);
          assert.equal(run.options.file_layout, "files");
        }
      }
    }
    assert.ok(bytes > 0, `${t.label}: no I/O at any point`);
  }
}

Deno.test("runConcurrency() measures memory and file at 1..R processes, read, write and mixed", async () => {
  await withTempDir(async (dir) => {
    const out = await runConcurrency(
      [parseTierSpec("memory:"), parseTierSpec(`file:${dir}`)],
      { ...TINY, ranksPerNode: "2", bs: "1m,2m", runId: newRunId() },
    );
    assert.equal(out.error, undefined);
    assertCurves(out.concurrency, out.runs, ["memory", "file"], [1048576, 2097152], 2);
    assert.equal(out.concurrency.tiers[1]!.direct, true);
    assert.deepEqual(out.concurrency.processes, [1, 2]);
    // the scratch directory is gone
    for await (const e of Deno.readDir(dir)) assert.fail(`${e.name} was left`);
  });
});

Deno.test("contention with concurrency writes the curves after the matrix, and the pair reading and writing with R processes per job", async () => {
  await withTempDir(async (dir) => {
    const { doc, error } = await runContentionSession(
      [parseTierSpec("memory:"), parseTierSpec(`file:${dir}`)],
      { ...TINY, concurrency: { processes: "1,2", bs: "1m", ...TINY } },
      { command: "contention" },
    );
    assert.equal(error, undefined);
    assert.equal(doc.status, "ok");
    assert.ok(doc.contention && doc.contention.groups.length > 0);
    assertCurves(doc.concurrency!, doc.runs, ["memory", "file"], [1048576], 2);
    // the profile the solver reads carries them, beside the matrix's own figures
    const profile = loadProfile(JSON.parse(JSON.stringify(doc)), "contention.json");
    for (const label of ["memory", "file"]) {
      const tier = profile.tiers[label]!;
      assert.equal(tier.measured_with, "contention-alone");
      const [curve, ...more] = tier.concurrency!;
      assert.equal(more.length, 0);
      assert.equal(curve!.basis, "measured");
      assert.equal(curve!.bs, 1048576);
      assert.deepEqual(curve!.points.map((p) => p.processes), [1, 2]);
      const measured = doc.concurrency!.tiers.find((t) => t.label === label)!.curves[0]!.points;
      for (const [i, p] of curve!.points.entries()) {
        const { runs: _, ...figures } = measured[i]!;
        assert.deepEqual(p, figures);
      }
    }
    // the pair once more, every read and write job at the curves' largest count, after the
    // pair with one job each; each member against its own reading and writing at one job
    const [at, ...others] = doc.contention!.together_at!;
    assert.equal(others.length, 0);
    assert.equal(at!.key, "memory+file");
    assert.equal(at!.processes, 2);
    assert.equal(doc.contention!.together!.length, 1);
    for (const label of ["memory", "file"]) {
      for (const direction of ["read", "write"]) {
        const run = doc.runs.find((r) =>
          r.name === `${label} ${direction} memory+file 2p read+write`
        );
        assert.ok(run, `no ${label} ${direction} run of the pair at 2 processes`);
        assert.equal(run.options.numjobs, 2);
      }
      const m = at!.members[label]!;
      assert.ok(m.read_bw_bytes >= 0 && m.write_bw_bytes >= 0, JSON.stringify(m));
      // the profile keeps them, looked up in either order
      const other = label === "memory" ? "file" : "memory";
      assert.deepEqual(togetherAtOf(profile, label, other), {
        processes: 2,
        read_bw_bytes: m.read_bw_bytes,
        write_bw_bytes: m.write_bw_bytes,
      });
    }
  });
});

Deno.test("planConcurrency() refuses bad lists naming the option", () => {
  const refused = (o: Parameters<typeof planConcurrency>[0], field: string) =>
    assert.throws(
      () => planConcurrency(o),
      (e) => e instanceof ConfigError && e.message.startsWith(`--${field}`),
    );
  refused({ processes: "2,1" }, "processes");
  refused({ processes: "0,1" }, "processes");
  refused({ processes: "" }, "processes");
  refused({ ranksPerNode: "x" }, "ranks-per-node");
  refused({ bs: "1m,1m" }, "concurrency-bs");
  refused({ bs: "big" }, "concurrency-bs");
  assert.deepEqual(planConcurrency({}).processes, [1, 2, 3, 4]);
});

Deno.test("shorterTime() keeps each point at most the curves' limit", () => {
  assert.equal(shorterTime(undefined, "2"), "2");
  assert.equal(shorterTime("3", "2"), "2");
  assert.equal(shorterTime("0.5", "2"), "0.5");
  assert.equal(shorterTime("0", "0.5"), "0");
});
