import assert from "node:assert/strict";
import { join } from "node:path";
import { parseTierSpec } from "../core/config.ts";
import { ROOT, runCli, scratchLeft, withTempDir } from "../tests/_helpers.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { makePlan } from "../solver/planner.ts";
import { readProfile } from "../solver/profile.ts";
import { minScaleOf, optionsOfPlan, replayPlan, setupOfPlan } from "./replay.ts";

const POLARIS = join(ROOT, "results", "reference", "polaris-4gpu-nvme-lustre.json");

async function polarisPlan() {
  return await makePlan(
    await readProfile(POLARIS),
    resolveSetup({ model: "7b", ranksPerNode: 2 }),
    {
      hostCacheBytes: 4 * 2 ** 30,
    },
  );
}

Deno.test("optionsOfPlan() and setupOfPlan() turn a plan back into mlp-offload's split, cache, limits and setup", async () => {
  const plan = await polarisPlan();
  const o = optionsOfPlan(plan);
  const [local, remote] = plan.placement.paths;
  assert.equal(o.remoteRatio, remote!.subgroups / (local!.subgroups + remote!.subgroups));
  assert.equal(o.cacheSubgroups, local!.cache_subgroups);
  assert.equal(o.remoteCacheSubgroups, remote!.cache_subgroups);
  assert.equal(o.readers, 1);
  assert.equal(o.locks, "none");
  assert.equal(o.bs, local!.bs);
  // the replay swaps the gradients exactly when the plan does
  assert.equal(
    o.swapGradients === true,
    plan.predictions.plan.host_memory?.gradients === "swapped",
  );
  const s = setupOfPlan(plan, 0.01, 2, 0);
  assert.equal(s.model.name, "7b");
  assert.equal(s.ranksPerNode, 2);
  assert.equal(s.scale, 0.01);
  assert.equal(s.subgroupElements, 1e8);
  // 1 MiB × 8 in flight over 4 B × 1e8 elements
  assert.equal(minScaleOf(plan), (8 << 20) / 4e8);
});

Deno.test("replayPlan() runs the plan on real tiers and sets the measured update phase beside the prediction", async () => {
  await withTempDir(async (dir) => {
    const local = join(dir, "nvme");
    const remote = join(dir, "lustre");
    await Deno.mkdir(local);
    await Deno.mkdir(remote);
    const plan = await polarisPlan();
    const { doc, error } = await replayPlan(plan, [
      parseTierSpec(`file:${local}`),
      parseTierSpec(`pfs:${remote}`),
    ], {
      scale: 1e-4,
      iterations: 1,
      // the plan's bytes are the steady state's: the first pass finds nothing cached
      warmup: 1,
    });
    assert.equal(error, undefined);
    assert.equal(doc.status, "ok", doc.error);
    const r = doc.replay!;
    assert.equal(r.predicted.update_s_scaled, plan.predictions.plan.update_s * 1e-4);
    assert.ok(r.measured.update_s! > 0);
    assert.equal(r.error, r.measured.update_s! / r.predicted.update_s_scaled - 1);
    // path by path: the bytes the plan moves (× scale) are the bytes the run moved (within the
    // 10 % that rounding each object to 4 KiB at this tiny scale and one pass against the mean
    // of a pass each way make), and each
    // path was busy for some of the phase, against its predicted busy time
    assert.deepEqual(r.paths.map((p) => p.path), ["local", "remote"]);
    for (const p of r.paths) {
      const want = plan.predictions.plan.bytes;
      assert.equal(p.predicted.read_bytes, want[`${p.path}:read`]! * 1e-4);
      const rel = (a: number, b: number) => Math.abs(a / b - 1);
      assert.ok(rel(p.measured.read_bytes, p.predicted.read_bytes) < 0.1, JSON.stringify(p));
      assert.ok(rel(p.measured.write_bytes, p.predicted.write_bytes) < 0.1, JSON.stringify(p));
      assert.equal(p.predicted.busy_s, plan.predictions.plan.path_s![p.path]! * 1e-4);
      assert.ok(
        p.measured.busy_s > 0 && p.measured.busy_s <= doc.workload!.iterations.at(-1)!.iteration_s,
      );
      assert.equal(p.error, p.measured.busy_s / p.predicted.busy_s! - 1);
    }
    const bytes = doc.workload!.summary!.bytes;
    assert.ok(bytes["local:read"]! > 0 && bytes["remote:read"]! > 0, JSON.stringify(bytes));
    // the plan's simulated pass the same way as the measured one (parity), × scale, beside it:
    // the same ops on the same ranks and streams
    const sim = r.simulated_timeline!, measured = doc.workload!.timeline;
    assert.equal(sim.iteration % 2, measured.iteration % 2);
    const ops = (spans: readonly (readonly (string | number)[])[]) =>
      spans.filter((x) => x[2] === "read" || x[2] === "write").map((x) => `${x[0]} ${x[1]} ${x[3]}`)
        .sort();
    assert.deepEqual(ops(sim.spans), ops(measured.spans));
    const full = plan.predictions.plan.timeline!.spans.filter((x) => x[0] === sim.iteration);
    assert.equal(sim.spans.at(-1)![6], Math.round(full.at(-1)![7] * 1e-4 * 1000) / 1000);
    assert.deepEqual(await scratchLeft(remote), []);
  });
});

Deno.test("replayPlan() with activations runs the activation plan and every layer out as ssdtrain, phase by phase", async () => {
  await withTempDir(async (dir) => {
    const plan = await polarisPlan();
    const a = plan.activations!;
    const [local, remote] = [join(dir, "nvme"), join(dir, "lustre")];
    await Deno.mkdir(local);
    await Deno.mkdir(remote);
    const tiers = [parseTierSpec(`file:${local}`), parseTierSpec(`pfs:${remote}`)];
    const { doc, error } = await replayPlan(plan, tiers, {
      scale: 1e-4,
      iterations: 1,
      warmup: 0,
      activations: true,
    });
    assert.equal(error, undefined);
    assert.equal(doc.status, "ok", doc.error);
    const r = doc.replay!.activations!;
    assert.equal(r.layers, a.layers);
    assert.equal(r.plan.offloaded, a.offloaded);
    assert.equal(r.plan.prefetch, a.prefetch);
    assert.equal(r.all.offloaded, a.layers - 1);
    assert.equal(r.all.prefetch, a.prefetch_all);
    for (const [run, want] of [[r.plan, a.phases!.plan], [r.all, a.phases!.all]] as const) {
      assert.equal(run.status, "ok");
      assert.equal(run.predicted.forward_s, want.forward_s * 1e-4);
      assert.equal(run.predicted.backward_s, want.backward_s * 1e-4);
      assert.ok(run.measured.forward_s! > 0 && run.measured.backward_s! > 0);
      assert.equal(run.error.forward, run.measured.forward_s! / run.predicted.forward_s - 1);
    }
    assert.deepEqual(await scratchLeft(local), []);
    assert.deepEqual(await scratchLeft(remote), []);
  });
});

Deno.test("tierbench replay refuses a file that is not a plan, in one line, exit 2", async () => {
  await withTempDir(async (dir) => {
    const r = await runCli(["replay", POLARIS, "--tiers", `file:${dir}`]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^tierbench: \S+\.json: not a tierbench\/plan@1 document/);
  });
});
