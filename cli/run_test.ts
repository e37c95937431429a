import assert from "node:assert/strict";
import { join } from "node:path";
import { loadProfile } from "../solver/profile.ts";
import {
  IS_ROOT,
  runCli,
  scratchLeft,
  sh,
  spawnCli,
  tempMount,
  withTempDir,
} from "../tests/_helpers.ts";
import { assertOneLine } from "../tests/_cli.ts";
import { needing } from "../tests/_requirements.ts";
import { formatTables } from "./_finish.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";
import { partialPathOf } from "../core/output_file.ts";

Deno.test("tierbench run: the documented form writes fio's fields and removes its scratch files", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "out.json");
    const r = await runCli([
      "run",
      "--tier",
      `file:${dir}`,
      "--rw",
      "read",
      "--bs",
      "1m",
      "--iodepth",
      "8",
      "--numjobs",
      "1",
      "--engine",
      "libaio",
      "--direct",
      "--size",
      "32m",
      "--runtime",
      "1",
      "--ramp",
      "0.5",
      "--output",
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /bandwidth/);
    const doc = JSON.parse(await Deno.readTextFile(out));
    assert.equal(doc.schema, "tierbench/result@1");
    assert.equal(doc.status, "ok");
    for (const k of ["cpu_model", "cores", "memory_bytes", "kernel"]) assert.ok(k in doc.host, k);
    const run = doc.runs[0];
    assert.equal(run.tier.fs.fs_type.length > 0, true);
    assert.equal(run.options.iodepth, 8);
    for (
      const k of ["io_bytes", "bw_bytes", "iops", "runtime", "lat_ns", "clat_ns", "slat_ns", "hist"]
    ) {
      assert.ok(k in run.read, k);
    }
    for (const p of ["50.000000", "99.000000", "99.990000"]) {
      assert.ok(p in run.read.lat_ns.percentile);
    }
    assert.ok(run.read.io_bytes > 0);
    assert.equal(run.ramp.ms, 500);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test({
  name: "tierbench run --engine io_uring: O_DIRECT random reads at depth 32 with registered " +
    "buffers and files, the kernel's features in the results",
  ignore: ioUringRefusal() !== undefined,
  fn: () =>
    withTempDir(async (dir) => {
      const out = join(dir, "out.json");
      const r = await runCli([
        "run",
        "--tier",
        `file:${dir}`,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--iodepth",
        "32",
        "--engine",
        "io_uring",
        "--fixedbufs",
        "--registerfiles",
        "--direct",
        "--size",
        "8m",
        "--runtime",
        "1",
        "--output",
        out,
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /io_uring\+direct/);
      const run = JSON.parse(await Deno.readTextFile(out)).runs[0];
      assert.equal(run.status, "ok");
      assert.equal(run.options.engine, "io_uring");
      assert.match(run.options.engine_impl, /^raw io_uring syscalls.*kernel features: /);
      assert.equal(run.options.io_uring.fixedbufs, true);
      assert.equal(run.options.io_uring.registerfiles, true);
      assert.equal(run.options.io_uring.sqthread_poll, false);
      assert.ok(run.options.io_uring.features.includes("NODROP"), run.options.io_uring.features);
      assert.ok(run.read.total_ios > 0);
      assert.deepEqual(await scratchLeft(dir), []);
    }),
});

Deno.test("tierbench run: --iodepth 8 without --engine picks io_uring where the kernel allows it and says why; --iodepth 1 stays psync", async () => {
  await withTempDir(async (dir) => {
    const run = async (iodepth: string) => {
      const out = join(dir, `d${iodepth}.json`);
      const r = await runCli([
        "run",
        "--tier",
        `file:${dir}`,
        "--bs",
        "64k",
        "--iodepth",
        iodepth,
        "--size",
        "2m",
        "--output",
        out,
      ]);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(await Deno.readTextFile(out)).runs[0];
    };
    const deep = await run("8");
    assert.equal(deep.status, "ok");
    if (ioUringRefusal() === undefined) {
      assert.equal(deep.options.engine, "io_uring");
      assert.deepEqual(deep.options.engine_choice, {
        chosen: "io_uring",
        why: "--iodepth 8 without --engine: io_uring is available",
      });
      assert.ok(deep.options.io_uring.features.length > 0);
    } else {
      assert.equal(deep.options.engine, "libaio");
      assert.match(
        deep.options.engine_choice.why,
        /^--iodepth 8 without --engine: io_uring_setup failed with E\w+ \(kernel\.io_uring_disabled .*\), libaio instead$/,
      );
    }
    assert.equal(deep.read.io_bytes, 2 * 1024 * 1024);
    const one = await run("1");
    assert.equal(one.options.engine, "psync");
    assert.equal("engine_choice" in one.options, false);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test("tierbench run: io_uring's options without --engine io_uring exit 2 naming the option", async () => {
  assertOneLine(
    await runCli(["run", "--tier", "null:", "--fixedbufs"]),
    2,
    /--fixedbufs: applies to --engine io_uring only/,
  );
});

Deno.test("tierbench run: an unknown option value exits 2 naming the field and allowed values", async () => {
  const r = await runCli(["run", "--tier", "null:", "--rw", "sideways"]);
  assertOneLine(r, 2, /--rw.*sideways.*read, write, randread, randwrite, rw, randrw/);
  const e = await runCli(["run", "--tier", "null:", "--engine", "spdk"]);
  assertOneLine(e, 2, /--engine.*psync, libaio, io_uring/);
  const t = await runCli(["run", "--tier", "tape:/dev/st0"]);
  assertOneLine(t, 2, /--tier: unknown tier/);
  const u = await runCli(["run", "--tier", "null:", "--frobnicate"]);
  assertOneLine(u, 2, /--frobnicate: is not an option of run/);
});

Deno.test("tierbench run: a bad size exits 2 naming the field", async () => {
  assertOneLine(
    await runCli(["run", "--tier", "null:", "--bs", "12q"]),
    2,
    /--bs: "12q" is not a size/,
  );
  assertOneLine(
    await runCli(["run", "--tier", "null:", "--size", "big"]),
    2,
    /--size: "big" is not a size/,
  );
  assertOneLine(
    await runCli(["run", "--tier", "null:", "--size", "8192t"]),
    2,
    /--size: "8192t" is too large: a size is at most 2\^53 − 1 bytes/,
  );
});

Deno.test("tierbench run: a missing path exits 2 naming it", async () => {
  const r = await runCli(["run", "--tier", "file:/nonexistent/tierbench-dir", "--size", "1m"]);
  assertOneLine(r, 2, /\/nonexistent\/tierbench-dir does not exist/);
});

Deno.test("tierbench run: bs not aligned for O_DIRECT exits 2 and leaves no scratch", async () => {
  await withTempDir(async (dir) => {
    const r = await runCli([
      "run",
      "--tier",
      `file:${dir}`,
      "--bs",
      "1000",
      "--size",
      "1m",
      "--direct",
    ]);
    assertOneLine(r, 2, /--bs: 1000 bytes is not a multiple of \d+.*O_DIRECT/);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});

Deno.test(needing(IS_ROOT ? ["chattr"] : [], {
  name: "tierbench run: no permission to write exits 1 with the cause",
  fn: noPermissionToWrite,
}));
async function noPermissionToWrite() {
  await withTempDir(async (dir) => {
    const locked = join(dir, "locked");
    await Deno.mkdir(locked);
    // Root ignores mode bits, so make the directory immutable instead.
    const lock = IS_ROOT ? await sh("chattr", ["+i", locked]) : { code: 0, out: "" };
    if (!IS_ROOT) await Deno.chmod(locked, 0o500);
    assert.equal(lock.code, 0, lock.out);
    try {
      const r = await runCli(["run", "--tier", `file:${locked}`, "--size", "1m"]);
      assertOneLine(r, 1, /mkdir .*locked: (EPERM|EACCES).*may write/);
    } finally {
      if (IS_ROOT) await sh("chattr", ["-i", locked]);
      else await Deno.chmod(locked, 0o700);
    }
  });
}

Deno.test(needing(["root"], {
  name: "tierbench run: a file system that refuses O_DIRECT exits 1 and says so",
  fn: async () => {
    await using mnt = await tempMount("ramfs", "size=16m");
    const r = await runCli(["run", "--tier", `file:${mnt.path}`, "--size", "1m", "--direct"]);
    assertOneLine(r, 1, /\(ramfs\) refuses O_DIRECT.*without --direct/);
    assert.deepEqual(await scratchLeft(mnt.path), []);
  },
}));

Deno.test(needing(["root"], {
  name: "tierbench run: ENOSPC exits 1 with the cause and leaves no scratch file",
  fn: async () => {
    // The file fits the free space the run checks first (8 MiB of 8), and no longer does once
    // the scratch directory's marker takes its page: posix_fallocate meets ENOSPC.
    await using mnt = await tempMount("tmpfs", "size=8m");
    const out = join(mnt.path, "..", `enospc-${crypto.randomUUID()}.json`);
    try {
      const r = await runCli([
        "run",
        "--tier",
        `file:${mnt.path}`,
        "--rw",
        "write",
        "--bs",
        "1m",
        "--size",
        "8m",
        "--output",
        out,
      ]);
      assertOneLine(r, 1, /ENOSPC.*free space.* a smaller --size\b/);
      assert.deepEqual(await scratchLeft(mnt.path), []);
      const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out)));
      assert.equal(doc.status, "failed");
      assert.match(doc.error, /ENOSPC/);
    } finally {
      await Deno.remove(partialPathOf(out)).catch(() => {});
    }
  },
}));

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  Deno.test(`tierbench run: ${signal} writes partial results, removes scratch files, exits 1`, async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, "partial.json");
      const child = spawnCli([
        "run",
        "--tier",
        `file:${dir}`,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "16m",
        "--runtime",
        "120",
        "--direct",
        "--output",
        out,
      ]);
      // Wait until the run has made its scratch directory, then give it a moment to measure.
      for (let i = 0; i < 600 && (await scratchLeft(dir)).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal((await scratchLeft(dir)).length, 1, "the run never started");
      await new Promise((r) => setTimeout(r, 1500));
      child.kill(signal);
      const res = await child.output();
      const r = {
        code: res.code,
        stdout: new TextDecoder().decode(res.stdout),
        stderr: new TextDecoder().decode(res.stderr),
      };
      assertOneLine(
        r,
        1,
        new RegExp(`interrupted by ${signal}.*partial results in .*partial\\.json`),
      );
      const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out)));
      assert.equal(doc.status, "interrupted");
      assert.equal(doc.runs[0].status, "interrupted");
      assert.deepEqual(await scratchLeft(dir), []);
    });
  });
}

