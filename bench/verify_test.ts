import assert from "node:assert/strict";
import { join } from "node:path";
import { type JobOptions, parseJobOptions, type RawJobOptions } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { runJob } from "./runner.ts";
import {
  BlockVerifier,
  checkBlock,
  fillPattern,
  HEADER_SIZE,
  loadChecksum,
  runIdHash,
  stampBlock,
  VerifyError,
} from "../core/verify.ts";
import { FileTier } from "../tiers/mod.ts";
import type { JobTarget } from "../tiers/types.ts";
import { runCli, scratchLeft, withTempDir } from "../tests/_helpers.ts";
import { partialPathOf } from "../core/output_file.ts";

// this thread stamps and checks blocks itself, as a job Worker that verifies does
await loadChecksum();

const KiB = 1024;

/** Flips every bit of the byte at `offset` of `path` (so it surely differs). */
async function corrupt(path: string, offset: number): Promise<void> {
  using f = await Deno.open(path, { read: true, write: true });
  const b = new Uint8Array(1);
  await f.seek(offset, Deno.SeekMode.Start);
  assert.equal(await f.read(b), 1);
  b[0] = b[0]! ^ 0xff;
  await f.seek(offset, Deno.SeekMode.Start);
  assert.equal(await f.write(b), 1);
}

function job(dir: string, raw: Omit<RawJobOptions, "tier">): JobOptions {
  return parseJobOptions({ tier: `file:${dir}`, verify: true, ...raw });
}

/** Checks that a run failed on the corruption of `path` at `at`, naming both. */
function assertCaught(r: { status: string; error?: string | undefined }, path: string, at: number) {
  assert.equal(r.status, "failed", `corruption at ${at} went unnoticed`);
  assert.ok(r.error?.includes(`file ${path} at offset ${at}: expected 0x`), r.error);
}

Deno.test("checkBlock() finds a flipped byte anywhere in a block, at that byte", () => {
  const bs = 512;
  const h = { seed: 7, generation: 2, offset: 3 * bs, runId: runIdHash("run-a") } as const;
  const block = new Uint8Array(bs);
  fillPattern(block, h.seed);
  stampBlock(block, h);
  assert.equal(checkBlock(block, h), undefined);
  for (const at of [0, 3, 4, 12, 16, 24, 39, HEADER_SIZE, 300, bs - 1]) {
    const bad = block.slice();
    bad[at] = bad[at]! ^ 0x01;
    const m = checkBlock(bad, h);
    assert.ok(m, `a flip at ${at} went unnoticed`);
    assert.equal(m.at, at);
    assert.equal(m.differing, 1);
    assert.notEqual(m.expected, m.found);
  }
});

Deno.test("checkBlock() names a block from another generation, offset or run", () => {
  const bs = 256;
  const h = { seed: 1, generation: 3, offset: 0, runId: runIdHash("r") } as const;
  const block = new Uint8Array(bs);
  fillPattern(block, 1);
  stampBlock(block, { ...h, generation: 2 });
  assert.equal(checkBlock(block, h)?.field, "header generation");
  stampBlock(block, { ...h, offset: bs });
  assert.equal(checkBlock(block, h)?.field, "header offset");
  stampBlock(block, { ...h, runId: runIdHash("other") });
  assert.equal(checkBlock(block, h)?.field, "header run id");
});

Deno.test("BlockVerifier.checkRead() throws a VerifyError naming tier, key, offset, expected and found", () => {
  const v = new BlockVerifier("file", 4 * KiB, 1, { runId: "r" });
  const block = new Uint8Array(4 * KiB);
  v.fillPattern(block);
  v.prepareLayout(block, 8 * KiB);
  v.checkRead(block, "/x/f.dat", 8 * KiB, 8 * KiB);
  block[100] = block[100]! ^ 0xff;
  assert.throws(() => v.checkRead(block, "/x/f.dat", 8 * KiB, 8 * KiB), VerifyError);
  try {
    v.checkRead(block, "/x/f.dat", 8 * KiB, 8 * KiB);
  } catch (err) {
    assert.ok(err instanceof VerifyError);
    assert.equal(err.tier, "file");
    assert.equal(err.key, "/x/f.dat");
    assert.equal(err.offset, 8 * KiB + 100);
    assert.match(err.expected, /^0x[0-9a-f]{16}$/);
    assert.match(err.found, /^0x[0-9a-f]{16}$/);
    assert.match(err.message, /payload of the 4096-byte block at 8192; 1 byte differ/);
  }
});

Deno.test("parseJobOptions() refuses --verify where it cannot hold", () => {
  assert.throws(() => parseJobOptions({ tier: "null:", verify: true }), /--verify: the null tier/);
  assert.throws(
    () => parseJobOptions({ tier: "memory:", bs: "32", verify: true }),
    ConfigError,
  );
  assert.throws(
    () =>
      parseJobOptions({
        tier: "memory:",
        rw: "randrw",
        engine: "libaio",
        iodepth: "4",
        verify: true,
      }),
    /--verify: randrw with --iodepth 4/,
  );
  assert.equal(parseJobOptions({ tier: "memory:", verify: true }).verify, true);
  assert.equal(parseJobOptions({ tier: "memory:" }).verify, undefined);
});

