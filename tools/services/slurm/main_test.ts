import assert from "node:assert/strict";
import { runScript, testCommandLine, withTempDir } from "../service/testing.ts";

const MAIN = new URL("./main.ts", import.meta.url);

testCommandLine(MAIN, "slurm", ["up", "down", "status", "--dir"]);

Deno.test("main.ts status finds no cluster in a directory that does not exist (1)", async () => {
  await withTempDir(async (dir) => {
    const status = await runScript(MAIN, "status", "--dir", `${dir}/none`);
    assert.equal(status.code, 1);
    assert.equal(status.stdout, `no cluster in ${dir}/none\n`);
  });
});
