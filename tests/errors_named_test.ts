/**
 * Errors name what the user wrote — the option as spelled, the job-file key
 * and its own line, the environment variable, the plan's field, the file —
 * in one line that never quotes a file's text, with exit status 2 for every
 * usage error; `bench` checks everything before it prints its plan; a list
 * with an empty item is refused; a run whose target vanished says so.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, runCli, scratchLeft, spawnCli, withTempDir } from "./_helpers.ts";
import { assertOneLine, assertUsageErrors } from "./_cli.ts";
import { finished, spawnCliWithEnv, waitUntil } from "./_faults.ts";
import { partialPathOf } from "../core/output_file.ts";

const PROFILE = join(ROOT, "results", "reference", "dgx-a100-8gpu-nvme-s3.json");

Deno.test("bench refuses bad input before it prints its plan, naming the option it was given", async () => {
  await withTempDir(async (dir) => {
    const cases: [string[], RegExp][] = [
      [["--ranks-per-node", "-4"], /^tierbench: --ranks-per-node: "-4" is not an integer/],
      [["--quick", "--ranks-per-node", "-4"], /^tierbench: --ranks-per-node: "-4"/],
      [["--file-dir", join(dir, "missing")], /^tierbench: --file-dir: \S+missing does not exist/],
      [["--no-memory", "--no-file"], /^tierbench: --no-memory: and --no-file leave no tier/],
      [["--pfs", join(dir, "nope")], /^tierbench: --pfs: \S+nope does not exist/],
      [["--processes", "1,,4"], /^tierbench: --processes: "1,,4" has an empty item/],
      [["--timeout", "soon"], /^tierbench: --timeout: "soon" is not a duration/],
    ];
    for (const [args, says] of cases) {
      const r = await runCli(["bench", "--file-dir", dir, ...args]);
      assertOneLine(r, 2, says, args.join(" "));
      assert.deepEqual(await scratchLeft(dir), [], args.join(" "));
    }
    const env = await finished(
      spawnCliWithEnv(["bench", "--quick", "--file-dir", dir], {
        TIERBENCH_PFS_DIR: join(dir, "gone"),
      }),
    );
    assertOneLine(
      env,
      2,
      /^tierbench: TIERBENCH_PFS_DIR: \S+gone does not exist/,
      "TIERBENCH_PFS_DIR",
    );
  });
});

Deno.test("a comma list with an empty item is refused naming its option, never shortened", async () => {
  await withTempDir(async (dir) => {
    const cases: [string[], RegExp][] = [
      [
        ["sweep", "--tier", `file:${dir}`, "--iodepth", "1,,4"],
        /^tierbench: --iodepth: "1,,4" has an empty item \(the 2nd\)/,
      ],
      [["sweep", "--tier", `file:${dir}`, "--bs", "4k,"], /^tierbench: --bs: "4k," has an empty/],
      [
        ["contention", "--tiers", `memory:,,file:${dir}`],
        /^tierbench: --tiers: "memory:,,file:\S+" has an empty item/,
      ],
      [
        ["workload", "zero-infinity", "--tiers", `file:${dir},`],
        /^tierbench: --tiers: "file:\S+," has an empty item \(the 2nd\)/,
      ],
      [
        ["contention", "--tiers", `memory:,file:${dir}`, "--processes", ",2"],
        /^tierbench: --processes: ",2" has an empty item \(the 1st\)/,
      ],
    ];
    await assertUsageErrors(cases);
  });
});

Deno.test("replay names the plan's fields and the plan file as given, never an option, in one line", async () => {
  await withTempDir(async (dir) => {
    const plan = join(dir, "plan.json");
    const p = await runCli(["plan", "--profile", PROFILE, "--model", "7b", "--output", plan]);
    assert.equal(p.code, 0, p.stderr);
    const good = JSON.parse(await Deno.readTextFile(plan));
    const cases: [string, unknown, RegExp][] = [
      ["model", "gpt9", /^tierbench: bad\.json: setup\.model: model "gpt9" is not a preset/],
      ["micro_batch", 0, /^tierbench: bad\.json: setup\.micro_batch: 0 is too small/],
      ["ranks_per_node", -3, /^tierbench: bad\.json: setup\.ranks_per_node: -3 is too small/],
      [
        "subgroup_elements",
        1,
        /^tierbench: bad\.json: setup\.subgroup_elements: .*use a larger setup\.subgroup_elements/,
      ],
    ];
    for (const [field, value, says] of cases) {
      const bad = structuredClone(good);
      bad.setup[field] = value;
      await Deno.writeTextFile(join(dir, "bad.json"), JSON.stringify(bad));
      const r = await runCli(["replay", "bad.json", "--tiers", `file:${dir}`], { cwd: dir });
      assertOneLine(r, 2, says, field);
      assert.doesNotMatch(r.stderr, /--model|--micro-batch|--ranks-per-node|--subgroup-size/);
    }
    // a file that is not JSON: named as given, its text never quoted
    await Deno.writeTextFile(join(dir, "notes.json"), "api_key = s3cr3t-t0ken\nsecond line\n");
    for (
      const args of [["replay", "notes.json", "--tiers", `file:${dir}`], ["report", "notes.json"]]
    ) {
      const r = await runCli(args, { cwd: dir });
      assertOneLine(
        r,
        2,
        /^tierbench: \S*notes\.json: not JSON \(it does not begin with \{ or \[\)$/,
        args[0]!,
      );
      assert.doesNotMatch(r.stderr, /s3cr3t|second line/);
    }
    const missing = await runCli(["replay", "missing.json", "--tiers", `file:${dir}`], {
      cwd: dir,
    });
    assertOneLine(missing, 2, /^tierbench: missing\.json: no such file$/, "missing plan");
  });
});

Deno.test("a launcher variable that does not parse is a usage error naming it", async () => {
  const cases: [Record<string, string>, RegExp][] = [
    [
      { SLURM_PROCID: "0", SLURM_NTASKS: "2", SLURM_JOB_ID: "7", SLURM_JOB_NODELIST: "n[1-" },
      /^tierbench: SLURM_JOB_NODELIST: "n\[1-" is not a Slurm node list: unbalanced brackets/,
    ],
    [
      { RANK: "3", WORLD_SIZE: "2", MASTER_ADDR: "h", MASTER_PORT: "29500" },
      /^tierbench: RANK: must be an integer from 0 to 1 \(WORLD_SIZE is 2\), got 3/,
    ],
    [
      { RANK: "0", WORLD_SIZE: "2", MASTER_PORT: "29500" },
      /^tierbench: MASTER_ADDR: is not set/,
    ],
  ];
  for (const [env, says] of cases) {
    const r = await finished(spawnCliWithEnv(["run", "--tier", "null:", "--size", "1m"], env));
    assertOneLine(r, 2, says, JSON.stringify(env));
  }
});

Deno.test("a job file's bad value is blamed on its own line", async () => {
  await withTempDir(async (dir) => {
    const job = join(dir, "bad.fio");
    await Deno.writeTextFile(job, `[global]\ndirectory=${dir}\nruntime=-1\ntime_based\n[j]\n`);
    assertOneLine(
      await runCli(["run", job]),
      2,
      /^tierbench: \S+bad\.fio:3: runtime: -1: -1 is negative \(fio takes it as 2\^64 - 1, in effect no limit; tierbench refuses it\)$/,
      "runtime=-1",
    );
  });
});

Deno.test("a run whose scratch directory vanished mid-run says so and exits 1", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "r.json");
    const tier = join(dir, "tier");
    await Deno.mkdir(tier);
    const child = spawnCli([
      ...["run", "--quiet", "--tier", `file:${tier}`, "--rw", "write", "--bs", "64k"],
      ...["--size", "8m", "--runtime", "3", "--output", out],
    ]);
    await waitUntil("the run's scratch", async () => (await scratchLeft(tier)).length > 0);
    await new Promise((r) => setTimeout(r, 1000));
    for (const name of await scratchLeft(tier)) {
      await Deno.remove(join(tier, name), { recursive: true });
    }
    const r = await finished(child);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr.trim(),
      /^tierbench: the scratch directory \S+ on file:\S+ vanished during the run \(something else deleted it\): .*; partial results in \S+r\.partial\.json$/,
    );
    assert.equal(JSON.parse(await Deno.readTextFile(partialPathOf(out))).status, "failed");
  });
});
