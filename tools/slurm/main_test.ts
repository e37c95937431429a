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
  for (const word of ["up", "down", "status", "--dir"]) {
    assert.match(r.stdout, new RegExp(`^\\s+${word}\\b`, "m"), `no ${word} in:\n${r.stdout}`);
  }
});

Deno.test("main.ts without a command, or with an unknown one, is a usage error (2)", async () => {
  const none = await cli();
  assert.equal(none.code, 2);
  assert.match(none.stderr, /^slurm: no command given$/m);
  const unknown = await cli("sideways");
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /^slurm: unknown command 'sideways'/m);
});

Deno.test("main.ts status finds no cluster in a directory that does not exist (1)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const status = await cli("status", "--dir", `${dir}/none`);
    assert.equal(status.code, 1);
    assert.equal(status.stdout, `no cluster in ${dir}/none\n`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
