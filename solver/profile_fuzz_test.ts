/**
 * Property-based tests of the profile loader (fast-check): the reference
 * profiles of results/reference/ (and a contention result) mutated at random
 * JSON paths load as a checked profile or fail with a one-line
 * {@linkcode ProfileError} naming the path — never another error, never a
 * profile with a bandwidth that is not a finite positive number; and a plan
 * made from any profile that loads is planned or refused as a ConfigError;
 * a plan document mutated likewise passes replay's check and derives its
 * setup and options, or is refused naming the field.
 *
 * The seed is printed; rerun a failure with `TIERBENCH_FUZZ_SEED=<seed>`.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { ConfigError } from "../core/errors.ts";
import { resolveSetup } from "../workloads/setup.ts";
import { checkPlanDocument } from "./plan_check.ts";
import { makePlan } from "./planner.ts";
import { loadProfile, type Profile, ProfileError } from "./profile.ts";
import { minScaleOf, optionsOfPlan, replayPaths, setupOfPlan } from "../bench/replay.ts";

const SEED = Number(Deno.env.get("TIERBENCH_FUZZ_SEED") ?? Date.now() % 2 ** 31);
console.log(`profile_fuzz_test: fast-check seed ${SEED} (TIERBENCH_FUZZ_SEED=${SEED} to rerun)`);

// deno-lint-ignore no-explicit-any
type Json = any;
type Path = (string | number)[];

const ROOT = new URL("../results/", import.meta.url);
const REFERENCES: Record<string, Json> = {};
for (const name of ["dgx-a100-8gpu-nvme-s3.json", "polaris-4gpu-nvme-lustre.json"]) {
  REFERENCES[name] = JSON.parse(Deno.readTextFileSync(new URL(`reference/${name}`, ROOT)));
}

/** Every path into `json` (objects and arrays), the root excluded; arrays sampled. */
function pathsOf(json: Json, at: Path = [], out: Path[] = []): Path[] {
  if (json === null || typeof json !== "object") return out;
  const keys: (string | number)[] = Array.isArray(json)
    ? json.map((_, i) => i).filter((i) => i < 3 || i === json.length - 1)
    : Object.keys(json);
  for (const k of keys) {
    const p = [...at, k];
    out.push(p);
    pathsOf(json[k], p, out);
  }
  return out;
}

/** Values a hand-edited or damaged profile might hold. */
const oddValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(
    null,
    0,
    -1,
    1,
    1e99,
    -1e-300,
    Number.MAX_SAFE_INTEGER + 2,
    "",
    "NaN",
    "1e9",
    "fast",
    "memory",
    "file",
    "s3",
    "pfs",
    "tierbench/profile@1",
    "tierbench/result@1",
    "tierbench/profile@2",
    true,
    false,
    [],
    {},
    [1, 2],
    { read: 1 },
  ),
  fc.double(),
  fc.integer(),
  fc.string({ maxLength: 8 }),
  fc.jsonValue({ maxDepth: 2 }),
);

type Mutation =
  | { op: "set"; pick: number; value: Json }
  | { op: "delete"; pick: number }
  | { op: "rename"; pick: number; name: string }
  | { op: "add"; pick: number; name: string; value: Json };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant("set" as const), pick: fc.nat(), value: oddValue }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("delete" as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("rename" as const),
      pick: fc.nat(),
      name: fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("memory", "file", "pfs", "s3")),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("add" as const),
      pick: fc.nat(),
      name: fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("__proto__", "constructor")),
      value: oddValue,
    }),
  },
);