/**
 * bench's last screen: at most 50 rows of a 100-column terminal — the tiers, the curves, the
 * matrix, the workloads, each line at most 100 columns — then the file and the command that draws
 * it (one line to paste, which a terminal wraps when the paths are long).
 */
function assertBenchSummary(stdout: string, out: string): void {
  const lines = stdout.trimEnd().split("\n");
  const rows = lines.reduce((n, l) => n + Math.max(1, Math.ceil([...l].length / 100)), 0);
  assert.ok(rows <= 50, `${rows} rows at 100 columns:\n${stdout}`);
  for (const l of lines.slice(0, -1)) {
    assert.ok([...l].length <= 100, `wider than 100 columns: ${l}`);
  }
  assert.match(stdout, /bandwidth in MiB\/s/);
  assert.match(stdout, /^memory\s+[\d,.]+\s+[\d,.]+\s+[\d,.]+ \+ [\d,.]+\s+[\d,]+\s+[\d.,]+$/m);
  assert.match(stdout, /1 proc × 8 deep/);
  assert.match(
    stdout,
    /^harness ceiling \(null tier: no I\/O\), 4 KiB reads, 1 proc × 1 deep: [\d,]+ IOPS/m,
  );
  // the curves and the matrix: a column saying reading, writing or both
  for (const io of ["reading", "writing", "both"]) {
    assert.match(stdout, new RegExp(`^file\\s+(1 MiB\\s+)?${io}\\s+[\\d,.]+`, "m"));
  }
  assert.match(stdout, /^file\s+reading\s+[\d,.]+\s+[·\d.]+×?\s/m);
  assert.match(stdout, /^zero-infinity\s+local\s+[\d.]+/m);
  const last = lines.at(-1)!;
  assert.match(last, /^results: \S+; next: .*tierbench report \S+$/);
  assert.ok(out.endsWith(last.split(" ").at(-1)!), last);
}

