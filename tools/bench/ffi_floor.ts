/**
 * `deno task bench:ffi-floor`: the least CPU per I/O that any harness written
 * in JavaScript on Deno's FFI can spend, against fio and tierbench in the
 * same run.
 *
 * Each round runs, on one file of `--size` bytes in `--dir`, 4 KiB random
 * reads at depth 1 with pread(2) for `--runtime` seconds:
 *
 * - fio (psync engine), its job's CPU per I/O;
 * - tierbench (`run --engine psync`), its job thread's CPU per I/O;
 * - two bare loops in this process, with the same libc bindings and clock
 *   that tierbench's engines use: pread and the two clock reads a latency
 *   needs, then pread alone. Nothing else runs in them: no histogram, no
 *   offsets beyond a multiply and a modulo, no checks.
 *
 * A bare loop is the floor of the JavaScript side. Where tierbench's CPU per
 * I/O is above fio's but near the floor, the difference is the cost of
 * crossing from JavaScript into libc and back, not tierbench's bookkeeping.
 *
 * ```sh
 * deno task bench:ffi-floor [--rounds 3] [--runtime 3] [--dir /dev/shm]
 * ```
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { join } from "node:path";
import {
  allocIoBuffer,
  cpuTimes,
  cString,
  errnoName,
  freeAligned,
  lastErrno,
  libc,
  monoNow,
} from "../../core/libc.ts";
import { errorLine } from "../../core/errors.ts";
import { median } from "../../core/stats.ts";
import { type CpuPerIo, fioArgs, parseFioJson, parseTierbenchJson, type Pattern } from "./_fio.ts";
import { checkDir, intOption, lastLine, UsageError } from "./_fio_process.ts";
import { tierbenchRunArgs } from "./_tierbench.ts";

const BS = 4096;

/** The CPU per I/O of each way of doing the same reads, in one round. */
export interface FloorRound {
  fio: CpuPerIo;
  tierbench: CpuPerIo;
  /** The bare loop: pread and two clock reads per I/O. */
  loop_with_clock: CpuPerIo;
  /** The bare loop: pread alone. */
  loop_pread_only: CpuPerIo;
}

/**
 * Reads 4 KiB blocks of `fd` at random for `seconds` (or `count` reads, when
 * given) and returns the calling thread's CPU per read.
 *
 * @example
 * ```ts
 * import { bareLoop } from "./ffi_floor.ts";
 * import { allocIoBuffer, cString, freeAligned, libc } from "../../core/libc.ts";
 * const path = Deno.makeTempFileSync();
 * Deno.writeFileSync(path, new Uint8Array(1 << 16));
 * const fd = libc().open(cString(path), 0, 0);
 * const buf = allocIoBuffer(4096, 4096);
 * const r = bareLoop(fd, buf.pointer, 16, { count: 10, clock: true });
 * libc().close(fd);
 * freeAligned(buf);
 * Deno.removeSync(path);
 * console.assert(r.ios === 10);
 * ```
 */
export function bareLoop(
  fd: number,
  ptr: Deno.PointerValue,
  blocks: number,
  o: { seconds?: number; count?: number; clock: boolean },
): { ios: number; cpu: CpuPerIo } {
  const { pread } = libc();
  const count = BigInt(BS);
  const end = monoNow() + (o.seconds ?? 0) * 1000;
  let x = 2463534242;
  let ios = 0;
  const c0 = cpuTimes("thread");
  for (; o.count === undefined ? true : ios < o.count; ios++) {
    if (o.clock) monoNow();
    x ^= x << 13; // xorshift32: every block, in an order no cache predicts
    x ^= x >>> 17;
    x ^= x << 5;
    if (pread(fd, ptr, count, BigInt(((x >>> 0) % blocks) * BS)) !== BS) {
      throw new Error(`pread: short or failed read at block ${(x >>> 0) % blocks}`);
    }
    // Without a clock the loop ends by its count; with one, by time, checked on every read.
    if (o.clock && monoNow() >= end && o.count === undefined) break;
  }
  const c1 = cpuTimes("thread");
  const n = Math.max(ios, 1);
  return { ios, cpu: { usr: (c1.usr_ns - c0.usr_ns) / n, sys: (c1.sys_ns - c0.sys_ns) / n } };
}

/** Runs `cmd args`, output captured; throws its last line when it fails. */
async function runTool(what: string, cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  if (!out.success) throw new Error(`${what}: ${lastLine(out)}`);
  return new TextDecoder().decode(out.stdout);
}

function pattern(size: number, runtimeS: number): Pattern {
  return {
    rw: "randread",
    bs: BS,
    size,
    engine: "psync",
    iodepth: 1,
    direct: false,
    runtimeS,
    rampS: 1,
  };
}

async function fioRound(file: string, p: Pattern): Promise<CpuPerIo> {
  return parseFioJson(await runTool("fio", "fio", fioArgs(p, file)), "read").cpu_per_io_ns;
}

