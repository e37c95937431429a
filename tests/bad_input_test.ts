/**
 * Bad input on the command line, property-based (fast-check): `run`,
 * `workload`, `contention`, `plan` and `clean` with random option values
 * (near-miss sizes such as "3k", "-1", "1e99", "NaN", random text), unknown
 * flags, flags without values and stray arguments. Each case spawns the CLI
 * in a fresh temporary directory given as its cwd; the properties:
 *
 * - exit 2 (or 0 for `plan`/`clean` when the values happen to be valid),
 * - one line on stderr, `tierbench: …`, with no stack trace,
 * - the line names a flag (and lists the allowed values for a flag with a
 *   fixed set when it is the one at fault),
 * - nothing is left behind: no scratch directory of the child in the temp
 *   dir, /tmp or /dev/shm.
 *
 * Tiers name a missing directory under the temp dir, so input that turns out
 * valid ends in a usage error at the tier (exit 2) instead of a long run: the
 * option parsers run before any tier is touched, so every bad value reaches
 * its check. The CLI costs about a second a spawn, so the counts are small;
 * the library-level properties (core/config_fuzz_test.ts,
 * solver/profile_fuzz_test.ts) run hundreds of cases.
 *
 * The seed is printed; rerun a failure with `TIERBENCH_FUZZ_SEED=<seed>`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import fc from "fast-check";
import { ROOT, spawnCli } from "./_helpers.ts";

const SEED = Number(Deno.env.get("TIERBENCH_FUZZ_SEED") ?? Date.now() % 2 ** 31);
console.log(`bad_input_test: fast-check seed ${SEED} (TIERBENCH_FUZZ_SEED=${SEED} to rerun)`);

/** TIERBENCH_FUZZ_VERBOSE=1 prints every case and its answer. */
const VERBOSE = Deno.env.get("TIERBENCH_FUZZ_VERBOSE") === "1";
const PROFILE = join(ROOT, "results", "reference", "dgx-a100-8gpu-nvme-s3.json");
const SCRATCH = "tierbench-scratch-";

/** Values a user might type: near misses, extremes, wrong types and noise. */
const value: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "3k",
      "-1",
      "1e99",
      "NaN",
      "",
      "0",
      "1.5",
      "Infinity",
      "0x10",
      "true",
      "[]",
      "9".repeat(40),
      "4k ",
      "1 m",
      "-5m",
      "256m",
      "1",
      "sideways",
      "psync",
      "shared",
      "70b",
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: -1e9, max: 1e12 }).map(String) },
  { weight: 1, arbitrary: fc.double({ noNaN: false }).map(String) },
  { weight: 2, arbitrary: fc.string({ maxLength: 10 }) },
);

/** Flags beyond a command's own: unknown, misspelt, with `=`, single-dash. */
const STRAY_FLAGS = ["--frobnicate", "--block-size", "--rw=read", "-x", "--", "--tier"];

interface Command {
  /** The command line before the fuzzed options. */
  base: (dir: string) => string[];
  /** Its options that take a value. */
  flags: readonly string[];
  /** Flags with a fixed set of values. */
  enums: readonly string[];
  /** Whether an all-valid line may succeed (exit 0) instead of failing at the tier. */
  mayPass: boolean;
}

const COMMANDS: Record<string, Command> = {
  run: {
    base: (d) => ["run", "--quiet", "--tier", `file:${join(d, "missing")}`],
    flags: [
      "--rw",
      "--rwmixread",
      "--bs",
      "--size",
      "--io-size",
      "--runtime",
      "--ramp",
      "--iodepth",
      "--numjobs",
      "--engine",
      "--seed",
      "--log-avg-msec",
      "--nrfiles",
      "--file-layout",
      "--filename",
      "--object-size",
      "--part-size",
      "--multipart-threshold",
      "--timeout",
    ],
    enums: ["--rw", "--engine", "--file-layout"],
    mayPass: false,
  },
  workload: {
    base: (d) => ["workload", "zero-infinity", "--quiet", "--tiers", `file:${join(d, "missing")}`],
    flags: [
      "--model",
      "--params",
      "--scale",
      "--iterations",
      "--warmup",
      "--ranks-per-node",
      "--tp",
      "--dp",
      "--micro-batch",
      "--subgroup-size",
      "--bytes-per-state",
      "--adam-rate",
      "--gpu-tflops",
      "--bs",
      "--iodepth",
      "--readers",
      "--writers",
      "--remote-ratio",
      "--cache-subgroups",
      "--stride",
      "--prefetch",
      "--checkpoint-every",
    ],
    enums: ["--model"],
    mayPass: false,
  },
  contention: {
    base: (d) => [
      ...["contention", "--quiet", "--tiers"],
      `file:${join(d, "missing-a")},memory:${join(d, "missing-b")}`,
    ],
    flags: ["--runtime", "--ramp", "--size", "--bs", "--iodepth"],
    enums: [],
    mayPass: false,
  },
  plan: {
    base: (d) => ["plan", "--profile", PROFILE, "--output", join(d, "plan.json")],
    flags: [
      "--model",
      "--params",
      "--ranks-per-node",
      "--tp",
      "--dp",
      "--subgroup-size",
      "--bytes-per-state",
      "--adam-rate",
      "--host-cache",
      "--deepspeed-version",
      "--profile",
    ],
    enums: ["--model", "--deepspeed-version"],
    mayPass: true,
  },
  clean: {
    // relative paths only: the temp dir is the cwd, so clean never looks outside it
    base: () => ["clean"],
    flags: ["--tier"],
    enums: [],
    mayPass: true,
  },
};

