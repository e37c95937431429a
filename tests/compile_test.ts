/**
 * `deno task compile`'s single binary, built into a temporary directory from
 * the task's own command line, runs `--help`, a `run` and `bench --quick`
 * (whose Workers, bench/_job_worker.ts and bench/_rank_worker.ts, must be
 * inside it), and the documents it writes validate against their schemas.
 *
 * `deno compile` needs its base binary (denort), which Deno downloads once
 * into its cache; where it is not cached and cannot be downloaded (a machine
 * off the network), the test is ignored, its name saying so.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, withTempDir } from "./_helpers.ts";
import { assertValidFile } from "./_schemas.ts";

const TASK: string = JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.json"))).tasks.compile;

/** Where `deno compile` takes its base binary from, when it has one without the network. */
function cachedBase(): string | undefined {
  const bin = Deno.env.get("DENORT_BIN");
  if (bin) return bin;
  const home = Deno.env.get("HOME") ?? "";
  const dir = Deno.env.get("DENO_DIR") ?? join(home, ".cache", "deno");
  const zip = join(
    dir,
    "dl",
    "release",
    `v${Deno.version.deno}`,
    `denort-${Deno.build.target}.zip`,
  );
  try {
    Deno.statSync(zip);
    return zip;
  } catch {
    return undefined;
  }
}

async function online(): Promise<boolean> {
  try {
    // the host deno compile downloads its base binary from
    const conn = await Deno.connect({ hostname: "dl.deno.land", port: 443 });
    conn.close();
    return true;
  } catch {
    return false;
  }
}

const canCompile = cachedBase() !== undefined || await online();

async function exec(cmd: string, args: string[], cwd: string) {
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test({
  name: "deno task compile builds one tierbench binary that runs --help, run and bench --quick" +
    (canCompile
      ? ""
      : " [ignored: needs deno compile's base binary, not cached and not downloadable here]"),
  ignore: !canCompile,
  fn: async () => {
    await withTempDir(async (dir) => {
      const bin = join(dir, "tierbench");
      const args = TASK.split(/\s+/).slice(1); // "deno compile …"
      const at = args.indexOf("--output");
      assert.ok(at > 0, TASK);
      args[at + 1] = bin;
      const built = await exec(Deno.execPath(), args, ROOT);
      assert.equal(built.code, 0, built.stderr);

      const help = await exec(bin, ["--help"], dir);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /^Usage: tierbench /);

      const run = await exec(bin, [
        "run",
        "--tier",
        "null:",
        "--size",
        "1m",
        "--runtime",
        "0.5",
        "--quiet",
        "--output",
        join(dir, "run.json"),
      ], dir);
      assert.equal(run.code, 0, run.stderr);
      await assertValidFile(join(dir, "run.json"));

      const files = join(dir, "files");
      await Deno.mkdir(files);
      const bench = await exec(bin, [
        "bench",
        "--quick",
        "--file-dir",
        files,
        "--quiet",
        "--output",
        join(dir, "quick.json"),
      ], dir);
      assert.equal(bench.code, 0, bench.stderr);
      const doc = await assertValidFile(join(dir, "quick.json")) as {
        kind: string;
        contention?: unknown;
        workloads?: unknown[];
      };
      assert.equal(doc.kind, "profile");
      assert.ok(doc.contention, "a quick profile keeps the contention matrix");
      assert.equal(doc.workloads, undefined);
    });
  },
});
