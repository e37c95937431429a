import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk, toolJson } from "../tests/_helpers.ts";

const SCALE = new URL("./scale_bench.ts", import.meta.url).pathname;

Deno.test("bench:scale runs the null case small and large and reports wall time, peak RSS and CPU per I/O (no speed asserted)", async () => {
  const dir = await tempDirOnDisk();
  try {
    const output = join(dir, "scale.json");
    const { doc } = await toolJson(
      SCALE,
      ["--cases", "null", "--rounds", "1", "--runtime", "1", "--file-dir", dir],
      output,
    );
    assert.deepEqual(doc.cases.map((c: { id: string }) => c.id), ["null"]);
    const [c] = doc.cases;
    for (const side of [c.small, c.large]) {
      assert.ok(side.wall_s > 0 && side.peak_rss_bytes > 0 && side.ios > 0, side.label);
      assert.ok(side.jobs_cpu_per_io_ns > 0 && side.process_cpu_per_io_ns > 0, side.label);
    }
    assert.ok(c.jobs_cpu_per_io_ratio > 0 && c.process_cpu_per_io_ratio > 0);
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
      [["--cases", "null,nul"], '--cases: "nul" is none of null, tmpfs, workload'],
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
