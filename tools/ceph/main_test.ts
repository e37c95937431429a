import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const MAIN = new URL("./main.ts", import.meta.url);

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", fileURLToPath(MAIN), ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test("main.ts --help names every command and option and exits 0", async () => {
  const r = await cli("--help");
  assert.equal(r.code, 0);
  for (const word of ["up", "down", "env", "status", "--dir", "--mgr", "--no-fs"]) {
    assert.match(r.stdout, new RegExp(`^\\s+${word}\\b`, "m"), `no ${word} in:\n${r.stdout}`);
  }
});

Deno.test("main.ts without a command, or with an unknown one, is a usage error (2)", async () => {
  const none = await cli();
  assert.equal(none.code, 2);
  assert.match(none.stderr, /^ceph: no command given$/m);
  assert.match(none.stderr, /Usage:/);
  const unknown = await cli("sideways");
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /^ceph: unknown command 'sideways'/m);
});

Deno.test("main.ts status and env, with --dir before or after the command, find no cluster", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const missing = `${dir}/none`;
    const status = await cli("status", "--dir", missing);
    assert.equal(status.code, 1);
    assert.equal(status.stdout, `no cluster in ${missing}\n`);
    const env = await cli("--dir", missing, "env");
    assert.equal(env.code, 1);
    assert.equal(env.stdout, "");
    assert.match(env.stderr, new RegExp(`^ceph: no cluster is up in ${missing} `));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
