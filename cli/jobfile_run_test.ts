/**
 * Job files run by fio 3.33 and by tierbench, side by side: what each job
 * did (its I/Os and bytes, its group), how the jobs were ordered and ended
 * (wait_for, new_group, exitall, --trigger-timeout), flow's proportions, a
 * minimum rate not met, errors gone on after, the written data's
 * compressibility and repeats, command-line defaults and --section.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { needing } from "../tests/_requirements.ts";
import { fio, fioStatus } from "../tests/_fio.ts";
import { runCli, tempMount, withTempDir } from "../tests/_helpers.ts";

type Obj = Record<string, unknown>;
type Job = { jobname: string; groupid: number; read: Obj; write: Obj; [k: string]: unknown };

/** The same job file run by fio and by tierbench (fio-json), each in a directory of its own. */
async function both(dir: string, text: string, args: string[] = []) {
  const f = join(dir, "fio"), t = join(dir, "tb");
  await Deno.mkdir(f);
  await Deno.mkdir(t);
  for (const d of [f, t]) await Deno.writeTextFile(join(d, "j.fio"), text);
  const theirs = JSON.parse(await fio(["--output-format=json", ...args, "j.fio"], f));
  const r = await runCli(
    ["run", "j.fio", ...args, "--quiet", "--output-format", "fio-json", "--output", "-"],
    { cwd: t },
  );
  assert.equal(r.code, 0, r.stderr);
  return { fio: theirs.jobs as Job[], tb: JSON.parse(r.stdout).jobs as Job[], f, t };
}

const ios = (j: Job, d: "read" | "write") => j[d].total_ios as number;
const bytes = (j: Job, d: "read" | "write") => j[d].io_bytes as number;

Deno.test(
  needing(["fio"], {
    name: "wait_for, new_group and numjobs clones on one file: each job's I/Os, bytes and " +
      "group as fio's",
    async fn() {
      await withTempDir(async (dir) => {
        const text = "[global]\nthreads=1\ngroup_reporting\nfilename=data\nfilesize=8m\n" +
          "[writers]\nrw=write\nbs=128k\nnumjobs=2\nruntime=10\n" +
          "[readers]\nnew_group\nwait_for=writers\nrw=randread\nbs=4k\nnumjobs=2\n" +
          "[writers2]\nnew_group\nwait_for=readers\nrw=randwrite\nbs=16k\nnumjobs=2\n";
        const { fio: theirs, tb } = await both(dir, text);
        assert.deepEqual(tb.map((j) => j.jobname), theirs.map((j) => j.jobname));
        for (const [i, j] of tb.entries()) {
          const f = theirs[i]!;
          assert.equal(j.groupid, f.groupid, `${j.jobname} groupid`);
          for (const d of ["read", "write"] as const) {
            assert.equal(ios(j, d), ios(f, d), `${j.jobname} ${d} total_ios`);
            assert.equal(bytes(j, d), bytes(f, d), `${j.jobname} ${d} io_bytes`);
          }
        }
      });
    },
  }),
);

Deno.test(
  needing(["fio"], {
    name: "ioengine=null, rw=rw and randrw, bssplit: the same I/Os and bytes per direction as fio",
    async fn() {
      await withTempDir(async (dir) => {
        const text = "[global]\nioengine=null\nsize=64m\n[seq]\nrw=rw\nrwmixread=30\nbs=4k\n" +
          "[mix]\nrw=randrw\nbssplit=4k/50:64k/50\n[z]\nrw=randread\nbs=4k\nnorandommap\n" +
          "random_distribution=zipf:1.1\n";
        const { fio: theirs, tb } = await both(dir, text);
        for (const [i, j] of tb.entries()) {
          for (const d of ["read", "write"] as const) {
            assert.equal(ios(j, d), ios(theirs[i]!, d), `${j.jobname} ${d}`);
            assert.equal(bytes(j, d), bytes(theirs[i]!, d), `${j.jobname} ${d}`);
          }
        }
      });
    },
  }),
);