for (
  const [label, extra] of [
    ["psync", {}],
    ["libaio direct", { engine: "libaio", iodepth: "4", direct: true }],
  ] as const
) {
  Deno.test(`--verify passes clean data: write, read, randread, randrw (${label})`, async () => {
    await withTempDir(async (dir) => {
      await using tier = new FileTier({ kind: "file", path: dir });
      await tier.setup();
      const base = { bs: "16k", size: "1m", ...extra };
      for (const rw of ["write", "read", "randread"] as const) {
        const r = await runJob(tier, job(dir, { ...base, rw }));
        assert.equal(r.status, "ok", r.error);
        assert.equal(r[rw === "write" ? "write" : "read"].io_bytes, 1024 * KiB);
      }
      // randrw rewrites blocks of the read file: later reads expect the new generation.
      const mixed = job(dir, { ...base, rw: "randrw", iodepth: "1", ioSize: "4m" });
      const r = await runJob(tier, mixed);
      assert.equal(r.status, "ok", r.error);
      assert.ok(r.write.io_bytes > 0 && r.read.io_bytes > 0);
      const again = await runJob(tier, job(dir, { ...base, rw: "read" }));
      assert.equal(again.status, "ok", again.error);
    });
  });
}

/** Offsets to corrupt in a file of `blocks` blocks of `bs`: header start, payload, last byte. */
function offsetsToCorrupt(bs: number, blocks: number): number[] {
  return [0, 2 * bs, 2 * bs + HEADER_SIZE + 1234, 3 * bs - 1, blocks * bs - 1];
}

for (
  const [label, extra] of [
    ["psync, read", { rw: "read" }],
    ["libaio direct, randread", { rw: "randread", engine: "libaio", iodepth: "8", direct: true }],
  ] as const
) {
  Deno.test(`--verify reports each corrupted byte of a laid-out file at its offset (${label})`, async () => {
    await withTempDir(async (dir) => {
      const bs = 16 * KiB, blocks = 16;
      for (const at of offsetsToCorrupt(bs, blocks)) {
        let path = "";
        {
          await using tier = new FileTier({ kind: "file", path: dir });
          await tier.setup();
          const r = await runJob(tier, job(dir, { bs: "16k", size: "256k", ...extra }), {
            afterLayout: async (files: readonly JobTarget[]) => {
              path = files[0]!.paths[0]!;
              await corrupt(path, at);
            },
          });
          assertCaught(r, path, at);
        }
        assert.deepEqual(await scratchLeft(dir), []);
      }
    });
  });
}

Deno.test("--verify catches a block from an earlier generation (a lost write)", async () => {
  await withTempDir(async (dir) => {
    const bs = 4 * KiB;
    await using tier = new FileTier({ kind: "file", path: dir });
    await tier.setup();
    let old: Uint8Array | undefined;
    let path = "";
    const first = await runJob(tier, job(dir, { rw: "read", bs: "4k", size: "64k" }), {
      afterLayout: async (files: readonly JobTarget[]) => {
        path = files[0]!.paths[0]!;
        old = (await Deno.readFile(path)).slice(5 * bs, 6 * bs);
      },
    });
    assert.equal(first.status, "ok", first.error);
    // Sequential writes over the whole file: every block is now generation 1.
    const rewrite = await runJob(
      tier,
      job(dir, { rw: "randrw", rwmixread: "0", bs: "4k", size: "64k" }),
    );
    assert.equal(rewrite.status, "ok", rewrite.error);
    const r = await runJob(tier, job(dir, { rw: "read", bs: "4k", size: "64k" }), {
      afterLayout: async () => {
        using f = await Deno.open(path, { write: true });
        await f.seek(5 * bs, Deno.SeekMode.Start);
        await f.write(old!);
      },
    });
    assert.equal(r.status, "failed");
    // The block is whole (its checksum holds) but one generation behind.
    assert.ok(r.error?.includes(`at offset ${5 * bs + 12}: expected 0x01000000`), r.error);
    assert.ok(r.error?.includes(`header generation of the 4096-byte block at ${5 * bs}`), r.error);
  });
});

