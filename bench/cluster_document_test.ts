import assert from "node:assert/strict";
import { detectLaunch, joinGroup } from "../cluster/mod.ts";
import { clusterSection } from "./cluster_document.ts";

Deno.test("clusterSection(): a coordination list none of whose waits ended is absent, not empty; the waits that ended are kept", async () => {
  await using group = await joinGroup(detectLaunch({}), { version: "1", timeoutMs: 1000 });
  const section = (barrier_ms: number[], gather_ms: number[]) =>
    clusterSection(group, [], { processes: [], runs: [], coordination: { barrier_ms, gather_ms } })
      .coordination;
  // stopped before the start barrier released: nothing measured
  assert.deepEqual(section([], []), {});
  // lost after the barrier, before the gather
  assert.deepEqual(section([1.5], []), { barrier_ms: [1.5] });
  assert.deepEqual(section([1.5, 0.25], [3]), { barrier_ms: [1.5, 0.25], gather_ms: [3] });
  assert.ok(!("barrier_ms" in section([], [2])));
});
