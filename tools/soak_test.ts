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
