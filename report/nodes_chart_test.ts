import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, withTempDir } from "../tests/_helpers.ts";
import { cliOk } from "../tests/_report_fixtures.ts";
import type { PlanDocument } from "../schema/plan.ts";
import { nodesChart } from "./_charts.ts";

const SCALING = join(ROOT, "tests", "testdata", "profiles", "scaling-pfs.json");

Deno.test("a plan with a --nodes sweep gets a chart of update time and remote share by node count", async () => {
  await withTempDir(async (dir) => {
    const plan = join(dir, "plan.json");
    await cliOk(["plan", "--profile", SCALING, "--nodes", "1,2,4,8", "--output", plan]);
    const doc = JSON.parse(await Deno.readTextFile(plan)) as PlanDocument;
    const chart = nodesChart([{ label: "plan.json", plan: doc }])!;
    const rows = (chart.spec.data as { values: Record<string, unknown>[] }).values;
    const remote = rows.filter((r) => String(r.panel).includes("remote tier"));
    assert.deepEqual(remote.map((r) => r.nodes), [1, 2, 4, 8]);
    for (const [i, p] of doc.nodes_sweep!.entries()) {
      assert.equal(remote[i]!.value, Math.round(p.fraction.pfs! * 1000) / 10);
    }
    const update = rows.filter((r) => String(r.panel).includes("update phase"));
    assert.equal(update.length, 4 * 3); // ZeRO-Infinity, plan, MLP-Offload at each count
    const out = join(dir, "rep");
    await cliOk(["report", plan, "--output", out]);
    const html = await Deno.readTextFile(join(out, "report.html"));
    assert.ok(html.includes('data-chart="nodes"'));
    // a plan without a sweep has no such chart
    const { nodes_sweep: _, ...single } = doc;
    assert.equal(nodesChart([{ label: "p", plan: single as PlanDocument }]), undefined);
  });
});
