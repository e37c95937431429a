import assert from "node:assert/strict";
import { assertHelpNames, assertUsageErrors, runScript, withTempDir } from "../service/testing.ts";

const MAIN = new URL("./main.ts", import.meta.url);

Deno.test("main.ts --help names every command and option and exits 0", async () => {
  await assertHelpNames(MAIN, ["up", "down", "status", "--dir"]);
});

Deno.test("main.ts without a command, or with an unknown one, is a usage error (2)", async () => {
  await assertUsageErrors(MAIN, "slurm");
});

Deno.test("main.ts status finds no cluster in a directory that does not exist (1)", async () => {
  await withTempDir(async (dir) => {
    const status = await runScript(MAIN, "status", "--dir", `${dir}/none`);
    assert.equal(status.code, 1);
    assert.equal(status.stdout, `no cluster in ${dir}/none\n`);
  });
});
