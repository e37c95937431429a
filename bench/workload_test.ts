import assert from "node:assert/strict";
import { join } from "node:path";
import { parseTierSpec } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { scratchLeft, tempMount, withTempDir } from "../tests/_helpers.ts";
import type { WorkloadDefinition } from "../workloads/common.ts";
import { bytesByPath, type Op, ProgramBuilder, type WorkloadProgram } from "../workloads/ops.ts";
import { MAX_PROGRAM_OPS, pathsOf, runWorkload } from "./workload.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { mlpOffload } from "../workloads/mlp_offload.ts";
import { zeroInfinity } from "../workloads/zero_infinity.ts";
import { needing } from "../tests/_requirements.ts";
import { exclusiveHolds } from "../tests/_lock_holds.ts";

const setup = resolveSetup({ model: "7b", scale: 2e-4, iterations: 1, warmup: 1, ranksPerNode: 2 });

/** Bytes per path and direction of one iteration of a program, summed over its ranks. */
function iterationBytes(program: WorkloadProgram, iteration: number): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const r of program.ranks) {
    for (const [k, v] of Object.entries(bytesByPath(r.ops, (op) => op.iteration === iteration))) {
      sum[k] = (sum[k] ?? 0) + v;
    }
  }
  return sum;
}

Deno.test("pathsOf() names memory host, files local, local2, and pfs remote", () => {
  const { paths, byName } = pathsOf(
    ["memory:/dev/shm", "file:/a", "file:/b", "pfs:/c"].map(parseTierSpec),
  );
  assert.deepEqual(paths, { host: "host", local: ["local", "local2"], remote: "remote" });
  assert.equal(byName.get("local2")?.path, "/b");
  assert.throws(() => pathsOf(["pfs:/a", "s3://b"].map(parseTierSpec)), ConfigError);
  assert.throws(() => pathsOf(["null:"].map(parseTierSpec)), /null: has no place/);
});

