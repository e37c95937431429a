import assert from "node:assert/strict";
import { parseTierSpec } from "../core/config.ts";
import { scratchLeft, withTempDir } from "../tests/_helpers.ts";
import { withSession } from "./session.ts";
import type { FileBackedTier } from "../tiers/file_backed.ts";

Deno.test("withSession() opens a tier once per spec, and removes its scratch after an ok body", async () => {
  await withTempDir(async (dir) => {
    const spec = parseTierSpec(`file:${dir}`);
    const { doc, error } = await withSession({ kind: "run", config: { x: 1 } }, async (s) => {
      const tier = await s.tier(spec);
      assert.equal(await s.tier(spec), tier);
      const other = await s.tier(spec, undefined, `${s.runId}-2`);
      assert.notEqual(other, tier);
      // a scratch directory is made on first use
      assert.equal((await scratchLeft(dir)).length, 0);
      void (tier as FileBackedTier).scratchDir, (other as FileBackedTier).scratchDir;
      assert.equal((await scratchLeft(dir)).length, 2);
      return "ok";
    });
    assert.equal(error, undefined);
    assert.equal(doc.status, "ok");
    assert.equal(doc.kind, "run");
    assert.deepEqual(doc.config, { x: 1 });
    assert.equal(doc.error, undefined);
    assert.ok(doc.finished >= doc.started && doc.tool.peak_rss_bytes > 0);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("withSession() ends failed with the message and the error when the body throws, scratch removed", async () => {
  await withTempDir(async (dir) => {
    const boom = new Error("boom");
    const { doc, error } = await withSession({ kind: "sweep", config: {} }, async (s) => {
      await s.tier(parseTierSpec(`file:${dir}`));
      throw boom;
    });
    assert.equal(error, boom);
    assert.equal(doc.status, "failed");
    assert.equal(doc.error, "boom");
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("withSession() keeps the status the body returns, the run id it is given and the signal", async () => {
  const stop = new AbortController();
  stop.abort();
  const { doc, error } = await withSession(
    { kind: "run", config: {}, runId: "r-given", signal: stop.signal },
    (s) => {
      assert.equal(s.signal, stop.signal);
      return Promise.resolve(s.signal?.aborted ? "interrupted" : "ok");
    },
  );
  assert.equal(error, undefined);
  assert.equal(doc.run_id, "r-given");
  assert.equal(doc.status, "interrupted");
});
