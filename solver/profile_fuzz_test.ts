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
import { makePlan } from "./planner.ts";
import { loadProfile } from "./profile.ts";
import { type Json, mutate, mutation } from "../tests/_fuzz.ts";
import { type Profile, ProfileError } from "../schema/profile.ts";

const SEED = Number(Deno.env.get("TIERBENCH_FUZZ_SEED") ?? Date.now() % 2 ** 31);
console.log(`profile_fuzz_test: fast-check seed ${SEED} (TIERBENCH_FUZZ_SEED=${SEED} to rerun)`);

const ROOT = new URL("../results/", import.meta.url);
const REFERENCES: Record<string, Json> = {};
for (const name of ["dgx-a100-8gpu-nvme-s3.json", "polaris-4gpu-nvme-lustre.json"]) {
  REFERENCES[name] = JSON.parse(Deno.readTextFileSync(new URL(`reference/${name}`, ROOT)));
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
