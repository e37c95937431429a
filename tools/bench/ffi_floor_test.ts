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

/** Runs the floor for one round of 1 s on 8 MiB, and checks its four rows and that nothing is left. */
async function floorRows(extra: string[], labels: RegExp[]): Promise<string> {
  let out = "";
  await withShmDir(async (dir) => {
    const r = await floor([
      "--rounds",
      "1",
      "--runtime",
      "1",
      "--size",
      "8",
      "--dir",
      dir,
      ...extra,
    ]);
    assert.equal(r.code, 0, r.err);
    const rows = r.out.split("\n").filter((l) => /^\| (fio|tierbench|bare)/.test(l));
    assert.equal(rows.length, 4, r.out);
    rows.forEach((row, i) => assert.match(row, labels[i]!));
    for (const row of rows) {
      const [usr, sys] = row.split("|").slice(2, 4).map(Number);
      assert.ok(usr! >= 0 && sys! > 0, row);
    }
    assert.deepEqual([...Deno.readDirSync(dir)], [], "scratch removed");
    out = r.out;
  });
  return out;
}

Deno.test("bench:ffi-floor measures fio, tierbench and the bare loops on one file and leaves nothing behind (no speed asserted)", async () => {
  await floorRows([], [/fio psync/, /tierbench psync/, /pread \+ 2 clock reads/, /pread alone/]);
});

Deno.test("bench:ffi-floor --engine io_uring measures the three on io_uring at the size, depth and order asked, registered and pinned (no speed asserted)", async () => {
  const out = await floorRows(
    ["--engine", "io_uring", "--rw", "read", "--bs", "64k", "--iodepth", "4"].concat(
      ["--registered", "--cpus-allowed", "0"],
    ),
    [
      /fio io_uring \(fixedbufs, registerfiles\)/,
      /tierbench io_uring \(fixedbufs, registerfiles\)/,
      /io_uring submit \+ wait \+ clock reads for lat, slat, clat/,
      /io_uring submit \+ wait alone/,
    ],
  );
  assert.match(out, /^\| 64k read, depth 4 \|/m);
  assert.match(out, /pinned to CPUs 0$/);
});

Deno.test("bench:ffi-floor refuses a bad option in one line naming what was written, exit status 2", async () => {
  for (
    const [args, expected] of [
      [["--rounds", "0"], '--rounds: "0" is not an integer from 1 to 99'],
      [["--dir", "/nonexistent/x"], "--dir: /nonexistent/x is not an existing directory"],
      [["--runtme", "1"], "unknown option '--runtme' (Did you mean --runtime?)"],
      [["--engine", "libaio"], '--engine: "libaio" is neither psync nor io_uring'],
      [["--registered"], "--registered: io_uring's alone; --engine is psync"],
      [["--rw", "write"], '--rw: "write" is neither randread nor read'],
      [["--bs", "1000"], '--bs: "1000" is not a size from 512 to 64m in 512-byte steps'],
      [["--iodepth", "8"], '--iodepth: psync reads one at a time; "8" needs io_uring'],
      [["--bs", "2m", "--size", "1"], '--bs: "2m" is more than the file (--size 1)'],
    ] as const
  ) {
    const r = await floor([...args]);
    assert.equal(r.code, 2, r.err);
    assert.equal(r.err, `bench:ffi-floor: ${expected}`);
  }
});

Deno.test("bench:ffi-floor's summary takes each column's median over rounds and divides by fio's", () => {
  const round = (fioUsr: number, tbUsr: number): FloorRound => ({
    fio: { usr: fioUsr, sys: 750 },
    tierbench: { usr: tbUsr, sys: 800 },
    loop_with_clock: { usr: 150, sys: 750 },
    loop_without_clock: { usr: 90, sys: 760 },
  });
  const rounds = [round(200, 400), round(250, 450), round(300, 900)];
  const text = summary(rounds, { engine: "psync", rw: "randread", bs: 4096, iodepth: 1 });
  assert.match(text, /^\| 4k randread, depth 1 \|/);
  assert.match(text, /\| fio psync \| 250 \| 750 \| 1\.00 \| 1\.00 \|/);
  assert.match(text, /\| tierbench psync \| 450 \| 800 \| 1\.80 \| 1\.25 \|/);
  assert.match(text, /\| bare FFI loop: pread alone \| 90 \| 760 \| 0\.36 \| 0\.85 \|/);
  const uring = summary(rounds, {
    engine: "io_uring",
    registered: true,
    rw: "read",
    bs: 1 << 20,
    iodepth: 8,
  });
  assert.match(uring, /^\| 1m read, depth 8 \|/);
  assert.match(uring, /\| tierbench io_uring \(fixedbufs, registerfiles\) \| 450 \|/);
  assert.match(
    uring,
    /\| bare FFI loop: io_uring submit \+ wait \+ clock reads for lat, slat, clat \| 150 \|/,
  );
});
