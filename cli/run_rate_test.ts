/**
 * `tierbench run --rate / --rate-iops / --rate-process`: open loop on real
 * tiers. No assertion is about speed: at an easy rate the job moves the rate
 * times the runtime (the definition of the mode), and against a tier
 * throttled to a quarter of the rate it falls behind by construction.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type CliResult, ROOT, runCli, sh, tempDirOnDisk, withTempDir } from "../tests/_helpers.ts";
import { assertUsageErrors } from "../tests/_cli.ts";
import { needing } from "../tests/_requirements.ts";
import type { ResultDocument, RunResult } from "../schema/result.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";

const MiB = 1024 * 1024;

async function runAt(dir: string, args: string[]): Promise<{ r: CliResult; run: RunResult }> {
  const out = join(dir, "out.json");
  const r = await runCli(["run", ...args, "--quiet", "--output", out]);
  assert.equal(r.code, 0, `exit ${r.code}, stderr: ${r.stderr}`);
  const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
  return { r, run: doc.runs[0]! };
}

Deno.test("tierbench run --rate: at a rate the tier serves easily the job moves rate × runtime and meets its schedule", async () => {
  await withTempDir(async (dir) => {
    const { r, run } = await runAt(dir, [
      "--tier",
      "null:",
      "--rw",
      "write",
      "--bs",
      "64k",
      "--rate",
      "50m",
      "--runtime",
      "1",
      "--log-avg-msec",
      "250",
    ]);
    // 50 MiB/s for 1 s; ±20 % is the definition of the mode, not a speed target.
    const moved = run.write.io_bytes;
    assert.ok(moved > 0.8 * 50 * MiB && moved < 1.2 * 50 * MiB, `moved ${moved / MiB} MiB`);
    assert.deepEqual(run.options.rate, { bytes_per_s: 50 * MiB, iops: null, process: "linear" });
    const s = run.schedule!;
    assert.equal(s.met, true, JSON.stringify(s));
    assert.equal(s.interval_ms, 1.25);
    assert.equal(s.tolerance_ms, 11.25);
    assert.ok(s.issued_ios <= s.intended_ios);
    assert.ok(s.intended_ios >= 0.8 * 800 && s.intended_ios <= 800, String(s.intended_ios));
    // Never ahead: a job issues no request before its intended start.
    assert.ok(run.write.total_ios <= 800);
    assert.equal(run.timeseries.lag_ms?.length, run.timeseries.t_ms.length);
    assert.equal(run.timeseries.write_lat_ns?.length, run.timeseries.t_ms.length);
    assert.deepEqual(run.timeseries.read_lat_ns, run.timeseries.t_ms.map(() => null));
    assert.doesNotMatch(r.stdout, /rate not met/);
    assert.doesNotMatch(r.stdout, /behind/);
  });
});

Deno.test("tierbench run --rate-iops --rate-process poisson: runs on the memory tier and reports its schedule met", async () => {
  await withTempDir(async (dir) => {
    const { run } = await runAt(dir, [
      "--tier",
      "memory:",
      "--rw",
      "randread",
      "--bs",
      "4k",
      "--size",
      "4m",
      "--rate-iops",
      "500",
      "--rate-process",
      "poisson",
      "--runtime",
      "1",
    ]);
    assert.deepEqual(run.options.rate, { bytes_per_s: null, iops: 500, process: "poisson" });
    const s = run.schedule!;
    assert.equal(s.met, true, JSON.stringify(s));
    assert.equal(s.interval_ms, 2);
    // Exponential gaps from a fixed seed: about 500 starts in 1 s, the same every run.
    assert.ok(s.intended_ios > 0.8 * 500 && s.intended_ios < 1.2 * 500, String(s.intended_ios));
    assert.ok(run.read.total_ios > 0);
    // clat is from submission, lat from the intended start: never shorter.
    assert.ok(run.read.lat_ns.mean >= run.read.clat_ns.mean);
  });
});

Deno.test("tierbench run: a closed-loop run's result has no rate, schedule or lag series", async () => {
  await withTempDir(async (dir) => {
    const { run } = await runAt(dir, ["--tier", "null:", "--size", "1m"]);
    assert.equal(run.options.rate, undefined);
    assert.equal(run.schedule, undefined);
    assert.equal(run.timeseries.lag_ms, undefined);
  });
});

Deno.test("tierbench run: bad rate options exit 2 naming the field and what is allowed", async () => {
  await assertUsageErrors([
    [["run", "--tier", "null:", "--rate", "fast"], /--rate: "fast" is not a size/],
    [
      ["run", "--tier", "null:", "--rate-iops", "0"],
      /--rate-iops: "0" is not an integer from 1 to/,
    ],
    [["run", "--tier", "null:", "--rate_iops", "1.5"], /--rate-iops: "1.5" is not an integer/],
    [
      ["run", "--tier", "null:", "--rate", "1m", "--rate-process", "uniform"],
      /--rate-process <process>' argument 'uniform' is invalid\. Allowed choices are linear, poisson/,
    ],
    // fio's spelling: the same field and choices
    [
      ["run", "--tier", "null:", "--rate", "1m", "--rate_process", "uniform"],
      /--rate_process <process>' argument 'uniform' is invalid\. Allowed choices are linear, poisson/,
    ],
    [
      ["run", "--tier", "null:", "--rate-process", "poisson"],
      /--rate-process: applies with --rate or --rate-iops only/,
    ],
    [
      ["run", "--tier", "null:", "--rate", "1m", "--rate-iops", "10"],
      /--rate: and --rate-iops were both given.*give one/,
    ],
    [
      ["run", "--tier", "s3://bucket", "--rate", "1m"],
      /--rate: is not available on an s3 tier yet.*allowed: null, memory, file and pfs tiers/,
    ],
  ]);
});

/** The engines that keep several requests in flight, each with why it is left out here, if it is. */
const DEPTH_ENGINES = [
  { engine: "libaio", refused: undefined },
  { engine: "io_uring", refused: ioUringRefusal() },
] as const;

