/**
 * Every kind of document tierbench writes, written by the real CLI, and the
 * documents the repository holds, validate against the published JSON
 * Schemas (schemas/), and carry their `$schema` URI.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, runCli, withTempDir } from "./_helpers.ts";
import { launchRanks } from "./_launch.ts";
import { assertValidFile } from "./_schemas.ts";
import { PLAN_SCHEMA_ID } from "../schema/plan.ts";
import { RESULT_SCHEMA_ID } from "../schema/result.ts";

const SHORT = ["--runtime", "0.5", "--ramp", "0", "--quiet"];

async function jsonFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(join(ROOT, dir))) {
    if (e.isFile && e.name.endsWith(".json")) out.push(join(ROOT, dir, e.name));
  }
  return out.sort();
}

async function cli(args: string[]): Promise<void> {
  const r = await runCli(args);
  assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
}

Deno.test("the reference profiles and the repository's result fixtures validate against their schemas", async () => {
  const files = [
    ...await jsonFiles("results/reference"),
    ...await jsonFiles("tests/testdata/profiles"),
    ...await jsonFiles("solver/testdata"),
  ];
  assert.ok(files.length >= 5, files.join(" "));
  for (const f of files) await assertValidFile(f);
});

Deno.test("run, contention, sweep, workload and plan documents the CLI writes validate against their schemas", async () => {
  await withTempDir(async (dir) => {
    const out = (name: string) => join(dir, `${name}.json`);
    await cli(["run", "--tier", "null:", "--size", "1m", ...SHORT, "--output", out("run")]);
    await cli([
      "run",
      "--tier",
      `file:${dir}`,
      "--rw",
      "randrw",
      "--bs",
      "4k",
      "--size",
      "1m",
      "--rate-iops",
      "200",
      ...SHORT,
      "--output",
      out("rate"),
    ]);
    await cli([
      "contention",
      "--tiers",
      `memory:/dev/shm,file:${dir}`,
      "--size",
      "8m",
      ...SHORT,
      "--output",
      out("contention"),
    ]);
    await cli([
      "sweep",
      "--tier",
      "null:",
      "--bs",
      "4k,64k",
      "--iodepth",
      "1,2",
      "--numjobs",
      "1",
      "--size",
      "1m",
      ...SHORT,
      "--output",
      out("sweep"),
    ]);
    await cli([
      "workload",
      "zero-infinity",
      "--model",
      "7b",
      "--scale",
      "0.0002",
      "--ranks-per-node",
      "2",
      "--iterations",
      "2",
      "--tiers",
      `memory:/dev/shm,file:${dir}`,
      "--quiet",
      "--output",
      out("workload"),
    ]);
    await cli([
      "plan",
      "--profile",
      join(ROOT, "results/reference/polaris-4gpu-nvme-lustre.json"),
      "--output",
      out("plan"),
    ]);
    for (const name of ["run", "rate", "contention", "sweep", "workload"]) {
      const doc = await assertValidFile(out(name)) as { $schema: string };
      assert.equal(doc.$schema, RESULT_SCHEMA_ID, name);
    }
    const plan = await assertValidFile(out("plan")) as { $schema: string };
    assert.equal(plan.$schema, PLAN_SCHEMA_ID);
  });
});

Deno.test("bench --quick writes a profile with the contention matrix (its pair again at 4 processes per job) and no workloads that validates against the result schema", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "quick.json");
    await cli(["bench", "--quick", "--file-dir", dir, "--quiet", "--output", out]);
    const doc = await assertValidFile(out) as {
      kind: string;
      contention?: { status: string; together_at?: { key: string; processes: number }[] };
      workloads?: unknown;
      config: { jobs: { runtimeMs: number; rampMs: number; size: number }[] };
    };
    assert.equal(doc.kind, "profile");
    assert.equal(doc.contention?.status, "ok");
    // the curves' largest count (--ranks-per-node 4): the plan's ranks on both paths at once
    assert.deepEqual(
      doc.contention?.together_at?.map((g) => [g.key, g.processes]),
      [["memory+file", 4]],
    );
    assert.equal(doc.workloads, undefined);
    for (const j of doc.config.jobs) {
      assert.deepEqual([j.runtimeMs, j.rampMs, j.size], [500, 0, 16 << 20]);
    }
  });
});

Deno.test("a run across 3 torchrun-style processes writes one document that validates against the result schema", async () => {
  const dir = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tierbench-schema-test-" });
  try {
    const out = join(dir, "out.json");
    const results = await launchRanks(3, [
      "run",
      "--tier",
      `memory:${dir}`,
      "--rw",
      "write",
      "--bs",
      "64k",
      "--size",
      "4m",
      ...SHORT,
      "--output",
      out,
    ]).done();
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const doc = await assertValidFile(out) as { cluster?: { processes_count: number } };
    assert.equal(doc.cluster?.processes_count, 3);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