Deno.test("runWorkload() runs zero-infinity on a file tier: bytes as the program says, every dependency kept, nothing left", async () => {
  await withTempDir(async (dir) => {
    const { doc, error } = await runWorkload(zeroInfinity, setup, [parseTierSpec(`file:${dir}`)]);
    assert.equal(error, undefined);
    assert.equal(doc.status, "ok", doc.error);
    const w = doc.workload!;
    assert.equal(w.paths[0]!.direct, true);
    const program = zeroInfinity.build(setup, { local: ["local"] });
    assert.deepEqual(w.summary!.bytes, iterationBytes(program, 1));
    assert.ok(w.summary!.update_s! > 0 && w.summary!.iteration_s >= w.summary!.update_s!);
    assert.equal(w.iterations.length, 2);
    assert.equal(w.iterations[0]!.warmup, true);
    assert.equal(w.ranks.length, 2);
    // the timeline (last iteration) keeps stream order and every `after`
    const spans = new Map<string, { start: number; end: number }>();
    for (const [rank, stream, , label, , start, end] of w.timeline.spans) {
      spans.set(`${rank}|${stream}|${label}`, { start, end });
    }
    const eps = 0.002;
    let checked = 0;
    for (const r of program.ranks) {
      const ops = r.ops.filter((op) => op.iteration === 1 && op.kind !== "barrier");
      const at = (op: Op) => spans.get(`${r.rank}|${op.stream}|${op.label}`)!;
      const lastInStream = new Map<string, Op>();
      for (const op of ops) {
        const me = at(op);
        assert.ok(me, `no span for ${op.stream} ${op.label}`);
        const prev = lastInStream.get(op.stream);
        if (prev) assert.ok(me.start + eps >= at(prev).end, `${op.label} overlapped ${prev.label}`);
        lastInStream.set(op.stream, op);
        for (const a of op.after) {
          const dep = r.ops[a]!;
          if (dep.iteration !== 1 || dep.kind === "barrier") continue;
          assert.ok(me.start + eps >= at(dep).end, `${op.label} started before ${dep.label} ended`);
          checked++;
        }
      }
    }
    assert.ok(checked > 100);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("runWorkload() runs mlp-offload: no two ranks hold a node-wide lock at once, 4-slice swaps read back whole", async () => {
  await withTempDir(async (dir) => {
    const local = join(dir, "local"), remote = join(dir, "remote");
    await Deno.mkdir(local);
    await Deno.mkdir(remote);
    const s = resolveSetup({ model: "7b", scale: 2e-4, iterations: 1, warmup: 1, ranksPerNode: 2 });
    const specs = [parseTierSpec(`file:${local}`), parseTierSpec(`pfs:${remote}`)];
    const { doc, error } = await runWorkload(mlpOffload, s, specs, { locks: "both" });
    assert.equal(error, undefined, String(error));
    assert.equal(doc.status, "ok", doc.error);
    const w = doc.workload!;
    assert.deepEqual(w.paths.map((p) => p.threads), [4, 4]);
    const program = mlpOffload.build(s, { local: ["local"], remote: "remote" }, { locks: "both" });
    assert.deepEqual(w.summary!.bytes, iterationBytes(program, 1));
    const holds = exclusiveHolds(w.timeline);
    assert.ok(holds.length >= 4 * 17, `${holds.length} holds`);
    assert.deepEqual(await scratchLeft(local), []);
    assert.deepEqual(await scratchLeft(remote), []);
  });
});

Deno.test("runWorkload() holds a node-wide limit of one reader per path", async () => {
  // every rank reads the same-sized objects at once; with readers: 1 no two reads overlap
  const def: WorkloadDefinition = {
    name: "one-reader",
    summary: "",
    needs: ["host"],
    build(s, paths) {
      const ranks = Array.from({ length: s.ranksPerNode }, (_, rank) => {
        const b = new ProgramBuilder(rank);
        const open = b.add({
          kind: "barrier",
          stream: "compute",
          iteration: 0,
          phase: "read",
          label: "go",
        });
        for (let i = 0; i < 4; i++) {
          b.initial(paths.host!, `o${i}`, 1 << 20);
          b.add({
            kind: "read",
            stream: "host:read",
            iteration: 0,
            phase: "read",
            path: paths.host!,
            object: `o${i}`,
            bytes: 1 << 20,
            label: `o${i}`,
            after: [open],
          });
        }
        return b.build();
      });
      return {
        workload: "one-reader",
        paths: [{ name: paths.host!, role: "host", bs: 1 << 18, iodepth: 4, readers: 1 }],
        ranks,
        warmupIterations: 0,
        iterations: 1,
        derived: {},
        notes: [],
      };
    },
  };
  const { doc } = await runWorkload(
    def,
    resolveSetup({ ranksPerNode: 4, iterations: 1, warmup: 0 }),
    [
      parseTierSpec("memory:/dev/shm"),
    ],
  );
  assert.equal(doc.status, "ok", doc.error);
  const path = doc.workload!.paths[0]!;
  assert.equal(path.peak_readers, 1);
  const phase = doc.workload!.iterations[0]!.phases.read!;
  assert.equal(phase.io["host:read"]!.ops, 16);
  // other test processes may work in /dev/shm too: look for this run's directory only
  assert.deepEqual((await scratchLeft("/dev/shm")).filter((d) => d.includes(doc.run_id)), []);
});

Deno.test(needing(["root"], {
  name:
    "runWorkload() fails with ENOSPC in one line, names the rank, and leaves nothing on a full tier",
  async fn() {
    // Room for the bytes (the run checks them first), not for the files: the inodes run out.
    await using mnt = await tempMount("tmpfs", "size=256m,nr_inodes=12");
    const { doc, error } = await runWorkload(
      zeroInfinity,
      resolveSetup({ model: "7b", scale: 1e-3, iterations: 1, warmup: 0, ranksPerNode: 2 }),
      [parseTierSpec(`file:${mnt.path}`)],
    );
    assert.equal(error, undefined);
    assert.equal(doc.status, "failed");
    assert.match(doc.error!, /^rank \d: .*ENOSPC/);
    assert.ok(!doc.error!.includes("\n"));
    assert.deepEqual(await scratchLeft(mnt.path), []);
  },
}));

Deno.test("runWorkload() refuses a workload whose paths the tiers do not give, before touching them", async () => {
  await assert.rejects(
    runWorkload(zeroInfinity, setup, [parseTierSpec("memory:/dev/shm")]),
    (e: unknown) => e instanceof ConfigError && /needs a local path/.test(e.message),
  );
});

Deno.test("runWorkload() refuses, before touching a tier, iterations whose program would not fit in memory, naming --iterations and the most it allows", async () => {
  await withTempDir(async (dir) => {
    const setup = resolveSetup({ model: "7b", iterations: 736104021086 });
    const err = await runWorkload(zeroInfinity, setup, [parseTierSpec(`file:${dir}/missing`)])
      .then(() => undefined, (x: unknown) => x);
    assert.ok(err instanceof ConfigError, String(err));
    assert.equal(err.field, "iterations");
    const most = Number(/at most (\d+) here/.exec(err.message)?.[1]);
    assert.ok(most >= 1, err.message);
    // the most it names fits, and one more does not
    const fits = resolveSetup({ model: "7b", iterations: most });
    const once = zeroInfinity.build(
      { ...fits, warmupIterations: 0, iterations: 1 },
      pathsOf([
        parseTierSpec(`file:${dir}`),
      ]).paths,
    );
    const perIteration = once.ranks.reduce((n, r) => n + r.ops.length, 0);
    assert.ok(perIteration * (most + fits.warmupIterations) <= MAX_PROGRAM_OPS);
    assert.ok(perIteration * (most + 1 + fits.warmupIterations) > MAX_PROGRAM_OPS);
  });
});

Deno.test("runWorkload() calls beforeStart once, after every rank laid out and before any I/O is measured", async () => {
  await withTempDir(async (dir) => {
    let calls = 0, hookDone = false, movedBefore = 0, ticks = 0;
    let laidOut: string[] = [];
    const { doc, error } = await runWorkload(
      zeroInfinity,
      setup,
      [parseTierSpec(`file:${dir}`)],
      {},
      {
        scratchId: "hooktest-r1",
        onProgress: (p) => {
          if (hookDone) return;
          ticks++;
          movedBefore += p.bytesRead + p.bytesWritten;
        },
        beforeStart: async () => {
          calls++;
          const [scratch] = await scratchLeft(dir);
          assert.match(scratch ?? "", /hooktest-r1/);
          laidOut = [...Deno.readDirSync(join(dir, scratch!))].filter((e) => e.isDirectory)
            .map((e) => e.name).sort();
          // long enough for the progress line to look twice: nothing may move meanwhile
          await new Promise((r) => setTimeout(r, 450));
          hookDone = true;
        },
      },
    );
    assert.equal(error, undefined);
    assert.equal(doc.status, "ok", doc.error);
    assert.equal(calls, 1);
    assert.deepEqual(laidOut, ["r0", "r1"]);
    assert.ok(ticks >= 1);
    assert.equal(movedBefore, 0);
    assert.ok(doc.workload!.summary!.iteration_s > 0);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("runWorkload() with a beforeStart that rejects starts no rank, fails with its error and leaves nothing", async () => {
  await withTempDir(async (dir) => {
    const cause = new Error("rank 2 on elsewhere was lost during the start");
    const { doc, error } = await runWorkload(
      zeroInfinity,
      setup,
      [parseTierSpec(`file:${dir}`)],
      {},
      { beforeStart: () => Promise.reject(cause) },
    );
    assert.equal(error, cause);
    assert.equal(doc.status, "failed");
    assert.equal(doc.error, cause.message);
    assert.equal(doc.workload!.summary, null);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});
