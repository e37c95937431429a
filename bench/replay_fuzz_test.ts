/**
 * Property-based test of replay's plan check (fast-check): a plan mutated at
 * a random path either gives what replay derives before any I/O or a
 * ConfigError naming the field. Rerun a failure with `TIERBENCH_FUZZ_SEED=<seed>`.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { ConfigError } from "../core/errors.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { checkPlanDocument } from "../solver/plan_check.ts";
import { makePlan } from "../solver/planner.ts";
import { loadProfile } from "../solver/profile.ts";
import { type Json, mutate, mutation, SEED } from "../tests/_fuzz.ts";
import { minScaleOf, optionsOfPlan, replayPaths, setupOfPlan } from "./replay.ts";

const ROOT = new URL("../results/", import.meta.url);
const POLARIS: Json = JSON.parse(
  Deno.readTextFileSync(new URL("reference/polaris-4gpu-nvme-lustre.json", ROOT)),
);

Deno.test("replay's plan check on a plan mutated at a random path: what replay reads works, or a ConfigError naming the field", async () => {
  const profile = loadProfile(POLARIS, "polaris.json");
  const plan = JSON.parse(JSON.stringify(
    await makePlan(profile, resolveSetup({ model: "7b" }), { hostCacheBytes: 16 * 2 ** 30 }),
  ));
  fc.assert(
    fc.property(fc.array(mutation, { minLength: 1, maxLength: 2 }), (ms) => {
      let doc = plan;
      const wheres: string[] = [];
      for (const m of ms) {
        const out = mutate(doc, m);
        doc = out.doc;
        wheres.push(out.where);
      }
      const where = wheres.join(", ");
      try {
        const checked = checkPlanDocument(doc, "plan.json");
        // what replay derives before any I/O
        optionsOfPlan(checked);
        minScaleOf(checked);
        replayPaths(checked, 0.01, [], undefined);
        setupOfPlan(checked, 0.01, 1, 0, "plan.json");
      } catch (e) {
        if (!(e instanceof ConfigError)) {
          throw new Error(`${where}: not a ConfigError: ${(e as Error)?.name}: ${e}`, { cause: e });
        }
        assert.ok(!e.message.includes("\n"), `${where}: ${e.message}`);
        // a field of the plan is named as the plan's, never as an option the user did not type
        assert.match(e.message, /^plan\.json: /, `${where}: ${e.message}`);
      }
    }),
    { seed: SEED, numRuns: 400 },
  );
});