/** `doc` (a deep copy) with `m` applied at one of its paths. */
function mutate(doc: Json, m: Mutation): { doc: Json; where: string } {
  const copy = structuredClone(doc);
  const paths = pathsOf(copy);
  const path = paths[m.pick % paths.length]!;
  const parent = path.slice(0, -1).reduce((o: Json, k) => o[k], copy);
  const key = path[path.length - 1]!;
  const where = `${m.op} ${JSON.stringify(path)}`;
  switch (m.op) {
    case "set":
      parent[key] = m.value;
      break;
    case "delete":
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
      break;
    case "rename":
      if (!Array.isArray(parent)) {
        const v = parent[key];
        delete parent[key];
        parent[m.name] = v;
      }
      break;
    case "add": {
      const target = parent[key];
      if (target !== null && typeof target === "object" && !Array.isArray(target)) {
        Object.defineProperty(target, m.name, {
          value: m.value,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      break;
    }
  }
  return { doc: copy, where };
}

/** Loads `doc`; checks that a refusal is a one-line ProfileError naming its path. */
function loadOrRefuse(doc: Json, where: string): Profile | undefined {
  try {
    return loadProfile(doc, "fuzz.json");
  } catch (e) {
    if (!(e instanceof ProfileError)) {
      throw new Error(`${where}: not a ProfileError: ${(e as Error)?.name}: ${e}`, { cause: e });
    }
    assert.equal(e.field, "profile");
    assert.ok(!e.message.includes("\n"), `${where}: ${e.message}`);
    assert.ok(e.message.startsWith("--profile: fuzz.json: "), `${where}: ${e.message}`);
    if (e.path !== "") assert.ok(e.message.includes(`${e.path}: `), `${where}: ${e.message}`);
    return undefined;
  }
}

/** A loaded profile's figures are usable: finite and positive where a rate. */
function assertUsable(p: Profile, where: string): void {
  for (const [label, t] of Object.entries(p.tiers)) {
    if (!t) continue;
    for (const k of ["read_bw_bytes", "write_bw_bytes", "bs", "iodepth"] as const) {
      const v = t[k];
      assert.ok(Number.isFinite(v) && v > 0, `${where}: tiers.${label}.${k} = ${v}`);
    }
  }
}

const documents = fc.constantFrom(...Object.keys(REFERENCES));

Deno.test("loadProfile() on a reference profile mutated at a random path: a usable profile or a ProfileError naming the path", () => {
  fc.assert(
    fc.property(documents, fc.array(mutation, { minLength: 1, maxLength: 3 }), (name, ms) => {
      let doc = REFERENCES[name];
      const wheres: string[] = [];
      for (const m of ms) {
        const out = mutate(doc, m);
        doc = out.doc;
        wheres.push(out.where);
      }
      const p = loadOrRefuse(doc, `${name}: ${wheres.join(", ")}`);
      if (p) assertUsable(p, `${name}: ${wheres.join(", ")}`);
    }),
    { seed: SEED, numRuns: 600 },
  );
});

Deno.test("loadProfile() on a measured contention result mutated at a random path: a usable profile or a ProfileError", () => {
  // a `tierbench contention` result measured on memory, file and CephFS (histograms stripped)
  const result = JSON.parse(
    Deno.readTextFileSync(new URL("./testdata/contention_memory_file_pfs.json", import.meta.url)),
  );
  // the figures the loader reads, not the time series and histograms it skips
  for (const r of result.runs ?? []) {
    for (const d of ["read", "write"]) {
      if (r[d]) {
        delete r[d].hist;
        delete r[d].bw_log;
      }
    }
  }
  fc.assert(
    fc.property(mutation, (m) => {
      const { doc, where } = mutate(result, m);
      const p = loadOrRefuse(doc, where);
      if (p) assertUsable(p, where);
    }),
    { seed: SEED, numRuns: 150 },
  );
});

Deno.test("makePlan() from any mutated profile that loads: a plan or a ConfigError, never another error", async () => {
  const setup = resolveSetup({ model: "7b" });
  await fc.assert(
    fc.asyncProperty(documents, mutation, async (name, m) => {
      const { doc, where } = mutate(REFERENCES[name], m);
      const p = loadOrRefuse(doc, where);
      if (!p) return;
      try {
        const plan = await makePlan(p, setup, { hostCacheBytes: 16 * 2 ** 30 });
        const s = plan.predictions.plan.update_s;
        assert.ok(Number.isFinite(s) && s > 0, `${name}: ${where}: update_s ${s}`);
      } catch (e) {
        if (!(e instanceof ConfigError)) {
          throw new Error(`${name}: ${where}: not a ConfigError: ${(e as Error)?.name}: ${e}`, {
            cause: e,
          });
        }
        assert.ok(!e.message.includes("\n"), e.message);
      }
    }),
    { seed: SEED, numRuns: 60 },
  );
});

Deno.test("replay's plan check on a plan mutated at a random path: what replay reads works, or a ConfigError naming the field", async () => {
  const profile = loadProfile(REFERENCES["polaris-4gpu-nvme-lustre.json"], "polaris.json");
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
        setupOfPlan(checked, 0.01, 1, 0);
      } catch (e) {
        if (!(e instanceof ConfigError)) {
          throw new Error(`${where}: not a ConfigError: ${(e as Error)?.name}: ${e}`, { cause: e });
        }
        assert.ok(!e.message.includes("\n"), `${where}: ${e.message}`);
        assert.match(e.message, /^--(plan|model|[a-z-]+): /, `${where}: ${e.message}`);
      }
    }),
    { seed: SEED, numRuns: 400 },
  );
});
