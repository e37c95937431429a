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
import { ConfigError } from "./errors.ts";
import { parseDuration, parseSize } from "./units.ts";
import { resolveSetup, subgroupSizes } from "../workloads/setup.ts";

const SEED = Number(Deno.env.get("TIERBENCH_FUZZ_SEED") ?? Date.now() % 2 ** 31);
console.log(`config_fuzz_test: fast-check seed ${SEED} (TIERBENCH_FUZZ_SEED=${SEED} to rerun)`);
const RUNS = 400;

/** Text a user might type for a number or a size: near misses, extremes and noise. */
export const numberishText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "0",
    "-1",
    "1",
    "3k",
    "4k",
    "1m",
    "1e99",
    "1e9",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x10",
    "1_000",
    "1.5",
    "0.5",
    "4096",
    "9".repeat(400),
    "1".repeat(20) + "k",
    "999999999h",
    "1 m",
    "1mb",
    "1kib",
    "true",
    "null",
    "{}",
    "-0",
    "+4",
    "4k ",
  ),
  fc.integer({ min: -1e6, max: 1e12 }).map(String),
  fc.double().map(String),
  fc.tuple(fc.nat(100000), fc.constantFrom("", "k", "m", "g", "t", "K", "ms", "s", "h", "x"))
    .map(([n, u]) => `${n}${u}`),
  fc.string({ maxLength: 12 }),
);

/** Text for `--tier`: the documented forms, near misses and noise. */
export const tierText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "null:",
    "memory:",
    "file:",
    "file:/data",
    "pfs:/mnt/x",
    "s3://",
    "s3:///x",
    "s3://b/p",
    "s3:b",
    "nvme:/x",
    ":",
    "",
    "file",
    "FILE:/x",
    "null:/x",
  ),
  fc.tuple(fc.constantFrom("file:", "memory:", "pfs:", "s3://", "null:"), fc.string()).map((
    [k, p],
  ) => k + p),
  fc.string(),
);

/** Mostly absent (the default), so most cases get past the first field to the later checks. */
const optional = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> =>
  fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: a, weight: 1 });
const oneOfOrNoise = (values: readonly string[]) =>
  fc.oneof(fc.constantFrom(...values), fc.string({ maxLength: 10 }), numberishText);

/** A field name as ConfigError spells it: `--flag: ` at the start. */
function assertNamesField(e: ConfigError): void {
  assert.match(e.message, /^--[a-z][a-z0-9-]*: \S/, e.message);
  assert.equal(e.message.includes("\n"), false, e.message);
  assert.equal(e.message.startsWith(`--${e.field}: `), true, e.message);
}

/** Runs `fn` and says whether it threw a ConfigError (which it checks); rethrows anything else. */
function configErrorOf(fn: () => unknown): ConfigError | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (!(e instanceof ConfigError)) {
      throw new Error(`not a ConfigError: ${e instanceof Error ? e.name : typeof e}: ${e}`, {
        cause: e,
      });
    }
    assertNamesField(e);
    return e;
  }
}

const params = { seed: SEED, numRuns: RUNS };

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
