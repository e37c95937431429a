import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../tests/_helpers.ts";

/** The commands whose `--help` is kept in tests/testdata/help/<command>.txt. */
const COMMANDS = [
  "run",
  "clean",
  "bench",
  "contention",
  "sweep",
  "workload",
  "plan",
  "replay",
  "report",
  "compare",
] as const;

/** `main.ts ...args` as a user's pipe sees it: no colour, stdout not a terminal. */
async function help(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-q", "--allow-all", join(ROOT, "main.ts"), ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function saved(name: string): Promise<string> {
  return await Deno.readTextFile(join(ROOT, "tests", "testdata", "help", `${name}.txt`));
}

Deno.test("tierbench --help prints the saved help, word for word", async () => {
  const r = await help(["--help"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, await saved("main"));
});

for (const command of COMMANDS) {
  Deno.test(`tierbench ${command} --help prints the saved help, word for word`, async () => {
    const r = await help([command, "--help"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, await saved(command));
  });
}