async function tierbenchRound(dir: string, file: string, p: Pattern): Promise<CpuPerIo> {
  const output = join(dir, "tierbench.json");
  await runTool(
    "tierbench",
    Deno.execPath(),
    tierbenchRunArgs([
      "run",
      ...["--tier", `memory:${dir}`, "--filename", file, "--rw", "randread"],
      ...["--bs", String(BS), "--size", String(p.size), "--engine", "psync", "--iodepth", "1"],
      ...["--runtime", String(p.runtimeS), "--ramp", String(p.rampS), "--numjobs", "1"],
    ], output),
  );
  try {
    return parseTierbenchJson(await Deno.readTextFile(output), "read").cpu_per_io_ns;
  } finally {
    await Deno.remove(output);
  }
}

/** The two bare loops on `file`: with clock reads for `seconds`, then as many reads without. */
function loopRound(
  file: string,
  size: number,
  seconds: number,
): Omit<FloorRound, "fio" | "tierbench"> {
  const fd = libc().open(cString(file), 0, 0);
  if (fd < 0) throw new Error(`open ${file}: ${errnoName(lastErrno())}`);
  const buf = allocIoBuffer(BS, BS);
  try {
    const blocks = size / BS;
    bareLoop(fd, buf.pointer, blocks, { seconds: 1, clock: true }); // warm-up: optimised code
    const withClock = bareLoop(fd, buf.pointer, blocks, { seconds, clock: true });
    const preadOnly = bareLoop(fd, buf.pointer, blocks, { count: withClock.ios, clock: false });
    return { loop_with_clock: withClock.cpu, loop_pread_only: preadOnly.cpu };
  } finally {
    libc().close(fd);
    freeAligned(buf);
  }
}

/** Writes `size` bytes of random data to `file`, so that every read moves real bytes. */
async function layOut(file: string, size: number): Promise<void> {
  const chunk = new Uint8Array(1 << 20);
  for (let at = 0; at < chunk.length; at += 65536) {
    crypto.getRandomValues(chunk.subarray(at, at + 65536));
  }
  using f = await Deno.open(file, { write: true, createNew: true, mode: 0o600 });
  for (let at = 0; at < size; at += chunk.length) await f.write(chunk);
}

const ns = (c: CpuPerIo) => `${Math.round(c.usr)}+${Math.round(c.sys)} ns`;

/** One round's line: each way's CPU per I/O, user+system. */
export function roundLine(i: number, r: FloorRound): string {
  return `[round ${i}] fio ${ns(r.fio)} · tierbench ${ns(r.tierbench)} · ` +
    `bare loop ${ns(r.loop_with_clock)} (pread alone ${ns(r.loop_pread_only)})`;
}

/** The medians over rounds, and the ratios to fio's user time, as Markdown. */
export function summary(rounds: readonly FloorRound[]): string {
  const keys = ["fio", "tierbench", "loop_with_clock", "loop_pread_only"] as const;
  const labels = {
    fio: "fio psync",
    tierbench: "tierbench psync",
    loop_with_clock: "bare FFI loop: pread + 2 clock reads",
    loop_pread_only: "bare FFI loop: pread alone",
  };
  const fioUsr = median(rounds.map((r) => r.fio.usr));
  const lines = [
    "| 4 KiB randread, depth 1 | user ns/I/O | system ns/I/O | user ÷ fio's |",
    "|---|---:|---:|---:|",
  ];
  for (const k of keys) {
    const usr = median(rounds.map((r) => r[k].usr));
    const sys = median(rounds.map((r) => r[k].sys));
    lines.push(
      `| ${labels[k]} | ${Math.round(usr)} | ${Math.round(sys)} | ${(usr / fioUsr).toFixed(2)} |`,
    );
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const o = new Command()
    .name("bench:ffi-floor")
    .option("--rounds <n>", "rounds", "3")
    .option("--runtime <s>", "measured seconds of each run", "3")
    .option("--size <MiB>", "the file's size, MiB", "256")
    .option("--dir <dir>", "a directory on tmpfs, where the device costs nothing", "/dev/shm")
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .parse(Deno.args, { from: "user" })
    .opts();
  const rounds = intOption("rounds", o.rounds, 1, 99);
  const runtime = intOption("runtime", o.runtime, 1, 3600);
  const size = intOption("size", o.size, 1, 1 << 20) * (1 << 20);
  await checkDir("dir", o.dir);
  const dir = await Deno.makeTempDir({ dir: o.dir, prefix: "tierbench-ffi-floor-" });
  try {
    const file = join(dir, "floor.dat");
    await layOut(file, size);
    const p = pattern(size, runtime);
    const all: FloorRound[] = [];
    for (let i = 1; i <= rounds; i++) {
      const r = {
        fio: await fioRound(file, p),
        tierbench: await tierbenchRound(dir, file, p),
        ...loopRound(file, size, runtime),
      };
      all.push(r);
      console.log(roundLine(i, r));
    }
    const load = Deno.loadavg().map((x) => x.toFixed(1)).join(" ");
    console.log(`\n${summary(all)}\n\nload average at the end: ${load}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  try {
    await main();
  } catch (e) {
    if (e instanceof CommanderError && e.exitCode === 0) Deno.exit(0); // --help
    const usage = e instanceof CommanderError || e instanceof UsageError;
    console.error(`bench:ffi-floor: ${errorLine(e).replace(/^error: /, "").replaceAll("\n", " ")}`);
    Deno.exit(usage ? 2 : 1);
  }
}
