/**
 * Property-based test of resolveSetup() (fast-check): whatever the workload
 * and plan options say, finite bounded figures or a ConfigError naming the
 * flag. Rerun a failure with `TIERBENCH_FUZZ_SEED=<seed>`.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { configErrorOf, numberishText, optional, params } from "../tests/_fuzz.ts";
import { resolveSetup, subgroupSizes } from "./setup.ts";

Deno.test("resolveSetup() (workload and plan options) gives finite, bounded figures or a ConfigError naming the flag", () => {
  const raw = fc.record({
    model: optional(fc.oneof(fc.constantFrom("7b", "70b", "175b", "280b"), fc.string())),
    parameters: optional(numberishText),
    scale: optional(numberishText),
    iterations: optional(numberishText),
    warmup: optional(numberishText),
    ranksPerNode: optional(numberishText),
    tensorParallel: optional(numberishText),
    dataParallel: optional(numberishText),
    microBatch: optional(numberishText),
    subgroupSize: optional(numberishText),
    bytesPerState: optional(numberishText),
    adamRate: optional(numberishText),
    gpuTflops: optional(numberishText),
  });
  fc.assert(
    fc.property(raw, (r) => {
      let setup;
      const e = configErrorOf(() => (setup = resolveSetup(r)));
      if (e) return;
      const s = setup!;
      for (const [k, v] of Object.entries(s)) {
        if (typeof v === "number") assert.ok(Number.isFinite(v) && v >= 0, `${k} ${v}`);
      }
      for (
        const k of [
          "iterations",
          "warmupIterations",
          "ranksPerNode",
          "dataParallel",
          "tensorParallel",
          "microBatch",
          "subgroupElements",
        ] as const
      ) {
        assert.ok(Number.isSafeInteger(s[k]), `${k} ${s[k]}`);
      }
      assert.ok(s.parameters <= Number.MAX_SAFE_INTEGER, `parameters ${s.parameters}`);
      // the solver and the workloads hold one entry per subgroup of a rank
      assert.ok(subgroupSizes(s).length <= 100_000, "subgroups per rank");
      assert.ok(s.scale > 0 && s.scale <= 1);
      // rates the think times divide by: a denormal made them Infinity
      assert.ok(s.adamParamsPerSec >= 1 && s.gpuTflops >= 0.001, "rates");
    }),
    params,
  );
});
