import assert from "node:assert/strict";
import { runScript, testCommandLine, withTempDir } from "../service/testing.ts";

const MAIN = new URL("./main.ts", import.meta.url);

testCommandLine(MAIN, "ceph", ["up", "down", "env", "status", "--dir", "--mgr", "--no-fs"]);

Deno.test("main.ts status and env, with --dir before or after the command, find no cluster", async () => {
  await withTempDir(async (dir) => {
    const missing = `${dir}/none`;
    const status = await runScript(MAIN, "status", "--dir", missing);
    assert.equal(status.code, 1);
    assert.equal(status.stdout, `no cluster in ${missing}\n`);
    const env = await runScript(MAIN, "--dir", missing, "env");
    assert.equal(env.code, 1);
    assert.equal(env.stdout, "");
    assert.match(env.stderr, new RegExp(`^ceph: no cluster is up in ${missing} `));
  });
});
