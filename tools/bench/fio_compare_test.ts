import assert from "node:assert/strict";
import { join } from "node:path";
import { IS_ROOT, sh, tempDirOnDisk, withDirForAnyone } from "../../tests/_helpers.ts";
import { needing } from "../../tests/_requirements.ts";
import { fioArgs, tierbenchArgs } from "./_fio.ts";

const FIO_COMPARE = new URL("./fio_compare.ts", import.meta.url).pathname;
const decoder = new TextDecoder();

/** The short run's options: 1 round of 1 s, no ramp, 16 MiB files. */
const SHORT = ["--rounds", "1", "--runtime", "1", "--ramp", "0", "--size", "16m"];

/** The comparison on the disk in `dir` with `args`: its exit status and all it printed. */
async function diskCompare(dir: string, args: string[]): Promise<{ code: number; text: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", FIO_COMPARE, "--dir", dir, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, text: decoder.decode(out.stdout) + decoder.decode(out.stderr) };
}

/** Nothing but the result document is left in `dir`: both scratch directories are gone. */
function assertScratchRemoved(dir: string): void {
  const left = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n !== "compare.json");
  assert.deepEqual(left, [], "scratch directories removed");
}

/** Case `c` carries each tool's CPU time per I/O, user and system apart, and their ratio. */
function assertCpuPerIo(c: {
  id: string;
  cpu_per_io_ns: Record<"tierbench" | "fio", { usr: number; sys: number }>;
  cpu_per_io_ratio: number;
}): void {
  for (const tool of ["tierbench", "fio"] as const) {
    const { usr, sys } = c.cpu_per_io_ns[tool];
    assert.ok(usr >= 0 && sys >= 0 && usr + sys > 0, `${c.id}: ${tool} ${usr}+${sys} ns`);
  }
  const { tierbench: t, fio: f } = c.cpu_per_io_ns;
  assert.ok(c.cpu_per_io_ratio > 0 && Number.isFinite(c.cpu_per_io_ratio), c.id);
  // One round: the ratio is that round's, of the totals.
  assert.ok(Math.abs(c.cpu_per_io_ratio - (t.usr + t.sys) / (f.usr + f.sys)) < 1e-9, c.id);
}