for (const { engine, refused } of DEPTH_ENGINES) {
  Deno.test({
    name: `tierbench run --rate --iodepth 8 --engine ${engine}: on O_DIRECT files at a rate the ` +
      "tier serves easily the job moves rate × runtime and meets its schedule" +
      (refused === undefined ? "" : ` (ignored: ${refused})`),
    ignore: refused !== undefined,
    fn: async () => {
      // As root the files are on a loop device over /dev/shm (O_DIRECT, no throttle): this VM's
      // disk can stall a write for tens of ms when its host flushes, which is not what is tested.
      await withEasyDirectDir(async (dir) => {
        const { r, run } = await runAt(dir, [
          "--tier",
          `file:${dir}`,
          "--direct",
          "--engine",
          engine,
          "--iodepth",
          "8",
          "--rw",
          "write",
          "--bs",
          "64k",
          "--size",
          "16m",
          "--rate",
          "8m",
          "--runtime",
          "1",
          "--log-avg-msec",
          "250",
        ]);
        // 8 MiB/s for 1 s: 128 requests of 64 KiB are intended; ±25 % is the definition of the
        // mode, not a speed target (a disk that serves 8 MiB/s is all it takes).
        const moved = run.write.io_bytes;
        assert.ok(moved > 0.75 * 8 * MiB && moved <= 8 * MiB + 64 * 1024, `moved ${moved / MiB}`);
        assert.equal(run.options.iodepth, 8);
        const s = run.schedule!;
        assert.equal(s.met, true, JSON.stringify(s));
        assert.ok(s.intended_ios >= 0.75 * 128 && s.intended_ios <= 128, JSON.stringify(s));
        assert.ok(s.issued_ios <= s.intended_ios, JSON.stringify(s));
        // Never ahead of the schedule, whatever the depth.
        assert.ok(run.write.total_ios <= 128, String(run.write.total_ios));
        assert.ok(run.write.lat_ns.mean >= run.write.clat_ns.mean);
        assert.doesNotMatch(r.stdout, /rate not met/);
      });
    },
  });
}

/**
 * Runs `fn` in a directory where O_DIRECT writes do not stall: as root, on a
 * loop device over /dev/shm; otherwise in a temporary directory on disk.
 */
async function withEasyDirectDir(fn: (dir: string) => Promise<void>): Promise<void> {
  if (Deno.uid() !== 0) return await withTempDir(fn);
  await withThrottledLoop(null, (mount) => fn(mount));
}

/**
 * Runs `fn` with an ext4 file system on a loop device (direct I/O, backed by
 * /dev/shm), in a blkio cgroup that caps its writes at `writeBps` (none when null).
 */
async function withThrottledLoop(
  writeBps: number | null,
  fn: (mount: string, cgroup: string) => Promise<void>,
): Promise<void> {
  const backing = await Deno.makeTempFile({ dir: "/dev/shm", prefix: "tierbench-rate-" });
  const mount = await tempDirOnDisk();
  const cgroup = `/sys/fs/cgroup/blkio/tierbench-rate-${Deno.pid}`;
  let loop = "";
  let mounted = false;
  try {
    await Deno.truncate(backing, 256 * MiB);
    const l = await sh("losetup", ["--find", "--show", "--direct-io=on", backing]);
    assert.equal(l.code, 0, l.out);
    loop = l.out.trim().split("\n").at(-1)!;
    const mk = await sh("mkfs.ext4", ["-q", "-F", loop]);
    assert.equal(mk.code, 0, mk.out);
    const m = await sh("mount", [loop, mount]);
    assert.equal(m.code, 0, m.out);
    mounted = true;
    const dev = (await sh("lsblk", ["-ndo", "MAJ:MIN", loop])).out.trim();
    if (writeBps !== null) {
      await Deno.mkdir(cgroup);
      await Deno.writeTextFile(`${cgroup}/blkio.throttle.write_bps_device`, `${dev} ${writeBps}`);
    }
    await fn(mount, cgroup);
  } finally {
    if (mounted) await sh("umount", [mount]);
    if (loop) await sh("losetup", ["-d", loop]);
    await Deno.remove(cgroup).catch(() => {});
    await Deno.remove(mount, { recursive: true }).catch(() => {});
    await Deno.remove(backing).catch(() => {});
  }
}

