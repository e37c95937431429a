import assert from "node:assert/strict";
import { evalWithJobFlags, repoUrl } from "../tests/_v8.ts";

/**
 * In a child with the command line's V8 flags, warms the null engine up as a
 * job Worker does and prints which tier its loop's code is in: the window's
 * call enters that code and stays in it, as V8 does not move a running
 * Maglev frame up to TurboFan.
 */
const CODE = `
  import { warmUp } from ${repoUrl("engines/types.ts")};
  import { NoopEngine } from ${repoUrl("engines/noop.ts")};
  import { readPlan } from ${repoUrl("tests/_drive_engine.ts")};
  const plan = readPlan("noop");
  const engine = new NoopEngine();
  warmUp(plan, engine);
  console.log(eval("%ActiveTierIsTurbofan(engine.run)") ? "turbofan"
    : eval("%ActiveTierIsMaglev(engine.run)") ? "maglev" : "other");`;

Deno.test("the warm-up leaves the null engine's loop compiled by TurboFan, in each of four starts", async () => {
  // With ten calls of the loop it was Maglev's code in 18 of 22 starts (marked for TurboFan too
  // late), and the window ran in it at twice the CPU per I/O.
  const tiers = [];
  for (let i = 0; i < 4; i++) {
    tiers.push((await evalWithJobFlags(CODE, ["--allow-natives-syntax"])).trim());
  }
  assert.deepEqual(tiers, ["turbofan", "turbofan", "turbofan", "turbofan"]);
});
