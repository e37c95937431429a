import assert from "node:assert/strict";
import { join } from "node:path";

Deno.test("bench:soak runs its rounds on every tier and says what it saw: no error, nothing left, RSS and fds sampled", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tierbench-soak-test-" });
  try {
    const out = join(dir, "soak.json");
    const r = await new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-q", "--allow-all", "--v8-flags=--expose-gc"],
        new URL("./soak.ts", import.meta.url).pathname,
        ...["--minutes", "0.2", "--sample", "2", "--output", out],
      ],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const stdout = new TextDecoder().decode(r.stdout);
    const stderr = new TextDecoder().decode(r.stderr);
    assert.equal(r.code, 0, `${stdout}\n${stderr}`);
    const doc = JSON.parse(await Deno.readTextFile(out));
    assert.equal(doc.schema, "tierbench/soak@1");
    assert.ok(doc.rounds >= 1 && doc.sessions >= 2, `${doc.rounds} rounds`);
    assert.deepEqual(doc.errors, []);
    assert.deepEqual(doc.leftovers, []);
    assert.ok(doc.samples.length >= 2 && doc.between_rounds.length === doc.rounds);
    assert.ok(
      doc.samples.every((s: { rss_bytes: number; fds: number }) => s.rss_bytes > 0 && s.fds > 0),
    );
    assert.match(stdout, /^soak: \d+ rounds \(\d+ sessions\) in 0\.2 min; peak RSS /m);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("bench:soak stopped by SIGINT or SIGTERM: one line, exit 1, its stand-in directories and scratch removed", async () => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const dir = await Deno.makeTempDir({ prefix: "tierbench-soak-test-" });
    try {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          ...["run", "-q", "--allow-all", "--v8-flags=--expose-gc"],
          new URL("./soak.ts", import.meta.url).pathname,
          ...["--minutes", "5", "--sample", "1", "--no-s3"],
          ...["--memory-dir", dir, "--file-dir", dir, "--output", join(dir, "soak.json")],
        ],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).spawn();
      // stopped mid-round: once a round's scratch is on the disk
      const scratch = async () => {
        for await (const e of Deno.readDir(dir)) {
          for await (const f of Deno.readDir(join(dir, e.name))) {
            if (f.name.startsWith("tierbench-scratch-")) return true;
          }
        }
        return false;
      };
      const end = Date.now() + 60_000;
      while (!(await scratch())) {
        assert.ok(Date.now() < end, "no scratch directory after 60 s");
        await new Promise((r) => setTimeout(r, 100));
      }
      child.kill(signal);
      const r = await child.output();
      const lines = new TextDecoder().decode(r.stderr).trim().split("\n");
      assert.equal(r.code, 1, lines.join("\n"));
      assert.match(lines.at(-1)!, new RegExp(`^soak: interrupted by ${signal} after \\d+ rounds`));
      const left = [];
      for await (const e of Deno.readDir(dir)) left.push(e.name);
      assert.deepEqual(left, [], `${signal}: left behind`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
});