Deno.test("tierbench run --verify: a corrupted file fails the run with one line and exit 1, each time at its offset", async () => {
  await withTempDir(async (dir) => {
    // A file laid out by a --verify run, kept aside (the run's own is removed with its scratch).
    const kept = join(dir, "kept.dat");
    {
      await using tier = new FileTier({ kind: "file", path: dir });
      await tier.setup();
      const r = await runJob(tier, job(dir, { rw: "read", bs: "64k", size: "512k" }), {
        afterLayout: async (files: readonly JobTarget[]) => {
          await Deno.copyFile(files[0]!.paths[0]!, kept);
        },
      });
      assert.equal(r.status, "ok", r.error);
    }
    const args = (out: string) => [
      "run",
      "--tier",
      `file:${dir}`,
      "--rw",
      "read",
      "--bs",
      "64k",
      "--size",
      "512k",
      "--filename",
      kept,
      "--verify",
      "--quiet",
      "--output",
      out,
    ];
    const clean = await runCli(args(join(dir, "clean.json")));
    assert.equal(clean.code, 0, clean.stderr);
    const bs = 64 * KiB;
    for (const at of [bs, 2 * bs, 3 * bs + 40, 3 * bs + 30_000, 8 * bs - 1]) {
      const copy = join(dir, `bad-${at}.dat`);
      await Deno.copyFile(kept, copy);
      await corrupt(copy, at);
      const out = join(dir, `bad-${at}.json`);
      const a = args(out);
      a[a.indexOf(kept)] = copy;
      const r = await runCli(a);
      assert.equal(r.code, 1, `corruption at ${at}: ${r.stderr}`);
      const lines = r.stderr.trim().split("\n");
      assert.equal(lines.length, 1, r.stderr);
      assert.ok(lines[0]!.includes(`file ${copy} at offset ${at}: expected 0x`), lines[0]);
      const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out)));
      assert.equal(doc.status, "failed");
      assert.equal(doc.runs.length, 1);
      assert.equal(doc.runs[0].options.verify, true);
      assert.deepEqual(await scratchLeft(dir), []);
    }
  });
});

Deno.test("--verify lays a reused read file out again when it has no headers of its bs and seed", async () => {
  await withTempDir(async (dir) => {
    await using tier = new FileTier({ kind: "file", path: dir });
    await tier.setup();
    const runs: RawJobOptions[] = [
      { rw: "read", bs: "16k", verify: false }, // laid out without headers
      { rw: "read", bs: "16k" },
      { rw: "read", bs: "64k" }, // headers every 16k do not fit 64k blocks
      { rw: "read", bs: "64k", seed: "2" },
      { rw: "randrw", bs: "64k", seed: "2", verify: false }, // rewrites blocks without headers
      { rw: "randread", bs: "64k", seed: "2" },
    ];
    for (const raw of runs) {
      const r = await runJob(tier, job(dir, { size: "1m", ...raw }));
      assert.equal(r.status, "ok", `${JSON.stringify(raw)}: ${r.error}`);
    }
  });
});

for (
  const [label, extra] of [
    ["psync, write", { rw: "write" }],
    ["libaio direct, randwrite", { rw: "randwrite", engine: "libaio", iodepth: "8", direct: true }],
  ] as const
) {
  Deno.test(`--verify reads back what a write run wrote and reports each corrupted byte at its offset (${label})`, async () => {
    await withTempDir(async (dir) => {
      const bs = 16 * KiB, blocks = 16;
      for (const at of [-1, ...offsetsToCorrupt(bs, blocks)]) {
        {
          await using tier = new FileTier({ kind: "file", path: dir });
          await tier.setup();
          let path = "";
          const r = await runJob(tier, job(dir, { bs: "16k", size: "256k", ...extra }), {
            beforeReadBack: async (files: readonly JobTarget[]) => {
              path = files[0]!.paths[0]!;
              if (at >= 0) await corrupt(path, at);
            },
          });
          assert.notEqual(path, "", "the write phase did not reach the read-back");
          if (at < 0) {
            assert.equal(r.status, "ok", r.error);
            assert.equal(r.write.io_bytes, blocks * bs);
            continue;
          }
          assertCaught(r, path, at);
        }
        assert.deepEqual(await scratchLeft(dir), []);
      }
    });
  });
}

Deno.test("BlockVerifier.stamped() builds any byte range of an object, parts joining to the whole", () => {
  const bs = 768 * KiB, length = 8 * bs, part = 5 * 1024 * KiB;
  const v = new BlockVerifier("s3", bs, 3, { runId: "r" });
  const whole = v.stamped(length)(0, length);
  const parts = [v.stamped(length)(0, part), v.stamped(length)(part, length)];
  assert.deepEqual(new Uint8Array([...parts[0]!, ...parts[1]!]), whole);
  for (let at = 0; at < length; at += bs) {
    v.checkRead(whole.subarray(at, at + bs), "s3://b/k", length + at, length + at, at);
  }
});

Deno.test("--verify passes clean data with several jobs: a shared file with a region each, and files striped round-robin", async () => {
  await withTempDir(async (dir) => {
    await using tier = new FileTier({ kind: "file", path: dir });
    await tier.setup();
    for (const layout of [{ fileLayout: "shared" }, { nrfiles: "3" }]) {
      for (const rw of ["write", "read", "randread"] as const) {
        const r = await runJob(
          tier,
          job(dir, { rw, bs: "8k", size: "192k", numjobs: "2", ...layout }),
        );
        assert.equal(r.status, "ok", `${JSON.stringify(layout)} ${rw}: ${r.error}`);
      }
    }
  });
});
