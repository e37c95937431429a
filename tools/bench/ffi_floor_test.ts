import assert from "node:assert/strict";
import { withShmDir } from "../../tests/_helpers.ts";
import { type FloorRound, summary } from "./ffi_floor.ts";

const FLOOR = new URL("./ffi_floor.ts", import.meta.url).pathname;

async function floor(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", FLOOR, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  return { code: out.code, out: text(out.stdout), err: text(out.stderr) };
}

Deno.test("bench:ffi-floor measures fio, tierbench and the bare loops on one file and leaves nothing behind (no speed asserted)", async () => {
  await withShmDir(async (dir) => {
    const r = await floor(["--rounds", "1", "--runtime", "1", "--size", "8", "--dir", dir]);
    assert.equal(r.code, 0, r.err);
    const rows = r.out.split("\n").filter((l) => /^\| (fio|tierbench|bare)/.test(l));
    assert.equal(rows.length, 4, r.out);
    for (const row of rows) {
      const [usr, sys] = row.split("|").slice(2, 4).map(Number);
      assert.ok(usr! >= 0 && sys! > 0, row);
    }
    assert.deepEqual([...Deno.readDirSync(dir)], [], "scratch removed");
  });
});

Deno.test("bench:ffi-floor refuses a bad option in one line naming what was written, exit status 2", async () => {
  for (
    const [args, expected] of [
      [["--rounds", "0"], '--rounds: "0" is not an integer from 1 to 99'],
      [["--dir", "/nonexistent/x"], "--dir: /nonexistent/x is not an existing directory"],
      [["--runtme", "1"], "unknown option '--runtme' (Did you mean --runtime?)"],
    ] as const
  ) {
    const r = await floor([...args]);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.err, `bench:ffi-floor: ${expected}`);
  }
});

Deno.test("bench:ffi-floor's summary takes each column's median over rounds and divides user time by fio's", () => {
  const round = (fioUsr: number, tbUsr: number): FloorRound => ({
    fio: { usr: fioUsr, sys: 700 },
    tierbench: { usr: tbUsr, sys: 800 },
    loop_with_clock: { usr: 150, sys: 750 },
    loop_pread_only: { usr: 90, sys: 760 },
  });
  const text = summary([round(200, 400), round(250, 450), round(300, 900)]);
  assert.match(text, /\| fio psync \| 250 \| 700 \| 1\.00 \|/);
  assert.match(text, /\| tierbench psync \| 450 \| 800 \| 1\.80 \|/);
  assert.match(text, /\| bare FFI loop: pread alone \| 90 \| 760 \| 0\.36 \|/);
});