/** The mean of the non-null values. */
function mean(xs: readonly (number | null)[]): number {
  const v = xs.filter((x): x is number => x !== null);
  return v.reduce((a, x) => a + x, 0) / v.length;
}

/**
 * Runs tierbench at 40 MiB/s against a loop device whose writes are capped at
 * 10 MiB/s, with `extra` options, and checks that the run falls behind, says
 * so, and that latency grows with the lag; `latOverClat` is how many times the
 * median clat the median lat must exceed (the lag between them).
 */
async function behindThrottle(extra: readonly string[], latOverClat: number): Promise<void> {
  await withThrottledLoop(10 * MiB, async (mount, cgroup) => {
    const out = join(mount, "..", `rate-${Deno.pid}.json`);
    try {
      // The child joins the cgroup, then becomes tierbench: its O_DIRECT writes to the loop
      // device are capped at 10 MiB/s, a quarter of the 40 MiB/s it is asked for.
      const child = new Deno.Command("bash", {
        args: [
          "-c",
          'echo $$ >"$0/cgroup.procs" && exec "$@"',
          cgroup,
          Deno.execPath(),
          "run",
          "-q",
          "-A",
          join(ROOT, "main.ts"),
          "run",
          "--tier",
          `file:${mount}`,
          "--direct",
          ...extra,
          "--rw",
          "write",
          "--bs",
          "64k",
          "--size",
          "32m",
          "--rate",
          "40m",
          "--runtime",
          "2",
          "--log-avg-msec",
          "250",
          "--quiet",
          "--output",
          out,
        ],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      });
      const o = await child.output();
      const stdout = new TextDecoder().decode(o.stdout);
      const stderr = new TextDecoder().decode(o.stderr);
      assert.equal(o.code, 0, stderr);
      const run = (JSON.parse(await Deno.readTextFile(out)) as ResultDocument).runs[0]!;
      const s = run.schedule!;
      assert.equal(s.met, false, JSON.stringify(s));
      // 2 s at 4× what the tier takes: about 1.5 s behind at the end; > 0.5 s is certain.
      assert.ok(s.final_lag_ms > 500, JSON.stringify(s));
      assert.ok(s.max_lag_ms >= s.final_lag_ms);
      assert.ok(s.issued_ios < s.intended_ios, JSON.stringify(s));
      // Latency grows with the time behind schedule: the later intervals' mean latency (from
      // intended starts) and lag exceed the earlier ones'.
      const lat = run.timeseries.write_lat_ns!;
      const lag = run.timeseries.lag_ms!;
      const half = Math.floor(lat.length / 2);
      assert.ok(lat.length >= 4, JSON.stringify(run.timeseries));
      assert.ok(
        mean(lat.slice(half)) > mean(lat.slice(0, half)),
        JSON.stringify(run.timeseries),
      );
      assert.ok(lag.at(-1)! > lag[0]!, JSON.stringify(lag));
      // lat counts from intended starts, clat from submission: the gap is the lag.
      assert.ok(
        run.write.lat_ns.percentile["50.000000"]! >
          latOverClat * run.write.clat_ns.percentile["50.000000"]!,
        JSON.stringify({ lat: run.write.lat_ns.percentile, clat: run.write.clat_ns.percentile }),
      );
      assert.match(stdout, /│ behind \d+\.\d\d s/);
      assert.match(stdout, /^rate not met: .* s behind its schedule of 40\.0 MiB\/s per job/m);
    } finally {
      await Deno.remove(out).catch(() => {});
    }
  });
}

Deno.test(needing(["root"], {
  name:
    "tierbench run --rate: above what a throttled tier serves, the run falls behind, says so, and latency grows with the lag",
  fn: () => behindThrottle([], 10),
}));

for (const { engine, refused } of DEPTH_ENGINES) {
  const t = needing(["root"], {
    name: `tierbench run --rate --iodepth 8 --engine ${engine}: above what a throttled tier ` +
      "serves, every slot fills, the run falls behind, says so, and latency grows with the lag" +
      (refused === undefined ? "" : ` (ignored: ${refused})`),
    // 8 in flight share the 10 MiB/s: each request's clat is about 8 × 6.4 ms, its lat the lag
    // on top (0 to about 1.5 s over the run), so lat's median is several times clat's.
    fn: () => behindThrottle(["--engine", engine, "--iodepth", "8"], 3),
  });
  Deno.test(refused === undefined ? t : { ...t, ignore: true });
}
