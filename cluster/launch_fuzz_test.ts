/**
 * Launcher environments at random (fast-check): the variables of Open MPI,
 * MPICH, Slurm (with and without PMIx) and torchrun-style launchers, each
 * set or not, to values a launcher or a typo might give. detectLaunch()
 * gives a launch whose rank is below its size and whose port is a port, or
 * an InputError (a usage error, exit 2) in one line naming one of the
 * variables that were set (or the one missing) — never another error.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { detectLaunch } from "./launch.ts";
import { InputError } from "../core/errors.ts";
import { numberishText, params } from "../tests/_fuzz.ts";

/** Every variable detectLaunch() reads. */
const VARIABLES = [
  "OMPI_COMM_WORLD_RANK",
  "OMPI_COMM_WORLD_SIZE",
  "OMPI_COMM_WORLD_LOCAL_RANK",
  "PMI_RANK",
  "PMI_SIZE",
  "MPI_LOCALRANKID",
  "SLURM_PROCID",
  "SLURM_NTASKS",
  "SLURM_LOCALID",
  "PMIX_RANK",
  "SLURM_JOB_ID",
  "SLURM_STEP_ID",
  "SLURM_STEP_NODELIST",
  "SLURM_JOB_NODELIST",
  "TIERBENCH_PORT",
  "RANK",
  "WORLD_SIZE",
  "LOCAL_RANK",
  "MASTER_ADDR",
  "MASTER_PORT",
] as const;

/** A value a launcher or a typo might put there. */
const value: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -2, max: 9 }).map(String) },
  { weight: 2, arbitrary: numberishText },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "node[01-03,07]",
      "node[1-",
      "n[3-1]",
      "rack[1-2]-n[01-02],login1",
      ",",
      "x[]",
      "127.0.0.1",
      "65535",
      "65536",
      "29500",
    ),
  },
);

const environment: fc.Arbitrary<Record<string, string>> = fc.dictionary(
  fc.constantFrom(...VARIABLES),
  value,
  { maxKeys: 8 },
);

Deno.test("a launcher environment at random gives a launch in range, or an InputError naming a variable", () => {
  fc.assert(
    fc.property(environment, (env) => {
      const what = JSON.stringify(env);
      let info;
      try {
        info = detectLaunch(env);
      } catch (e) {
        if (!(e instanceof InputError)) {
          throw new Error(`not an InputError: ${e} for ${what}`, { cause: e });
        }
        assert.equal(e.message.includes("\n"), false, what);
        const named = /^([A-Z_]+): /.exec(e.message)?.[1];
        assert.ok(
          named && (VARIABLES as readonly string[]).includes(named),
          `${e.message}: ${what}`,
        );
        return;
      }
      assert.ok(Number.isSafeInteger(info.size) && info.size >= 1, what);
      assert.ok(info.rank >= 0 && info.rank < info.size, what);
      assert.ok(info.localRank >= 0 && info.localRank < info.size, what);
      if (info.address) {
        assert.ok(info.address.port >= 1 && info.address.port <= 65535, what);
        assert.ok(info.address.host !== "", what);
      }
    }),
    params,
  );
});
