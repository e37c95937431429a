/**
 * Property-based tests of the option parsers the CLI feeds (fast-check):
 * whatever text arrives, the answer is a fully checked value or a
 * {@linkcode ConfigError} naming the field (and the allowed values where there
 * is a fixed set) — never another error, never a value out of range.
 *
 * The seed is printed; rerun a failure with `TIERBENCH_FUZZ_SEED=<seed>`.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { ENGINES, FILE_LAYOUTS, parseJobOptions, parseTierSpec, RW_MODES } from "./config.ts";
import {
  configErrorOf,
  numberishText,
  oneOfOrNoise,
  optional,
  params,
  tierText,
} from "../tests/_fuzz.ts";
import { parseDuration, parseSize } from "./units.ts";

Deno.test("parseSize() and parseDuration() give a finite non-negative number or undefined", () => {
  fc.assert(
    fc.property(numberishText, (text) => {
      const size = parseSize(text);
      if (size !== undefined) assert.ok(Number.isSafeInteger(size) && size >= 0, text);
      const ms = parseDuration(text);
      if (ms !== undefined) assert.ok(Number.isFinite(ms) && ms >= 0, `${text} → ${ms}`);
    }),
    params,
  );
});

Deno.test("parseTierSpec() gives a known kind or a ConfigError listing the tier forms", () => {
  fc.assert(
    fc.property(tierText, (text) => {
      let spec;
      const e = configErrorOf(() => (spec = parseTierSpec(text)));
      if (e) {
        assert.equal(e.field, "tier");
        assert.match(e.message, /allowed: null:, memory:\[DIR\]/);
        return;
      }
      assert.ok(spec);
    }),
    params,
  );
});

Deno.test("parseJobOptions() gives a job whose every value is in range, or a ConfigError naming the field", () => {
  const raw = fc.record({
    tier: optional(tierText),
    rw: optional(oneOfOrNoise(RW_MODES)),
    rwmixread: optional(numberishText),
    bs: optional(numberishText),
    size: optional(numberishText),
    ioSize: optional(numberishText),
    runtime: optional(numberishText),
    ramp: optional(numberishText),
    iodepth: optional(numberishText),
    numjobs: optional(numberishText),
    direct: optional(fc.boolean()),
    engine: optional(oneOfOrNoise(ENGINES)),
    seed: optional(numberishText),
    logAvgMsec: optional(numberishText),
    nrfiles: optional(numberishText),
    fileLayout: optional(oneOfOrNoise(FILE_LAYOUTS)),
    endFsync: optional(fc.boolean()),
    objectSize: optional(numberishText),
    partSize: optional(numberishText),
    multipartThreshold: optional(numberishText),
    filename: optional(fc.constantFrom("/x/y.dat", "rel.dat")),
    allowDevice: optional(fc.boolean()),
  });
  fc.assert(
    fc.property(raw, (r) => {
      let job;
      const e = configErrorOf(() => (job = parseJobOptions(r)));
      if (e) {
        const sets: Record<string, readonly string[]> = {
          rw: RW_MODES,
          engine: ENGINES,
          "file-layout": FILE_LAYOUTS,
        };
        const set = sets[e.field];
        if (set && e.message.includes("unknown value")) {
          assert.ok(e.message.includes(`allowed: ${set.join(", ")}`), e.message);
        }
        return;
      }
      const j = job!;
      const whole = (n: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
        Number.isSafeInteger(n) && n >= min && n <= max;
      assert.ok(whole(j.bs, 1, 256 * 1024 ** 2), `bs ${j.bs}`);
      assert.ok(whole(j.size, j.bs) && j.size % j.bs === 0, `size ${j.size}`);
      assert.ok(whole(j.ioSize, j.bs) && j.ioSize % j.bs === 0, `io size ${j.ioSize}`);
      assert.ok(whole(j.iodepth, 1, 4096) && whole(j.numjobs, 1, 1024), "iodepth, numjobs");
      assert.ok(whole(j.rwmixread, 0, 100) && whole(j.nrfiles, 1, 4096), "rwmixread, nrfiles");
      assert.ok(whole(j.seed, 0, 2 ** 32 - 1) && whole(j.logAvgMsec, 10), "seed, log-avg");
      assert.ok(Number.isFinite(j.rampMs) && j.rampMs >= 0, `ramp ${j.rampMs}`);
      if (j.runtimeMs !== undefined) {
        assert.ok(Number.isFinite(j.runtimeMs) && j.runtimeMs > 0, `runtime ${j.runtimeMs}`);
      }
      assert.ok((RW_MODES as readonly string[]).includes(j.rw));
      assert.ok((ENGINES as readonly string[]).includes(j.engine));
    }),
    params,
  );
});