/** Scratch directories in /tmp, /dev/shm and `dir` whose marker names process `pid`. */
async function scratchOf(pid: number, dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const parent of ["/tmp", "/dev/shm", dir]) {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(parent));
    } catch {
      continue;
    }
    for (const e of entries) {
      if (!e.name.startsWith(SCRATCH)) continue;
      const path = join(parent, e.name);
      if (parent === dir) {
        found.push(path); // nothing of anyone else's is in our temp dir
        continue;
      }
      try {
        const marker = JSON.parse(await Deno.readTextFile(join(path, ".tierbench-scratch")));
        if (marker?.pid === pid) found.push(path);
      } catch { /* not ours, or no marker to read */ }
    }
  }
  return found;
}

/** Runs the CLI with `dir` as its cwd (and INIT_CWD, as `deno task` sets it). */
async function spawnIn(dir: string, args: string[]) {
  const child = spawnCli(args, { cwd: dir, signal: AbortSignal.timeout(60_000) });
  const out = await child.output();
  const dec = new TextDecoder();
  return {
    pid: child.pid,
    code: out.code,
    signal: out.signal,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
  };
}

/** One fuzzed option: a flag of the command (or a stray one) and a value, or a flag alone. */
function option(cmd: Command): fc.Arbitrary<string[]> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...cmd.flags), value) },
    { weight: 1, arbitrary: fc.constantFrom(...STRAY_FLAGS).map((f) => [f]) },
    { weight: 1, arbitrary: fc.constantFrom(...cmd.flags).map((f) => [f]) }, // no value
  );
}

/** Text for `clean --tier`: relative places, malformed specs and noise (never a real directory). */
const cleanTier: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("null:", "file:", "pfs:", "s3://", "s3:///x", "nvme:x", ":", "", "file:."),
  fc.tuple(fc.constantFrom("file:", "pfs:", "memory:"), fc.stringMatching(/^[a-z0-9._-]{1,8}$/))
    .map(([k, p]) => k + p),
  fc.string({ maxLength: 10 }).filter((s) => !/^(memory|file|pfs|s3)/.test(s)),
);

async function checkCase(name: string, cmd: Command, extra: string[]): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "tierbench-badinput-" });
  try {
    const args = [...cmd.base(dir), ...extra];
    const r = await spawnIn(dir, args);
    const what = `${name} ${JSON.stringify(args.slice(cmd.base(dir).length))}: exit ${r.code}` +
      `${r.signal ? ` (${r.signal})` : ""}\n${r.stderr}`;
    if (VERBOSE) console.log(what.trimEnd());
    assert.doesNotMatch(r.stderr, /^\s+at |error: Uncaught|Stack backtrace/m, what);
    assert.ok(r.code === 2 || (cmd.mayPass && r.code === 0), what);
    if (r.code === 2) {
      const lines = r.stderr.trimEnd().split("\n");
      assert.equal(lines.length, 1, what);
      const line = lines[0]!;
      assert.match(line, /^tierbench: /, what);
      assert.match(
        line,
        /--[a-z][a-z-]*|(unknown|missing required|too many|excess) (option|argument|command)|: job file: /,
        `names no field: ${what}`,
      );
      // a flag with a fixed set, named as the one at fault, lists the set
      const atFault = /^tierbench: (?:option ')?(--[a-z-]+)/.exec(line)?.[1];
      if (atFault && cmd.enums.includes(atFault) && !/argument missing/.test(line)) {
        assert.match(line, /allowed|Allowed choices|one of/i, `no allowed values: ${what}`);
      }
    }
    assert.deepEqual(await scratchOf(r.pid, dir), [], `scratch left: ${what}`);
    const left = (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name);
    for (const n of left) {
      assert.ok(n === "plan.json" || n === "results", `wrote ${n} in the cwd: ${what}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs `numRuns` cases of `name` with one to three fuzzed options. */
function cliProperty(name: string, numRuns: number): void {
  const cmd = COMMANDS[name]!;
  Deno.test(`tierbench ${name}: random bad options exit ${cmd.mayPass ? "0 or " : ""}2 in one line naming the field, leaving nothing`, async () => {
    const extra = name === "clean"
      ? fc.tuple(cleanTier, fc.array(option(cmd), { maxLength: 1 }))
        .map(([tier, more]) => ["--tier", tier, ...more.flat()])
      : fc.array(option(cmd), { minLength: 1, maxLength: 3 }).map((o) => o.flat());
    await fc.assert(
      fc.asyncProperty(extra, (args) => checkCase(name, cmd, args)),
      { seed: SEED, numRuns, endOnFailure: true },
    );
  });
}

cliProperty("run", 20);
cliProperty("workload", 12);
cliProperty("contention", 6);
cliProperty("plan", 12);
cliProperty("clean", 6);
