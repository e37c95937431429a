import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk, toolJson } from "../../tests/_helpers.ts";

import { fioCounted } from "./scale_bench.ts";

const SCALE = new URL("./scale_bench.ts", import.meta.url).pathname;

Deno.test("bench:scale runs the null case small and large and reports wall time, peak RSS and CPU per I/O (no speed asserted)", async () => {
  const dir = await tempDirOnDisk();
  try {
    const output = join(dir, "scale.json");
    const { doc } = await toolJson(
      SCALE,
      ["--cases", "null", "--rounds", "1", "--runtime", "1", "--file-dir", dir, "--no-fio"],
      output,
    );
    assert.deepEqual(doc.cases.map((c: { id: string }) => c.id), ["null"]);
    const [{ tools: [c] }] = doc.cases;
    assert.equal(c.tool, "tierbench");
    assert.deepEqual([c.small.label, c.large.label], ["1 job × d32", "64 jobs × d32"]);
    for (const side of [c.small, c.large]) {
      assert.ok(side.wall_s > 0 && side.peak_rss_bytes > 0 && side.ios > 0, side.label);
      assert.ok(side.jobs_cpu_per_io_ns > 0 && side.process_cpu_per_io_ns > 0, side.label);
      // the window is part of the whole: what the process spent in it, and outside it
      assert.ok(side.window_cpu_per_io_ns > 0, side.label);
      assert.ok(side.window_cpu_per_io_ns < side.process_cpu_per_io_ns, side.label);
      assert.ok(side.outside_window_cpu_ms > 0, side.label);
    }
    assert.ok(c.jobs_cpu_per_io_ratio > 0 && c.process_cpu_per_io_ratio > 0);
    assert.ok(c.window_cpu_per_io_ratio > 0);
    // 64 Workers start dearer than one: each job's start, once
    assert.ok(c.start_cpu_per_added_job_ms > 0, `${c.start_cpu_per_added_job_ms}`);
    // the verdict names each measure, and is met only when both are
    const [row] = doc.cases;
    assert.equal(typeof row.met_jobs, "boolean");
    assert.equal(typeof row.met_process, "boolean");
    assert.equal(row.met, row.met_jobs && row.met_process);
    const left = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n !== "scale.json");
    assert.deepEqual(left, [], "scratch removed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bench:scale refuses a bad option in one line naming what was written, exit status 2", async () => {
  for (
    const [args, expected] of [
      [["--rounds", "2x"], '--rounds: "2x" is not an integer from 1 to 99'],
      [["--runtime", "0"], '--runtime: "0" is not an integer from 1 to 3600'],
      [
        ["--cases", "null,nul"],
        '--cases: "nul" is none of null, tmpfs-libaio-4k, tmpfs-libaio-1m, tmpfs-io_uring-4k, tmpfs-io_uring-1m, workload',
      ],
      [["--round", "2"], "unknown option '--round' (Did you mean --rounds?)"],
    ] as const
  ) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", SCALE, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr).trim();
    assert.equal(out.code, 2, err);
    assert.equal(err.split("\n").at(-1), `bench:scale: ${expected}`);
  }
});

Deno.test("bench:scale sums fio's I/Os and its jobs' CPU (usr_cpu and sys_cpu % of job_runtime) over every job", () => {
  const job = (name: string, usr: number, sys: number, ms: number, reads: number) => ({
    jobname: name,
    error: 0,
    usr_cpu: usr,
    sys_cpu: sys,
    job_runtime: ms,
    read: { total_ios: reads },
    write: { total_ios: 0 },
  });
  const out = "fio: note\n" +
    JSON.stringify({ jobs: [job("a", 10, 40, 1000, 500), job("b", 5, 5, 2000, 100)] });
  const c = fioCounted(out);
  assert.equal(c.ios, 600);
  assert.equal(c.jobs_cpu_ns, 0.5 * 1e9 + 0.1 * 2e9);
  assert.throws(
    () => fioCounted(JSON.stringify({ jobs: [{ ...job("c", 0, 0, 1, 1), error: 5 }] })),
    /job c failed with error 5/,
  );
});

Deno.test("bench:scale puts fio's threads and processes beside tierbench on a run case", async () => {
  const dir = await tempDirOnDisk();
  try {
    const output = join(dir, "scale.json");
    const { doc } = await toolJson(
      SCALE,
      ["--cases", "null", "--rounds", "1", "--runtime", "1", "--file-dir", dir],
      output,
    );
    const [c] = doc.cases;
    assert.deepEqual(c.tools.map((t: { tool: string }) => t.tool), [
      "tierbench",
      "fio --thread",
      "fio",
    ]);
    for (const t of c.tools.slice(1)) {
      assert.ok(t.small.ios > 0 && t.large.ios > 0 && t.large.jobs_cpu_per_io_ns > 0, t.tool);
    }
    assert.ok(c.jobs_ratio_over_fio > 0);
    const [tb, fio] = c.tools;
    assert.equal(c.jobs_small_over_fio, tb.small.jobs_cpu_per_io_ns / fio.small.jobs_cpu_per_io_ns);
    assert.equal(c.jobs_large_over_fio, tb.large.jobs_cpu_per_io_ns / fio.large.jobs_cpu_per_io_ns);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
