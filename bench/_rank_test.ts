import assert from "node:assert/strict";
import { join } from "node:path";
import { withTempDir } from "../tests/_helpers.ts";
import { ProgramBuilder } from "../workloads/ops.ts";
import { type PathRuntime, RankExecutor } from "./_rank.ts";
import { NodeSync } from "./_sync.ts";

/** One rank's program of `ops` on an O_DIRECT file path at `dir`, run to the end. */
async function runOps(
  dir: string,
  add: (b: ProgramBuilder) => void,
): Promise<void> {
  const b = new ProgramBuilder(0);
  add(b);
  const path: PathRuntime = {
    policy: { name: "local", role: "local", bs: 1 << 20, iodepth: 4 },
    index: 0,
    direct: true,
    dir,
  };
  const exec = new RankExecutor(b.build(), [path], new NodeSync(1, 1), 0);
  await exec.layout();
  await exec.run();
}

const write = (object: string, bytes: number, extra: Record<string, unknown> = {}) => ({
  kind: "write" as const,
  stream: "local:write",
  iteration: 0,
  phase: "flush",
  path: "local",
  object,
  bytes,
  label: object,
  ...extra,
});

Deno.test("RankExecutor writes each op's region of one file at its offset, in the directory its object names", async () => {
  await withTempDir(async (dir) => {
    await runOps(dir, (b) => {
      b.add(write("global_step1/ckpt.pt", 8192, { offset: 4096 }));
      b.add(write("global_step1/ckpt.pt", 4096));
      b.add(write("global_step2/ckpt.pt", 4096, { offset: 12288 }));
    });
    const one = join(dir, "r0", "global_step1", "ckpt.pt");
    const two = join(dir, "r0", "global_step2", "ckpt.pt");
    assert.equal((await Deno.stat(one)).size, 4096 + 8192);
    // a region from 12288 leaves the file 16 KiB long, its start a hole
    assert.equal((await Deno.stat(two)).size, 16384);
    const head = (await Deno.readFile(two)).subarray(0, 12288);
    assert.ok(head.every((x) => x === 0));
  });
});

Deno.test("RankExecutor opens an op marked direct: false buffered on an O_DIRECT path", async () => {
  await withTempDir(async (dir) => {
    // O_DIRECT refuses an offset off the 4 KiB grid (the channel says so before the kernel's
    // EINVAL); the page cache takes it
    await runOps(dir, (b) => b.add(write("buffered", 4096, { offset: 100, direct: false })));
    assert.equal((await Deno.stat(join(dir, "r0", "buffered"))).size, 4196);
    await assert.rejects(
      runOps(dir, (b) => b.add(write("direct", 4096, { offset: 100 }))),
      /offset 100 is not a multiple of 4096 bytes \(O_DIRECT\)/,
    );
  });
});

Deno.test("RankExecutor stopped after its scratch was removed fails there and does not make the scratch again", async () => {
  await withTempDir(async (parent) => {
    const scratch = join(parent, "scratch");
    await assert.rejects(
      runOps(scratch, (b) => b.add(write("global_step1/ckpt.pt", 4096))),
      Deno.errors.NotFound,
    );
    assert.deepEqual([...Deno.readDirSync(parent)], []);
  });
});