/**
 * flow=1 and flow=4 in one flow, each pair's time-limited job ending its group (exitall). While
 * both run, neither's share of the flow's I/Os passes its weight's: the counter starts at 1, so
 * the light job's k-th I/O needs 4k - 5 of the heavy one's, the heavy job's k-th needs
 * (k - 5) / 4 of the light one's (3 more each for the I/O in flight). Once the first job ends
 * the other runs alone until exitall stops it, so those bounds hold however far apart under
 * load the jobs' clocks start and end, where the ratio itself would not.
 */
function assertFlowShares(who: string, jobs: Job[]) {
  const [light, heavy, heavy2, light2] = jobs.map((j) => ios(j, "read"));
  const said = `${who}: ${jobs.map((j) => `${j.jobname} ${ios(j, "read")}`).join(", ")}`;
  assert.ok(light! > 0 && heavy2! > 0, said);
  assert.ok(heavy! >= 4 * light! - 8, `heavy short of 4 × light: ${said}`);
  assert.ok(light2! >= (heavy2! - 8) / 4, `light2 short of heavy2 / 4: ${said}`);
  console.log(said);
}

Deno.test(
  needing(["fio"], {
    name: "flow=1 and flow=4: while both jobs run, neither passes its share of the flow's I/Os " +
      "(1:4 at the first one's end, whichever it is), as fio keeps them",
    async fn() {
      await withTempDir(async (dir) => {
        const text = "[global]\nioengine=null\ntime_based\nrw=randread\nsize=1g\nexitall\n" +
          "[light]\nflow=1\nruntime=2\n[heavy]\nflow=4\nruntime=60\n" +
          "[heavy2]\nstonewall\nflow_id=1\nflow=4\nruntime=2\n" +
          "[light2]\nflow_id=1\nflow=1\nruntime=60\n";
        const { fio: theirs, tb } = await both(dir, text);
        assertFlowShares("fio", theirs);
        assertFlowShares("tierbench", tb);
      });
    },
  }),
);

Deno.test(
  needing(["fio"], {
    name: "exitall: when the short job ends the long one ends too; --trigger-timeout ends all",
    async fn() {
      await withTempDir(async (dir) => {
        const text = "[global]\nioengine=null\ntime_based\nrw=read\nsize=1g\nexitall\n" +
          "[short]\nruntime=1\n[long]\nruntime=30\n";
        const { fio: theirs, tb } = await both(dir, text);
        for (const jobs of [theirs, tb]) {
          // ended by the short one's end at 1 s, not its own 30 s: the stop reaches it late
          // under load (seconds on a loaded 2-core machine), never near 30 s
          const long = jobs[1]!.read.runtime as number;
          assert.ok(long < 10_000, `long ran ${long} ms`);
        }
      });
      await withTempDir(async (dir) => {
        const text = "[j]\nioengine=null\ntime_based\nruntime=60\nrw=read\nsize=1g\n";
        const { fio: theirs, tb } = await both(dir, text, ["--trigger-timeout=2"]);
        for (const [who, jobs] of [["fio", theirs], ["tierbench", tb]] as const) {
          const ms = jobs[0]!.read.runtime as number;
          // under load both start late (fio too has run ~0.5 s of the 2 here): the end is the test
          assert.ok(ms > 0 && ms < 3500, `${who}: ran ${ms} ms`);
          assert.ok(ios(jobs[0]!, "read") > 0, `${who}: no reads`);
        }
      });
    },
  }),
);

Deno.test(
  needing(["fio"], {
    name:
      "--trigger-timeout and startdelay count from the jobs' start: a file to lay out is laid " +
      "out whole first, then the job runs for the trigger's time, in fio and tierbench",
    async fn() {
      await withTempDir(async (dir) => {
        // 1 GiB to lay out takes longer than the trigger's 1 s on most disks
        const text = "[j]\nioengine=psync\nrw=read\nbs=1m\nsize=1g\nfilename=data\n" +
          "time_based\nruntime=60\nstartdelay=1\n";
        const started = performance.now();
        const { fio: theirs, tb, f, t } = await both(dir, text, ["--trigger-timeout=2"]);
        for (const [who, jobs, d] of [["fio", theirs, f], ["tierbench", tb, t]] as const) {
          const ms = jobs[0]!.read.runtime as number;
          assert.ok(ms > 600 && ms < 2000, `${who}: ran ${ms} ms`);
          assert.ok(ios(jobs[0]!, "read") > 0, `${who}: no reads`);
          assert.equal(
            (await Deno.stat(join(d, "data"))).size,
            1024 ** 3,
            `${who}: laid out whole`,
          );
        }
        console.log(`both runs with their layouts: ${Math.round(performance.now() - started)} ms`);
      });
    },
  }),
);

