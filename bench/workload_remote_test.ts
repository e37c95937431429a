/**
 * Every workload on real tiers: host memory (tmpfs), a file tier on the disk,
 * and the remote tier as CephFS and as S3 through RGW, from the tests' local
 * Ceph cluster.
 *
 * @module
 */

import assert from "node:assert/strict";
import { parseTierSpec, type TierSpec } from "../core/config.ts";
import { type ResultDocument, writeResult } from "../schema/result.ts";
import { scratchLeft, tempDirOnDisk } from "../tests/_helpers.ts";
import { listKeys, type RemoteEnv, remoteTest, uniquePrefix } from "../tests/_remote.ts";
import { WORKLOADS } from "../workloads/registry.ts";
import { runWorkload } from "./workload.ts";
import { resolveSetup } from "../workloads/setup.ts";

const setup = resolveSetup({ model: "7b", scale: 1e-4, iterations: 1, warmup: 1, ranksPerNode: 2 });

async function runOn(name: string, specs: TierSpec[], env: RemoteEnv): Promise<void> {
  const def = WORKLOADS.find((w) => w.name === name)!;
  const { doc, error } = await runWorkload(def, setup, specs, {}, {
    s3: { endpoint: env.endpoint, region: env.region },
  });
  assert.equal(error, undefined, String(error));
  assert.equal(doc.status, "ok", `${name}: ${doc.error}`);
  // the document as written and read back, as `tierbench workload --output` does
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await writeResult(file, doc);
  const back = JSON.parse(await Deno.readTextFile(file)) as ResultDocument;
  await Deno.remove(file);
  assert.equal(back.kind, "workload");
  const w = back.workload!;
  assert.equal(w.summary!.iterations, 1);
  assert.ok(w.summary!.iteration_s > 0);
  const moved = Object.entries(w.summary!.bytes).filter(([k]) => !k.endsWith(":hit"));
  assert.ok(
    moved.length > 0 && moved.every(([, v]) => v > 0),
    `${name}: ${JSON.stringify(w.summary)}`,
  );
  for (const p of w.paths) {
    const used = Object.keys(w.summary!.bytes).some((k) => k.startsWith(`${p.name}:`));
    assert.ok(used, `${name}: path ${p.name} moved nothing`);
  }
}

for (const def of WORKLOADS) {
  remoteTest(
    `${def.name} runs on memory, file and CephFS and leaves nothing behind`,
    async (env) => {
      const dir = await tempDirOnDisk();
      try {
        const specs = [`memory:/dev/shm`, `file:${dir}`, `pfs:${env.pfsDir}`].map(parseTierSpec);
        await runOn(def.name, specs, env);
        assert.deepEqual(await scratchLeft(dir), []);
        assert.deepEqual(await scratchLeft(env.pfsDir), []);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  );
}

for (const name of WORKLOADS.filter((w) => w.needs.includes("remote")).map((w) => w.name)) {
  remoteTest(`${name} runs with S3 as the remote tier and deletes its objects`, async (env) => {
    const dir = await tempDirOnDisk();
    const prefix = uniquePrefix(name);
    try {
      const specs = [`memory:/dev/shm`, `file:${dir}`, `s3://${env.bucket}/${prefix}`].map(
        parseTierSpec,
      );
      await runOn(name, specs, env);
      assert.deepEqual(await listKeys(env, prefix), []);
      assert.deepEqual(await scratchLeft(dir), []);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
