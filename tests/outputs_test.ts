/**
 * Outputs are written atomically and never clobbered: a complete result
 * replaces `--output` whole (written beside it, renamed over it); a run that
 * fails or is interrupted leaves `--output` as it was and writes
 * `NAME.partial.json` beside it (then `NAME.partial-2.json`, …); a path
 * that cannot be written, and files that cannot fit, are refused before any
 * I/O, naming the option.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { needing } from "./_requirements.ts";
import {
  finished,
  ROOT,
  runCli,
  scratchLeft,
  spawnCli,
  tempMount,
  withShmDir,
  withTempDir,
} from "./_helpers.ts";
import { assertOneLine } from "./_cli.ts";
import { waitUntil } from "./_faults.ts";

const EARLIER = '{"an earlier result": true}\n';

/** The names in `dir`, sorted. */
async function names(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();
}

Deno.test("a complete result replaces --output whole; an interrupted run keeps it and writes NAME.partial.json beside it, then NAME.partial-2.json", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "r.json");
    await Deno.writeTextFile(out, EARLIER);
    await withShmDir(async (tier) => {
      for (const n of [1, 2]) {
        const child = spawnCli([
          ...["run", "--quiet", "--tier", `memory:${tier}`, "--rw", "write", "--bs", "64k"],
          ...["--size", "8m", "--runtime", "30", "--output", out],
        ]);
        await waitUntil("the run's scratch", async () => (await scratchLeft(tier)).length > 0);
        await new Promise((r) => setTimeout(r, 800));
        child.kill("SIGINT");
        const r = await finished(child);
        assert.equal(r.code, 1, r.stderr);
        const partial = join(dir, n === 1 ? "r.partial.json" : "r.partial-2.json");
        assert.match(r.stderr.trim(), new RegExp(`partial results in ${partial};`));
        assert.equal(await Deno.readTextFile(out), EARLIER, "--output was changed");
        assert.equal(JSON.parse(await Deno.readTextFile(partial)).status, "interrupted");
      }
      const ok = await runCli([
        ...["run", "--quiet", "--tier", `memory:${tier}`, "--rw", "write", "--bs", "64k"],
        ...["--size", "1m", "--output", out],
      ]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(JSON.parse(await Deno.readTextFile(out)).status, "ok");
      // nothing else: no temporary file left beside the target
      assert.deepEqual(await names(dir), ["r.json", "r.partial-2.json", "r.partial.json"]);
    });
  });
});

Deno.test("files that cannot fit the tier's free space are refused before any I/O, naming --size, the output left as it was", async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, "r.json");
    await Deno.writeTextFile(out, EARLIER);
    await withShmDir(async (tier) => {
      const r = await runCli([
        ...["run", "--tier", `memory:${tier}`, "--rw", "write", "--size", "100t"],
        ...["--output", out],
      ]);
      assertOneLine(
        r,
        2,
        /^tierbench: --size: the files need 100\.0 TiB on memory:\S+ .* has [\d.]+ \S+ free/,
      );
      assert.deepEqual(await names(tier), [], "a scratch directory was made");
      assert.equal(await Deno.readTextFile(out), EARLIER);
      assert.deepEqual(await names(dir), ["r.json"]);
    });
  });
});

Deno.test("an output path under a regular file is refused before any I/O, naming --output, for every command that writes one", async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, "a-file");
    await Deno.writeTextFile(file, "not a directory\n");
    const result = join(ROOT, "results", "reference", "dgx-a100-8gpu-nvme-s3.json");
    const cases: [string[], RegExp][] = [
      [
        ["run", "--tier", `file:${dir}`, "--size", "1m", "--output", join(file, "r.json")],
        /^tierbench: --output: \S+\/a-file\/r\.json: \S+\/a-file is not a directory/,
      ],
      [
        ["bench", "--quick", "--file-dir", dir, "--output", join(file, "sub", "p.json")],
        /^tierbench: --output: \S+\/a-file\/sub\/p\.json: \S+\/a-file is not a directory/,
      ],
      [
        ["plan", "--profile", result, "--output", join(file, "plan.json")],
        /^tierbench: --output: \S+\/a-file\/plan\.json: \S+\/a-file is not a directory/,
      ],
      [
        ["report", result, "--output", join(file, "rep")],
        /^tierbench: --output: \S+\/a-file\/rep\/report\.html: \S+\/a-file is not a directory/,
      ],
      [
        ["compare", result, result, "--html", join(file, "c.html")],
        /^tierbench: --html: \S+\/a-file\/c\.html: \S+\/a-file is not a directory/,
      ],
      [
        ["sweep", "--tier", `file:${dir}`, "--iodepth", "1,2", "--output", join(file, "s.json")],
        /^tierbench: --output: \S+\/a-file\/s\.json: \S+\/a-file is not a directory/,
      ],
      [
        ["contention", "--tiers", `memory:,file:${dir}`, "--output", join(file, "c.json")],
        /^tierbench: --output: \S+\/a-file\/c\.json: \S+\/a-file is not a directory/,
      ],
      [
        [
          ...["workload", "zero-infinity", "--scale", "0.0002", "--tiers", `memory:,file:${dir}`],
          ...["--output", join(file, "w.json")],
        ],
        /^tierbench: --output: \S+\/a-file\/w\.json: \S+\/a-file is not a directory/,
      ],
      [
        ["run", "--tier", `file:${dir}`, "--size", "1m", "--output", dir],
        /^tierbench: --output: \S+ is a directory: name a file to write/,
      ],
    ];
    for (const [args, says] of cases) {
      const r = await runCli(args);
      assertOneLine(r, 2, says);
      assert.equal(r.stdout, "", `${args[0]} printed before refusing: ${r.stdout}`);
      assert.deepEqual(await names(dir), ["a-file"], `${args[0]} left something`);
    }
  });
});

Deno.test(needing(["root"], {
  name: "an output directory that cannot be written is refused before any I/O, naming --output",
  fn: async () => {
    await using ro = await tempMount("tmpfs", "ro,size=1m");
    await withTempDir(async (dir) => {
      const r = await runCli([
        ...["run", "--tier", `file:${dir}`, "--size", "1m"],
        ...["--output", join(ro.path, "r.json")],
      ]);
      assertOneLine(r, 2, /^tierbench: --output: \S+\/r\.json: \S+ cannot be written to \(EROFS/);
      assert.deepEqual(await scratchLeft(dir), []);
    });
  },
}));