Deno.test(
  needing(["fio"], {
    name: "rate_iops_min not met: fio's job fails, tierbench's run fails naming the rate",
    async fn() {
      await withTempDir(async (dir) => {
        const text = "[j]\nioengine=psync\nsize=8m\nfilename=data\nrw=randread\nbs=4k\n" +
          "time_based\nruntime=3\nrate_iops_min=100000000\nrate_cycle=500\n";
        await Deno.writeTextFile(join(dir, "j.fio"), text);
        const f = await fioStatus(["--output-format=json", "j.fio"], dir);
        assert.match(f.out, /"error" : [1-9]|min rate|not met/);
        const r = await runCli(["run", "j.fio", "--quiet", "--output", "tb.json"], { cwd: dir });
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, /rate_iops_min=100000000 \(fio: min rate not met\)/);
      });
    },
  }),
);

Deno.test(
  needing(["fio", "root"], {
    name: "continue_on_error=write with ignore_error=,ENOSPC: writes past a full file system are " +
      "counted and the job goes on, in fio (total_err) and tierbench (io_errors)",
    async fn() {
      await using m = await tempMount("tmpfs", "size=2m");
      const text = "[j]\nioengine=psync\nrw=write\nbs=64k\nsize=4m\nfilename=data\n" +
        "fallocate=none\ncontinue_on_error=write\nignore_error=,ENOSPC\n";
      const f = join(m.path, "fio"), t = join(m.path, "tb");
      await Deno.mkdir(f);
      await Deno.mkdir(t);
      for (const d of [f, t]) await Deno.writeTextFile(join(d, "j.fio"), text);
      const theirs = JSON.parse(await fio(["--output-format=json", "j.fio"], f)).jobs[0];
      assert.ok(theirs.total_err > 0, JSON.stringify(theirs.total_err));
      await Deno.remove(join(f, "data"));
      const out = `${m.path}.json`; // beside the full file system, not on it
      const r = await runCli(["run", "j.fio", "--quiet", "--output", out], { cwd: t });
      assert.equal(r.code, 0, r.stderr);
      const run = JSON.parse(await Deno.readTextFile(out)).runs[0];
      await Deno.remove(out);
      assert.ok(run.io_errors.write > 0, JSON.stringify(run.io_errors));
      assert.equal(run.io_errors.first_errno, 28); // ENOSPC
      assert.equal(run.write.total_ios + run.io_errors.write, 64);
    },
  }),
);

Deno.test(
  needing(["fio", "root"], {
    name: "a file to lay out larger than the file system's room: fio fills it and fails with " +
      "ENOSPC; tierbench fails the job with ENOSPC before writing, saying what it needed and " +
      "naming the job file's size=",
    async fn() {
      await using m = await tempMount("tmpfs", "size=2m");
      const text = "[r]\nioengine=psync\nrw=read\nbs=64k\nsize=4m\nfilename=data\n";
      const f = join(m.path, "fio"), t = join(m.path, "tb");
      await Deno.mkdir(f);
      await Deno.mkdir(t);
      for (const d of [f, t]) await Deno.writeTextFile(join(d, "j.fio"), text);
      const out = `${m.path}.json`; // beside the small file system, not on it
      const r = await runCli(["run", "j.fio", "--quiet", "--output", out], { cwd: t });
      // a failed run leaves its output alone and writes its partial results beside it
      const partial = JSON.parse(await Deno.readTextFile(`${m.path}.partial.json`));
      await Deno.remove(`${m.path}.partial.json`);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /ENOSPC \(laying the file out needs 4194304 bytes; \d+ are free\)/);
      // what the user can change here is the job's size=, not run's --size
      for (const said of [r.stderr, partial.error]) {
        assert.match(
          said,
          /free space on that file system or use a smaller size= in \/\S*\/tb\/j\.fio\b/,
        );
        assert.doesNotMatch(said, /--size/);
      }
      assert.deepEqual((await Array.fromAsync(Deno.readDir(t))).map((e) => e.name), ["j.fio"]);
      const theirs = await fioStatus(["j.fio"], f);
      assert.notEqual(theirs.code, 0);
      assert.match(theirs.out, /err=28\b.*func=write/);
    },
  }),
);

