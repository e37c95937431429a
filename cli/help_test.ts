import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, runCli } from "../tests/_helpers.ts";

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
const help = runCli;

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
