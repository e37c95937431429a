/**
 * `tierbench workload` end to end on the local tiers: results written,
 * usage errors named, Ctrl-C leaving nothing behind.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  runCli,
  scratchLeft,
  spawnCli,
  tempMount,
  withShmDir,
  withTempDir,
} from "../tests/_helpers.ts";
import { partialPathOf } from "../core/output_file.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";
import { needing } from "../tests/_requirements.ts";
import type { ResultDocument } from "../schema/result.ts";
import { assertOneLine, assertUsageErrors, cliJson } from "../tests/_cli.ts";

Deno.test("tierbench workload zero-infinity writes a workload result with a summary and prints its table", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "zi.json");
    const r = await runCli([
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
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /zero-infinity \(median of 2\): iteration [\d.]+ s, update [\d.]+ s/);
    const doc = JSON.parse(await Deno.readTextFile(out));
    assert.equal(doc.kind, "workload");
    assert.equal(doc.status, "ok");
    assert.equal(doc.workload.name, "zero-infinity");
    assert.equal(doc.workload.setup.model, "7b");
    assert.equal(doc.workload.summary.iterations, 2);
    assert.ok(doc.workload.summary.update_s > 0);
    assert.ok(doc.workload.summary.bytes["local:read"] > 0);
    assert.equal(doc.workload.iterations.length, 3); // one warm-up
    assert.deepEqual(await scratchLeft(dir), []);
    assert.deepEqual((await scratchLeft("/dev/shm")).filter((d) => d.includes(doc.run_id)), []);
  });
});

Deno.test({
  name:
    "tierbench workload --engine io_uring: the rank streams move the same bytes per path as with libaio",
  ignore: ioUringRefusal() !== undefined,
  fn: () =>
    withTempDir(async (dir) => {
      await withShmDir(async (shm) => {
        const run = async (engine: string) => {
          const out = join(dir, `${engine}.json`);
          const r = await runCli([
            "workload",
            "zero-infinity",
            "--model",
            "7b",
            "--scale",
            "0.0002",
            "--ranks-per-node",
            "2",
            "--iterations",
            "1",
            "--tiers",
            `memory:${shm},file:${dir}`,
            "--engine",
            engine,
            "--quiet",
            "--output",
            out,
          ]);
          assert.equal(r.code, 0, r.stderr);
          const doc = JSON.parse(await Deno.readTextFile(out));
          assert.equal(doc.status, "ok", doc.error);
          assert.equal(doc.config.engine, engine);
          for (const p of doc.workload.paths) assert.equal(p.engine, engine, p.name);
          return doc.workload;
        };
        const aio = await run("libaio");
        const uring = await run("io_uring");
        assert.ok(aio.summary.bytes["local:read"] > 0 && aio.summary.bytes["local:write"] > 0);
        assert.deepEqual(uring.summary.bytes, aio.summary.bytes);
        assert.deepEqual(
          uring.paths.map((p: { name: string; direct: boolean }) => [p.name, p.direct]),
          aio.paths.map((p: { name: string; direct: boolean }) => [p.name, p.direct]),
        );
        assert.deepEqual(await scratchLeft(dir), []);
        assert.deepEqual(await scratchLeft(shm), []);
      });
    }),
});

Deno.test("tierbench workload datastates and deepspeed-checkpoint write every checkpoint to the remote tier and leave nothing", async () => {
  await withTempDir(async (dir) => {
    const remote = await Deno.makeTempDir({ dir, prefix: "remote-" });
    const local = await Deno.makeTempDir({ dir, prefix: "local-" });
    await withShmDir(async (shm) => {
      const run = async (name: string, extra: string[]) => {
        const out = join(dir, `${name}.json`);
        const { doc } = await cliJson([
          "workload",
          name,
          "--model",
          "7b",
          "--scale",
          "0.0002",
          "--ranks-per-node",
          "2",
          "--iterations",
          "2",
          "--warmup",
          "0",
          "--tiers",
          `memory:${shm},file:${local},pfs:${remote}`,
          ...extra,
          "--quiet",
        ], out);
        return doc.workload;
      };
      // 7B over 2 ranks: 12 B/param of each shard per checkpoint, a checkpoint per iteration
      const ds = await run("datastates", [
        "--host-cache-size",
        "2g",
        "--checkpoint-subgroup-size",
        "1e8",
      ]);
      assert.equal(ds.derived.checkpoint_bytes_per_param, 12);
      assert.equal(ds.derived.offload_optimizer, false);
      assert.ok(ds.derived.ring_waits_per_rank > 0);
      assert.deepEqual(
        [
          ds.derived.snapshot_blocking,
          ds.derived.flush_mode,
          ds.derived.checkpoint_subgroup_elements,
        ],
        ["copy", "ofstream", 1e8],
      );
      const perRank = ds.derived.model_states_bytes + ds.derived.checkpoint_bytes_per_rank +
        ds.derived.header_bytes;
      assert.equal(ds.summary.bytes["remote:write"], 2 * perRank);
      assert.equal(ds.summary.bytes["local:read"], undefined);
      // DeepSpeed master's integration: copies in the background, each tensor fsync'ed
      const dm = await run("datastates", [
        "--snapshot-blocking",
        "none",
        "--flush-mode",
        "pwrite-fsync",
      ]);
      assert.deepEqual([dm.derived.snapshot_blocking, dm.derived.flush_mode], [
        "none",
        "pwrite-fsync",
      ]);
      assert.equal(
        dm.summary.bytes["remote:write"],
        2 * (dm.derived.model_states_bytes + dm.derived.checkpoint_bytes_per_rank +
          dm.derived.header_bytes),
      );
      const dc = await run("deepspeed-checkpoint", []);
      assert.equal(dc.derived.checkpoint_bytes_per_param, 12);
      // the copy reads the swap files and writes them to remote, each iteration
      assert.equal(dc.summary.bytes["remote:write"], 2 * dc.derived.checkpoint_bytes_per_rank);
      // the median of the first step (no m and v to read yet) and the second
      const update = (dc.derived.first_update_read_bytes_per_rank +
        dc.derived.update_read_bytes_per_rank) / 2;
      assert.equal(
        dc.summary.bytes["local:read"],
        2 * (update + dc.derived.checkpoint_bytes_per_rank),
      );
      for (const d of [local, remote, shm]) assert.deepEqual(await scratchLeft(d), []);
    });
  });
});

Deno.test(needing(["strace"], {
  name:
    "tierbench workload datastates --flush-mode pwrite-fsync fsyncs each file it flushes, once per tensor",
  async fn() {
    await withTempDir(async (dir) => {
      const remote = await Deno.makeTempDir({ dir, prefix: "remote-" });
      await withShmDir(async (shm) => {
        const trace = join(dir, "trace"), out = join(dir, "ds.json");
        const args = ["workload", "datastates", "--model", "7b", "--scale", "0.0002"];
        const r = await new Deno.Command("strace", {
          args: [
            "-f",
            "-qq",
            "-y",
            "-e",
            "trace=fsync",
            "-o",
            trace,
            Deno.execPath(),
            "run",
            "-q",
            "--allow-all",
            join(import.meta.dirname!, "..", "main.ts"),
            ...args,
            ...["--ranks-per-node", "2", "--iterations", "1", "--warmup", "0"],
            ...["--tiers", `memory:${shm},pfs:${remote}`, "--flush-mode", "pwrite-fsync"],
            ...["--quiet", "--output", out],
          ],
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
        const doc = JSON.parse(await Deno.readTextFile(out)).workload;
        const synced = [...(await Deno.readTextFile(trace)).matchAll(/fsync\(\d+<([^>]+)>/g)]
          .map((m) => m[1]!).filter((p) => p.startsWith(remote));
        // per rank and checkpoint: the model-states file once, the optimizer file once per tensor
        // (a call another thread interrupts shows as "<unfinished ...>": its start line is counted)
        const tensors = doc.derived.checkpoint_tensors_per_rank;
        assert.equal(synced.filter((p) => p.endsWith("optim_states.pt")).length, 2 * tensors);
        assert.equal(synced.filter((p) => p.endsWith("model_states.pt")).length, 2);
      });
    });
  },
}));

Deno.test("tierbench workload refuses bad input with exit 2 and a line naming the field", async () => {
  const cases: [string[], RegExp][] = [
    [
      ["workload", "nope", "--tiers", "memory:"],
      /workload "nope" is unknown: use one of zero-infinity/,
    ],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--model", "6b"], /--model: .*7b, 13b/],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--scale", "0"], /--scale: .*\(0, 1\]/],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--tp", "3"], /--tp: 3 does not divide/],
    [
      ["workload", "zero-infinity", "--tiers", "memory:"],
      /--tiers: zero-infinity needs a local path/,
    ],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--bs", "1000"], /--bs: "1000"/],
    [["workload", "zero-infinity", "--tiers", "pfs:/a,pfs:/b"], /--tiers: name at most one remote/],
    [
      ["workload", "zero-infinity", "--tiers", "file:/tmp", "--readers", "-1"],
      /--readers: "-1" is not an integer ≥ 0/,
    ],
    [
      ["workload", "datastates", "--tiers", "memory:,pfs:/tmp", "--host-cache-size", "lots"],
      /--host-cache-size: "lots" is not a size/,
    ],
    [
      ["workload", "datastates", "--tiers", "memory:,pfs:/tmp", "--host-cache-size", "1m"],
      /--tiers: a host cache of 1048576 bytes cannot hold a tensor of 4187070464 bytes/,
    ],
    [
      ["workload", "datastates", "--tiers", "memory:,pfs:/tmp", "--offload-optimizer"],
      /--tiers: datastates needs a local path/,
    ],
    // the old share form of --remote-ratio: now the fork's integer dist_opt_ratio
    [
      ["workload", "mlp-offload", "--tiers", "file:/tmp,pfs:/tmp", "--remote-ratio", "0.33"],
      /--remote-ratio: "0.33" is a share.*i % K == 0.*use 3/,
    ],
    [
      ["workload", "mlp-offload", "--tiers", "file:/tmp,pfs:/tmp", "--remote-ratio", "1.5"],
      /--remote-ratio: "1.5" is not an integer ≥ 0/,
    ],
    [["workload", "zero-infinity", "--tiers", "file:/tmp", "--threads", "0"], /--threads: "0"/],
    [
      ["workload", "mlp-offload", "--tiers", "file:/tmp,pfs:/tmp", "--locks", "all"],
      /--locks/,
    ],
    [
      ["workload", "mlp-offload", "--tiers", "file:/tmp,pfs:/tmp", "--lock-scope", "all"],
      /--lock-scope/,
    ],
    [
      ["workload", "datastates", "--tiers", "memory:,pfs:/tmp", "--flush-mode", "fsync"],
      /--flush-mode/,
    ],
    [
      ["workload", "datastates", "--tiers", "memory:,pfs:/tmp", "--snapshot-blocking", "yes"],
      /--snapshot-blocking/,
    ],
    [
      ["workload", "datastates", "--tiers", "memory:,pfs:/tmp", "--checkpoint-subgroup-size", "0"],
      /--checkpoint-subgroup-size: "0" is not an integer ≥ 1/,
    ],
  ];
  await assertUsageErrors(cases);
});

Deno.test("tierbench workload: SIGINT stops every rank, removes scratch files, exits 1", async () => {
  await withTempDir(async (dir) => {
    const child = spawnCli([
      "workload",
      "zero-infinity",
      "--model",
      "70b",
      "--scale",
      "0.001",
      "--iterations",
      "50",
      "--tiers",
      `file:${dir}`,
      "--output",
      join(dir, "partial.json"),
    ]);
    for (let i = 0; i < 600 && (await scratchLeft(dir)).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal((await scratchLeft(dir)).length, 1, "the run never started");
    await new Promise((r) => setTimeout(r, 1500));
    child.kill("SIGINT");
    const out = await child.output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 1, stderr);
    assert.match(stderr, /interrupted by SIGINT.*scratch files removed/);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("tierbench workload datastates --background-rate: each rank's flush moves at most the rate, and the result carries its schedule", async () => {
  await withTempDir(async (dir) => {
    await withShmDir(async (shm) => {
      const remote = join(dir, "remote");
      await Deno.mkdir(remote);
      const out = join(dir, "ds.json");
      const rate = 8 * 1024 * 1024;
      const r = await runCli([
        "workload",
        "datastates",
        "--model",
        "7b",
        "--scale",
        "0.0001",
        "--ranks-per-node",
        "2",
        "--iterations",
        "1",
        "--tiers",
        `memory:${shm},file:${dir},pfs:${remote}`,
        "--background-rate",
        "8m/s",
        "--quiet",
        "--output",
        out,
      ]);
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
      const w = doc.workload!;
      const bg = w.background_rate!;
      assert.equal(bg.bytes_per_s, rate);
      assert.deepEqual(bg.schedules.map((x) => [x.rank, x.path]), [[0, "remote"], [1, "remote"]]);
      for (const rank of w.ranks) {
        const flushes = rank.phases.filter((p) => p.phase === "flush");
        assert.ok(flushes.length >= 2, JSON.stringify(rank.phases.map((p) => p.phase)));
        const s = bg.schedules.find((x) => x.rank === rank.rank)!;
        // Every background byte went on the schedule.
        assert.equal(s.bytes, flushes.reduce((t, p) => t + p.io["remote:write"]!.bytes, 0));
        assert.ok(s.requests > 0 && s.max_lag_ms >= s.end_lag_ms, JSON.stringify(s));
        assert.equal(s.interval_ms, 125); // 1 MiB requests at 8 MiB/s
        assert.equal(s.met, s.end_lag_ms <= 135);
        // Never ahead of the schedule: a flush takes at least its bytes at the rate (the 5 %
        // covers the moment between its first op's readiness and its start).
        for (const p of flushes) {
          const bw = p.io["remote:write"]!.bytes / p.time_s;
          assert.ok(bw <= 1.05 * rate, `rank ${rank.rank} flush ${bw / 2 ** 20} MiB/s`);
        }
      }
      assert.match(r.stdout, /background rate (not met \()?8m\/s per rank and path/);
      assert.equal(doc.config?.["background_rate"], rate);
    });
  });
});

Deno.test("tierbench workload --background-rate: refused with one line for a workload without background I/O, or a bad rate", async () => {
  await withTempDir(async (dir) => {
    const base = ["workload", "--model", "7b", "--scale", "0.0001", "--iterations", "1"];
    for (
      const [args, pattern] of [
        [
          ["zero-infinity", "--tiers", `memory:/dev/shm,file:${dir}`, "--background-rate", "8m"],
          /--background-rate: zero-infinity has no background I\/O to pace/,
        ],
        [
          ["datastates", "--tiers", `memory:/dev/shm,file:${dir}`, "--background-rate", "fast"],
          /--background-rate: "fast" is not a rate in bytes\/s/,
        ],
        [
          ["datastates", "--tiers", `memory:/dev/shm,file:${dir}`, "--background-rate", "8192t/s"],
          /--background-rate: "8192t\/s" is too large: a size is at most 2\^53 − 1 bytes/,
        ],
      ] as const
    ) {
      const r = await runCli([base[0]!, args[0], ...base.slice(1), ...args.slice(1), "--quiet"]);
      assertOneLine(r, 2, pattern);
    }
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test(needing(["root"], {
  name: "tierbench workload on a full file system: one line, and its hint names --scale, " +
    "what sets a workload's size (not run's --size)",
  async fn() {
    // room for the bytes (the run checks them first), not for the files: the inodes run out
    await using mnt = await tempMount("tmpfs", "size=256m,nr_inodes=12");
    const out = join(mnt.path, "..", `enospc-${crypto.randomUUID()}.json`);
    try {
      const r = await runCli([
        ...["workload", "zero-infinity", "--model", "7b", "--scale", "0.001"],
        ...["--iterations", "1", "--warmup", "0", "--ranks-per-node", "2"],
        ...["--tiers", `file:${mnt.path}`, "--quiet", "--output", out],
      ]);
      assertOneLine(r, 1, /ENOSPC.*; free space on that file system or use a smaller --scale\b/);
      assert.doesNotMatch(r.stderr, /--size/);
      const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out))) as ResultDocument;
      assert.match(doc.error!, /use a smaller --scale$/);
      assert.deepEqual(await scratchLeft(mnt.path), []);
    } finally {
      await Deno.remove(partialPathOf(out)).catch(() => {});
    }
  },
}));