/** The share of a file's bytes gzip removes, and of its `chunk`-sized blocks that repeat another. */
async function contents(path: string, chunk: number) {
  const data = await Deno.readFile(path);
  const zipped = await new Response(
    new Blob([data]).stream().pipeThrough(new CompressionStream("gzip")),
  ).arrayBuffer();
  const seen = new Set<string>();
  let repeats = 0;
  for (let at = 0; at + chunk <= data.length; at += chunk) {
    const h = new Uint8Array(await crypto.subtle.digest("SHA-1", data.subarray(at, at + chunk)));
    const k = [...h].join(",");
    if (seen.has(k)) repeats++;
    else seen.add(k);
  }
  return {
    saved: 1 - zipped.byteLength / data.length,
    repeats: repeats / Math.floor(data.length / chunk),
    head: [...data.subarray(0, 8)],
  };
}

Deno.test(
  needing(["fio"], {
    name: "written data as fio's buffer options make it: compressibility, repeats, zeros, " +
      "a pattern",
    async fn() {
      const job = (extra: string) =>
        `[j]\nioengine=psync\nrw=write\nbs=64k\nsize=16m\nfilename=data\n${extra}\n`;
      const cases: [string, (f: Awaited<ReturnType<typeof contents>>) => number[]][] = [
        ["buffer_compress_percentage=50", (c) => [c.saved]],
        ["dedupe_percentage=50\nrefill_buffers", (c) => [c.repeats]],
        ["zero_buffers", (c) => [c.saved > 0.99 ? 1 : 0, c.head[0]!]],
        ["buffer_pattern=0xdeadbeef", (c) => c.head],
      ];
      for (const [extra, measure] of cases) {
        await withTempDir(async (dir) => {
          const { f, t } = await both(dir, job(extra));
          const a = measure(await contents(join(f, "data"), 65536));
          const b = measure(await contents(join(t, "data"), 65536));
          for (const [i, x] of a.entries()) {
            assert.ok(
              Math.abs(x - b[i]!) <= Math.max(0.08, Math.abs(x) * 0.1),
              `${extra}: fio ${a} tierbench ${b}`,
            );
          }
        });
      }
    },
  }),
);

Deno.test(
  needing(["fio"], {
    name: "options beside the file are defaults under the file's own; --section runs one job",
    async fn() {
      await withTempDir(async (dir) => {
        const text = "[global]\nioengine=null\nsize=1m\n[a]\nbs=8k\n[b]\nrw=randread\n";
        const { fio: theirs, tb } = await both(dir, text, ["--bs=16k"]);
        assert.deepEqual(tb.map((j) => ios(j, "read")), theirs.map((j) => ios(j, "read")));
        assert.deepEqual(tb.map((j) => ios(j, "read")), [128, 64]);
      });
      await withTempDir(async (dir) => {
        const text = "[global]\nioengine=null\nsize=1m\n[a]\n[b]\nrw=randread\n";
        const { fio: theirs, tb } = await both(dir, text, ["--section=b"]);
        assert.deepEqual(tb.map((j) => j.jobname), ["b"]);
        assert.deepEqual(theirs.map((j) => j.jobname), ["b"]);
      });
    },
  }),
);

Deno.test("unlink removes the job's files when it ends; without it they stay, as fio leaves them", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(
      join(dir, "j.fio"),
      "[global]\nsize=1m\nbs=64k\nrw=write\n[kept]\nfilename=a\n[gone]\nfilename=b\nunlink=1\n",
    );
    const r = await runCli(["run", "j.fio", "--quiet", "--output", "tb.json"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await Deno.stat(join(dir, "a"))).size, 1 << 20);
    await assert.rejects(() => Deno.stat(join(dir, "b")), Deno.errors.NotFound);
  });
});
