import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, withTempDir } from "../tests/_helpers.ts";

/** `tierbench run` on the null tier, started as `npm_*` says, and its last line. */
async function lastLine(dir: string, npm: Record<string, string>): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-q", "--allow-all", join(ROOT, "main.ts"), "run", "--tier", "null:"]
      .concat(["--rw", "read", "--runtime", "0.2", "--output", join(dir, "r.json")]),
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...npm },
    clearEnv: true,
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return stdout.trimEnd().split("\n").at(-1)!;
}

Deno.test("a result's last line spells the next command as tierbench was started: npx (npm 11 quotes its script, earlier ones do not) or deno task", async () => {
  await withTempDir(async (dir) => {
    const npx = `npx -y deno@${Deno.version.deno} task tierbench`;
    for (const script of ["'deno'", "deno"]) {
      assert.equal(
        await lastLine(dir, { npm_lifecycle_event: "npx", npm_lifecycle_script: script }),
        `results: r.json; next: ${npx} report r.json`,
      );
    }
    assert.equal(
      await lastLine(dir, {}),
      "results: r.json; next: deno task tierbench report r.json",
    );
  });
});