Deno.test(needing(["fio"], {
  name: "bench:fio runs every case with both tools and writes its figures (no speed asserted)",
  fn: fioCompareRuns,
}));
async function fioCompareRuns() {
  const dir = await tempDirOnDisk();
  try {
    const output = join(dir, "compare.json");
    const { code, text } = await diskCompare(dir, [
      ...SHORT,
      "--tmpfs-size",
      "16m",
      "--output",
      output,
    ]);
    assert.equal(code, 0, text);
    const doc = JSON.parse(await Deno.readTextFile(output));
    assert.equal(doc.cases.length, 10);
    assert.ok(doc.cases.some((c: { id: string }) => c.id.startsWith("null-")), "the null case");
    for (const c of doc.cases) {
      assert.ok(c.tierbench_median > 0 && c.fio_median > 0, c.id);
      assert.ok(Number.isFinite(c.ratio_median), c.id);
      assertCpuPerIo(c);
    }
    assert.ok(doc.rss.ratio_median > 0);
    assert.match(text, /\| case \| tierbench \| fio \| ratio \|/);
    assertScratchRemoved(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test(needing(["fio"], {
  name: "bench:fio --control runs fio in tierbench's turns, labels it so and skips the RSS check",
  async fn() {
    const dir = await tempDirOnDisk();
    try {
      const output = join(dir, "compare.json");
      const { code, text } = await diskCompare(dir, [
        "--control",
        "--cases",
        "seqread-1m-psync,null",
        ...SHORT.slice(2), // all of SHORT but its --rounds 1
        "--rounds",
        "2",
        "--output",
        output,
      ]);
      assert.equal(code, 0, text);
      const doc = JSON.parse(await Deno.readTextFile(output));
      assert.equal(doc.settings.control, true);
      assert.equal(doc.rss, null, "no RSS check");
      assert.deepEqual(doc.cases.map((c: { id: string }) => c.id), [
        "seqread-1m-psync-d1",
        "null-4k-randread-d1",
      ]);
      for (const c of doc.cases) {
        assert.equal(c.rounds.length, 2, c.id);
        for (const r of c.rounds) {
          // fio's figures carry no peak RSS; tierbench's always do.
          assert.ok(
            !("peak_rss_bytes" in r.tierbench),
            `${c.id}: tierbench ran in round ${r.round}`,
          );
          assert.ok(r.tierbench.iops > 0 && r.fio.iops > 0, c.id);
        }
      }
      assert.match(text, /\| case \| fio \(control\) \| fio \| ratio \|/);
      assert.match(text, /fio-\S+ vs itself \(control/);
      assert.doesNotMatch(text, /peak RSS/);
      assertScratchRemoved(dir);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
}));

/**
 * A directory on tmpfs for the loop device's backing file, and one on the
 * disk for its mount point (the comparison's temporary directory), both
 * removed afterwards: what the comparison leaves in either shows.
 */
async function withLoopDirs(fn: (shm: string, tmp: string) => Promise<void>): Promise<void> {
  const shm = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "t-fio-loop-" });
  const tmp = await tempDirOnDisk();
  try {
    await fn(shm, tmp);
  } finally {
    await Deno.remove(shm, { recursive: true });
    await Deno.remove(tmp, { recursive: true });
  }
}

/** The comparison in loop mode, its backing file under `shm` and its mount point under `tmp`. */
function loopCompare(shm: string, tmp: string, args: string[]): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", FIO_COMPARE, "--device", "loop", "--tmpfs-dir", shm, ...args],
    env: { TMPDIR: tmp },
    stdout: "piped",
    stderr: "piped",
  });
}

/** The name of the result document in the test's own temporary directory. */
const OUTPUT = "compare.json";

/** Nothing of the loop mode is left: no file, no mount, no loop device on anything under `shm`. */
async function assertNothingLeft(shm: string, tmp: string): Promise<void> {
  assert.deepEqual([...Deno.readDirSync(shm)].map((e) => e.name), [], "backing file removed");
  const inTmp = [...Deno.readDirSync(tmp)].map((e) => e.name).filter((n) => n !== OUTPUT);
  assert.deepEqual(inTmp, [], "mount point removed");
  const mounts = await Deno.readTextFile("/proc/self/mountinfo");
  assert.ok(!mounts.includes(tmp), `a mount under ${tmp} is left:\n${mounts}`);
  const loops = await sh("losetup", ["-a"]);
  assert.equal(loops.code, 0, loops.out);
  assert.ok(!loops.out.includes(shm), `a loop device backed by a file in ${shm}:\n${loops.out}`);
}

Deno.test(needing(["root", "fio"], {
  name:
    "bench:fio --device loop runs every case on a loop device and leaves no mount, loop device or backing file",
  async fn() {
    await withLoopDirs(async (shm, tmp) => {
      const output = join(tmp, OUTPUT);
      const out = await loopCompare(shm, tmp, [
        ...SHORT,
        "--tmpfs-size",
        "16m",
        "--output",
        output,
      ])
        .output();
      const text = decoder.decode(out.stdout) + decoder.decode(out.stderr);
      assert.equal(out.code, 0, text);
      const doc = JSON.parse(await Deno.readTextFile(output));
      const loop = doc.environment.loop;
      assert.equal(doc.environment.device_mode, "loop");
      assert.match(loop.device, /^\/dev\/loop\d+$/);
      assert.ok(loop.backing_file.startsWith(shm + "/"), loop.backing_file);
      assert.ok(loop.mount_point.startsWith(tmp + "/"), loop.mount_point);
      assert.equal(loop.direct_io, true);
      assert.ok(
        loop.backing_allocated_bytes >= loop.backing_bytes,
        `backing file not allocated up front: ${loop.backing_allocated_bytes} of ${loop.backing_bytes} bytes`,
      );
      assert.equal(doc.environment.fs_type, "ext4");
      // On the loop device and on tmpfs: 4k random reads with every engine at depth 1 and 32
      // (io_uring plain and registered), 1m sequential at depth 8; psync 1m; the null case.
      assert.equal(doc.cases.length, 25);
      assert.equal(doc.cases.filter((c: { id: string }) => c.id.includes("-tmpfs-")).length, 11);
      for (const c of doc.cases) {
        assert.ok(c.tierbench_min > 0 && c.fio_min > 0, c.id);
        assertCpuPerIo(c);
        assertRequestsPerIo(c);
      }
      const backers = await sh("losetup", ["-j", loop.backing_file]);
      assert.equal(backers.out.trim(), "", `still attached: ${backers.out}`);
      await assertNothingLeft(shm, tmp);
    });
  },
}));

Deno.test(needing(["root"], {
  name:
    "bench:fio --device loop: a run that fails once the loop device is mounted still removes it, in one line",
  async fn() {
    await withLoopDirs(async (shm, tmp) => {
      // `false` passes for fio's version and fails the first case's layout.
      const out = await loopCompare(shm, tmp, [...SHORT, "--fio", "false"]).output();
      const stderr = decoder.decode(out.stderr);
      assert.equal(out.code, 1, stderr);
      assert.match(
        stderr.trim(),
        /^fio-compare: fio layout .*; scratch files and loop device removed$/,
      );
      assert.equal(stderr.trim().split("\n").length, 1, stderr);
      await assertNothingLeft(shm, tmp);
    });
  },
}));

Deno.test(needing(["root", "fio"], {
  name: "bench:fio --device loop: SIGINT in the middle of a case removes the loop device",
  async fn() {
    await withLoopDirs(async (shm, tmp) => {
      const child = loopCompare(shm, tmp, [...SHORT, "--runtime", "30"]).spawn();
      // The device is mounted once the scratch directory exists inside the mount point.
      const mounted = () => {
        for (const e of Deno.readDirSync(tmp)) {
          const inside = [...Deno.readDirSync(join(tmp, e.name))].map((x) => x.name);
          if (inside.some((n) => n.startsWith("tierbench-fio-compare-"))) return true;
        }
        return false;
      };
      try {
        while (!mounted()) await new Promise((r) => setTimeout(r, 50));
      } catch (e) {
        child.kill("SIGKILL");
        await child.output();
        throw e;
      }
      child.kill("SIGINT");
      const out = await child.output();
      const stderr = decoder.decode(out.stderr);
      assert.equal(out.code, 1, stderr);
      assert.match(stderr, /interrupted by SIGINT; scratch files and loop device removed/);
      await assertNothingLeft(shm, tmp);
    });
  },
}));

/**
 * The loop device's requests per I/O: each tool's, every round, on the loop
 * device's cases (a random 4 KiB read is one request, a 1 MiB one one or two,
 * give or take the file system's own); none on tmpfs and the null tier.
 */
function assertRequestsPerIo(
  c: {
    id: string;
    device_requests_per_io?: unknown;
    rounds: { device_requests_per_io?: unknown }[];
  },
): void {
  const pairs = [c.device_requests_per_io, ...c.rounds.map((r) => r.device_requests_per_io)];
  if (c.id.includes("-tmpfs-") || c.id.startsWith("null")) {
    assert.ok(pairs.every((p) => p === undefined), `${c.id}: ${JSON.stringify(pairs)}`);
    return;
  }
  for (const p of pairs as { tierbench: number; fio: number }[]) {
    for (const v of [p.tierbench, p.fio]) {
      const most = c.id.startsWith("randread") ? 1.1 : c.id.startsWith("seqread") ? 2.1 : 3;
      assert.ok(v >= 0.95 && v <= most, `${c.id}: ${JSON.stringify(p)}`);
    }
  }
}

/** `deno` and the comparison bundled into one file, both readable by anyone, under `dir`. */
async function runnableByAnyone(dir: string): Promise<{ deno: string; script: string }> {
  const deno = join(dir, "deno");
  await Deno.link(Deno.execPath(), deno).catch(() => Deno.copyFile(Deno.execPath(), deno));
  const script = join(dir, "fio_compare.js");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--platform", "deno", "--quiet", "-o", script, FIO_COMPARE],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, decoder.decode(out.stderr));
  await Deno.chmod(script, 0o644);
  return { deno, script };
}

Deno.test({
  name: "bench:fio --device loop, not as root: exit 2 in one line naming why, nothing made",
  async fn() {
    await withLoopDirs(async (shm, tmp) => {
      if (!IS_ROOT) {
        assertRefused(await loopCompare(shm, tmp, []).output(), String(Deno.uid()));
      } else {
        // As nobody, with deno and a bundle of the script in a directory the user nobody can read, outside
        // the checkout (which may lie where only root can enter, as a clone under /root does).
        await withDirForAnyone(async (dir) => {
          const { deno, script } = await runnableByAnyone(dir);
          const cache = join(dir, "deno-dir");
          await Deno.mkdir(cache);
          await Deno.chown(cache, 65534, 65534);
          const out = await new Deno.Command("setpriv", {
            args: [
              ...["--reuid=65534", "--regid=65534", "--clear-groups"],
              ...[deno, "run", "--allow-all", "--no-config", "--no-lock", script],
              ...["--device", "loop", "--tmpfs-dir", shm],
            ],
            env: { DENO_DIR: cache, HOME: cache },
            stdout: "piped",
            stderr: "piped",
          }).output();
          assertRefused(out, "65534");
        });
      }
      assert.deepEqual([...Deno.readDirSync(shm)], [], "nothing made on tmpfs");
    });
  },
});

function assertRefused(out: Deno.CommandOutput, uid: string): void {
  const stderr = decoder.decode(out.stderr).trim();
  assert.equal(out.code, 2, stderr);
  assert.equal(
    stderr,
    `fio-compare: --device loop: needs root to make, mount and remove a loop device (running as uid ${uid})`,
  );
}

/** bench:fio run with `args` that it refuses before running anything: its stderr, exit 2 checked. */
async function usageError(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", FIO_COMPARE, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = decoder.decode(out.stderr).trim();
  assert.equal(out.code, 2, stderr);
  return stderr;
}

Deno.test("bench:fio --cases naming no case: exit 2 in one line listing the cases", async () => {
  const stderr = await usageError(["--device", "loop", "--cases", "null,nope"]);
  assert.match(stderr, /^fio-compare: --cases: "nope" names no case of --device loop \(.*null-4k/);
  assert.equal(stderr.split("\n").length, 1);
});

Deno.test("bench:fio --cpus-allowed: both tools' arguments pin the job thread; a list the host lacks is one line, exit 2", async () => {
  const p = {
    rw: "randread",
    bs: 4096,
    size: 1 << 20,
    engine: "io_uring",
    iodepth: 1,
    direct: true,
    runtimeS: 1,
    rampS: 0,
    cpusAllowed: "0",
  } as const;
  assert.ok(fioArgs(p, "/x/f").includes("--cpus_allowed=0"));
  const tb = tierbenchArgs(p, "file:/x");
  assert.deepEqual(tb.slice(tb.indexOf("--cpus-allowed"), tb.indexOf("--cpus-allowed") + 2), [
    "--cpus-allowed",
    "0",
  ]);
  const stderr = await usageError(["--cpus-allowed", "99999"]);
  assert.match(stderr, /^fio-compare: --cpus-allowed: "99999": CPU 99999 is beyond this host's/);
  assert.equal(stderr.split("\n").length, 1);
});