Deno.test("tierbench bench: profiles memory, file and a pfs directory into one profile", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "profile.json");
    const r = await runCli([
      "bench",
      "--file-dir",
      dir,
      "--pfs",
      dir,
      "--runtime",
      "200ms",
      "--ramp",
      "0",
      "--size",
      "8m",
      "--processes",
      "1",
      "--concurrency-bs",
      "1m",
      "--output",
      out,
      "--quiet",
    ]);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(await Deno.readTextFile(out));
    assert.equal(doc.kind, "profile");
    assert.equal(doc.status, "ok");
    // null, then 7 points on each of memory, file and pfs; then each one's curve point at 1
    // process: read, write and the mixed read and write
    assert.equal(doc.runs.length, 22 + 3 * 4);
    assert.deepEqual(
      doc.concurrency.tiers.map((
        t: { label: string; curves: unknown[] },
      ) => [t.label, t.curves.length]),
      [["memory", 1], ["file", 1], ["pfs", 1]],
    );
    // then the short training workloads: an optimizer pair (mlp-offload since a pfs is named)
    // and an activation workload, each with its summary
    assert.deepEqual(
      doc.workloads.map((w: { name: string }) => w.name),
      ["zero-infinity", "mlp-offload", "ssdtrain"],
    );
    for (
      const w of doc.workloads as {
        name: string;
        setup: { model: string };
        summary: { iteration_s: number };
      }[]
    ) {
      assert.equal(w.setup.model, "70b");
      assert.ok(w.summary.iteration_s > 0, w.name);
    }
    assert.ok(doc.workloads[0].summary.update_s > 0);
    assert.ok(doc.workloads[1].summary.bytes["remote:read"] > 0);
    assert.ok(doc.workloads[2].summary.bytes["local:write"] > 0);
    assertBenchSummary(r.stdout, out);
    // --verbose's table instead: a row per run and direction, every curve run among them
    const rows = formatTables(doc, true).split("\n").filter((l) =>
      /│ (reading|writing)\s+│/.test(l)
    );
    const directions = (doc.runs as { read: { total_ios: number }; write: { total_ios: number } }[])
      .reduce(
        (n, run) => n + (run.read.total_ios > 0 ? 1 : 0) + (run.write.total_ios > 0 ? 1 : 0),
        0,
      );
    assert.equal(rows.length, directions, "a row per run and direction, curve runs among them");
    assert.ok(
      rows.some((l) =>
        /│ memory read 1m 1p mixed\s+│.*│ reading\s+│.*│\s+1 proc × 8 deep │/.test(l)
      ),
    );
    // the profile reads back for the solver, with the tier's mixed read+write figures
    const profile = loadProfile(doc, out);
    assert.ok(profile.tiers.file!.mixed_read_bw_bytes! > 0);
    assert.ok(profile.tiers.file!.mixed_write_bw_bytes! > 0);
    assert.deepEqual(
      [...new Set(doc.runs.map((run: { tier: { kind: string } }) => run.tier.kind))],
      ["null", "memory", "file", "pfs"],
    );
    assert.equal(doc.remote.configured, true);
    assert.deepEqual(await scratchLeft(dir), []);
  });
});
