import assert from "node:assert/strict";
import { join } from "node:path";
import { parseJobOptions } from "../core/config.ts";
import { ConfigError, DirectIoUnsupportedError } from "../core/errors.ts";
import { tempDirOnDisk, tempMount } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";
import { FileTier, MemoryTier, NullTier } from "./mod.ts";
import { MARKER } from "./scratch.ts";

Deno.test("FileTier.setup() makes a marked scratch directory and dispose removes it", async () => {
  const dir = await tempDirOnDisk();
  try {
    let scratch: string;
    {
      await using tier = new FileTier({ kind: "file", path: dir });
      await tier.setup();
      scratch = tier.scratchDir;
      assert.ok(scratch.startsWith(join(dir, "tierbench-scratch-")));
      assert.ok((await Deno.stat(join(scratch, MARKER))).isFile);
    }
    await assert.rejects(Deno.stat(scratch), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("FileTier dispose leaves a directory alone when its marker names another run", async () => {
  const dir = await tempDirOnDisk();
  try {
    const tier = new FileTier({ kind: "file", path: dir });
    await tier.setup();
    await Deno.writeTextFile(join(tier.scratchDir, MARKER), '{"run_id":"someone-else"}');
    await tier[Symbol.asyncDispose]();
    assert.equal((await Array.fromAsync(Deno.readDir(dir))).length, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("FileTier.setup() names a missing directory", async () => {
  const tier = new FileTier({ kind: "file", path: "/nonexistent/tierbench" });
  const e = await tier.setup().catch((e) => e);
  assert.ok(e instanceof ConfigError);
  assert.match(e.message, /\/nonexistent\/tierbench does not exist/);
});

Deno.test("FileTier.prepare() refuses a bs not aligned for O_DIRECT", async () => {
  const dir = await tempDirOnDisk();
  try {
    await using tier = new FileTier({ kind: "file", path: dir });
    await tier.setup();
    const job = parseJobOptions({ tier: `file:${dir}`, bs: "1000", size: "1m", direct: true });
    const e = await tier.prepare(job).catch((e) => e);
    assert.ok(e instanceof ConfigError);
    assert.equal(e.field, "bs");
    assert.match(e.message, /not a multiple of \d+/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("FileTier.prepare() reuses laid-out read files and gives writes fresh ones", async () => {
  const dir = await tempDirOnDisk();
  try {
    await using tier = new FileTier({ kind: "file", path: dir });
    await tier.setup();
    const read = parseJobOptions({ tier: `file:${dir}`, size: "1m" });
    const first = await tier.prepare(read);
    assert.equal(first[0]!.layout, "prefill");
    tier.markLaidOut(first);
    assert.equal((await tier.prepare(read))[0]!.layout, "none");
    const write = parseJobOptions({ tier: `file:${dir}`, rw: "write", size: "1m" });
    const w1 = await tier.prepare(write);
    const w2 = await tier.prepare(write);
    assert.equal(w1[0]!.layout, "fallocate");
    assert.notDeepEqual(w1[0]!.paths, w2[0]!.paths);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("MemoryTier refuses a directory that is not on tmpfs", async () => {
  const dir = await tempDirOnDisk();
  try {
    const tier = new MemoryTier({ kind: "memory", path: dir });
    const e = await tier.setup().catch((e) => e);
    assert.ok(e instanceof ConfigError);
    assert.match(e.message, /not tmpfs/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("NullTier describes itself as the harness ceiling", async () => {
  await using tier = new NullTier();
  await tier.setup();
  assert.equal(tier.describe().direct, "not-applicable");
});

Deno.test(needing(["root"], {
  name: "FileTier.prepare() reports a file system that refuses O_DIRECT (ramfs)",
  fn: async () => {
    await using mnt = await tempMount("ramfs", "size=16m");
    await using tier = new FileTier({ kind: "file", path: mnt.path });
    await tier.setup();
    const job = parseJobOptions({ tier: `file:${mnt.path}`, size: "1m", direct: true });
    const e = await tier.prepare(job).catch((e) => e);
    assert.ok(e instanceof DirectIoUnsupportedError, String(e));
    assert.match(e.message, /ramfs\) refuses O_DIRECT/);
  },
}));

Deno.test("parseJobOptions() refuses --filename for a write pattern", () => {
  assert.throws(
    () => parseJobOptions({ tier: "file:/x", rw: "write", filename: "/x/f" }),
    (e: unknown) => e instanceof ConfigError && e.field === "filename",
  );
});
