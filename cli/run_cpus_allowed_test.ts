import assert from "node:assert/strict";
import { join } from "node:path";
import { finished, runCli, spawnCli, withTempDir } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";
import { formatCpuList, threadCpus } from "../core/cpu_affinity.ts";

/**
 * Jobs that pin every clone to one CPU of 0 and 1, each way fio can: a split
 * list (clones on 0, 1, 0), a list of one CPU, a cpumask (bit 0: CPU 0).
 */
function pinnedJobs(dir: string): string {
  return `[global]
directory=${dir}
size=1m
bs=4k
rw=randread
runtime=4
time_based
thread
cpus_allowed=0-1
cpus_allowed_policy=split

[split]
numjobs=3

[one]
cpus_allowed=1
cpus_allowed_policy=shared

[mask]
cpumask=0x1
`;
}

/** The CPU lists of the threads of `pid` that `isJob` takes, sorted. */
function jobThreadCpus(pid: number, isJob: (name: string, tid: number) => boolean): string[] {
  const out: string[] = [];
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const name = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/comm`).trim();
      if (!isJob(name, Number(t.name))) continue;
      const status = Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/status`);
      out.push(/Cpus_allowed_list:\s*(\S+)/.exec(status)![1]!);
    } catch { /* the thread ended */ }
  }
  return out.sort();
}

/**
 * The job threads' CPU lists in the last look, polled every 20 ms while
 * `child` runs, that saw the most of them at once: a thread is made first
 * and pins itself after, and tierbench's layout runs before the jobs' own.
 */
async function watchJobs(
  child: Deno.ChildProcess,
  isJob: (name: string, tid: number) => boolean,
): Promise<string[]> {
  let best: string[] = [];
  let done = false;
  const ended = child.status.then(() => done = true);
  while (!done) {
    try {
      const seen = jobThreadCpus(child.pid, isJob);
      if (seen.length >= best.length) best = seen;
    } catch { /* not started or gone */ }
    await new Promise((r) => setTimeout(r, 20));
  }
  await ended;
  return best;
}

Deno.test(
  needing(["fio"], {
    name: "tierbench run JOB.fio pins each clone's thread to the CPUs fio's own threads get " +
      "for the same cpus_allowed, cpus_allowed_policy=split and cpumask",
    ignore: !threadCpus().includes(0) || !threadCpus().includes(1),
    async fn() {
      await withTempDir(async (dir) => {
        const file = join(dir, "pinned.fio");
        await Deno.writeTextFile(file, pinnedJobs(dir));
        // fio --thread: its job threads and its main and helper threads are all "fio"; the
        // main thread (tid = pid) and the helper keep the process's CPUs, which 0 or 1 alone is not
        const all = formatCpuList(threadCpus());
        const fio = new Deno.Command("fio", {
          args: [file, "--output=/dev/null"],
          stdout: "null",
          stderr: "piped",
        }).spawn();
        const fioCpus = await watchJobs(fio, (name, tid) => name === "fio" && tid !== fio.pid);
        const fioJobs = fioCpus.filter((c) => c !== all);
        const tb = spawnCli(["run", file, "--output", join(dir, "r.json"), "--quiet"]);
        const tbCpus = await watchJobs(tb, (name) => name.startsWith("worker-"));
        const r = await finished(tb);
        assert.equal(r.code, 0, r.stderr);
        // split: thread_numbers 1, 2, 3 on 0, 1, 0; one: 1; mask: 0
        assert.deepEqual(fioJobs, ["0", "0", "0", "1", "1"]);
        assert.deepEqual(tbCpus.filter((c) => c !== all), fioJobs);
        const doc = JSON.parse(await Deno.readTextFile(join(dir, "r.json")));
        const pins = doc.runs.map((x: { options: { cpus_allowed: unknown } }) =>
          x.options.cpus_allowed
        );
        assert.deepEqual(pins, [
          { cpus: "0-1", policy: "split" },
          { cpus: "1", policy: "shared" },
          { cpus: "0", policy: "split" }, // [global]'s policy: one CPU, split or not
        ]);
      });
    },
  }),
);

Deno.test("tierbench run --cpus-allowed: a CPU the host lacks or text that is no list is one line naming it, exit 2", async () => {
  const r = await runCli(["run", "--tier", "null:", "--cpus-allowed", "0,99999"]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
  assert.match(r.stderr, /^tierbench: --cpus-allowed: "0,99999": CPU 99999 is beyond this host's/);
  const r2 = await runCli(["run", "--tier", "null:", "--cpus_allowed", "1-0"]);
  assert.equal(r2.code, 2);
  assert.match(r2.stderr, /--cpus-allowed: "1-0": the range 1-0 runs backwards/);
});

Deno.test("tierbench run JOB.fio: a bad cpus_allowed, cpumask or policy is said at its key's line, exit 2", async () => {
  await withTempDir(async (dir) => {
    const cases: [string, RegExp][] = [
      ["cpus_allowed=0-x", /:4: cpus_allowed: "0-x" is not a CPU or a range/],
      ["cpumask=0", /:4: cpumask: 0: names no CPU/],
      [
        "cpus_allowed_policy=sideways",
        /:4: cpus_allowed_policy: sideways: .*not one of shared, split/,
      ],
    ];
    for (const [line, want] of cases) {
      const file = join(dir, "bad.fio");
      await Deno.writeTextFile(file, `[a]\ndirectory=${dir}\nsize=1m\n${line}\n`);
      const r = await runCli(["run", file]);
      assert.equal(r.code, 2, line);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(r.stderr, want);
    }
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["bad.fio"]);
  });
});
