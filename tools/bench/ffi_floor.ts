/**
 * `deno task bench:ffi-floor`: the least CPU per I/O that any harness written
 * in JavaScript on Deno's FFI can spend, against fio and tierbench in the
 * same run, for one engine (`--engine psync`, the default, or `io_uring`).
 *
 * Each round runs, on one file of `--size` bytes in `--dir`, 4 KiB random
 * reads at depth 1 for `--runtime` seconds:
 *
 * - fio with the engine, its job's CPU per I/O;
 * - tierbench (`run --engine …`), its job thread's CPU per I/O;
 * - two bare loops in this process, with the same libc bindings, clock and
 *   (for io_uring) ring that tierbench's engine uses: the engine's calls and
 *   the clock reads a latency needs (psync: its start and end; io_uring: its
 *   submission too, as fio and tierbench read it), then the calls alone —
 *   pread, or io_uring's submit and wait. Nothing else runs in them: no
 *   histogram, no offsets beyond a multiply and a modulo, no checks.
 *
 * A bare loop is the floor of the JavaScript side. Where tierbench's CPU per
 * I/O is above fio's but near the floor, the difference is the cost of
 * crossing from JavaScript into libc and back, not tierbench's bookkeeping;
 * where the floor is below fio's, a JavaScript harness can match fio, and
 * what tierbench spends above the floor is its own.
 *
 * ```sh
 * deno task bench:ffi-floor [--rounds 3] [--runtime 3] [--dir /dev/shm]
 *   [--engine psync|io_uring] [--registered] [--cpus-allowed 1]
 * ```
 *
 * `--registered` is io_uring's fixedbufs and registerfiles, in all three;
 * `--cpus-allowed` pins fio's job, tierbench's job thread and the bare loops
 * to those CPUs (io_uring's workers follow the thread that made the ring).
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
import { parseCpuList, pinThread, threadCpus } from "../../core/cpu_affinity.ts";
import { errorLine } from "../../core/errors.ts";
import { median } from "../../core/stats.ts";
import { UringQueue } from "../../engines/mod.ts";
import {
  type CpuPerIo,
  fioArgs,
  parseFioJson,
  parseTierbenchJson,
  type Pattern,
  tierbenchArgs,
} from "./_fio.ts";
import { checkDir, cpusOption, intOption, lastLine, UsageError } from "./_fio_process.ts";
import { tierbenchRunArgs } from "./_tierbench.ts";

const BS = 4096;

/** The engines whose floor is measured. */
const ENGINES = ["psync", "io_uring"] as const;
type FloorEngine = typeof ENGINES[number];

/** The CPU per I/O of each way of doing the same reads, in one round. */
export interface FloorRound {
  fio: CpuPerIo;
  tierbench: CpuPerIo;
  /** The bare loop: the engine's calls and the clock reads a latency needs, per I/O. */
  loop_with_clock: CpuPerIo;
  /** The bare loop: the engine's calls alone. */
  loop_without_clock: CpuPerIo;
}

/**
 * One read of 4 KiB at `offset`, the engine's way: the bytes read, or a
 * negative errno. With `clock`, it also reads the clock where the engine's
 * latency needs more than the loop's two reads (io_uring: after the submit).
 */
export type BareRead = (offset: number, clock: boolean) => number;

/**
 * Reads 4 KiB blocks at random with `read` for `seconds` (or `count` reads,
 * when given) and returns the calling thread's CPU per read.
 *
 * @example
 * ```ts
 * import { bareLoop, preadRead } from "./ffi_floor.ts";
 * import { allocIoBuffer, cString, freeAligned, libc } from "../../core/libc.ts";
 * const path = Deno.makeTempFileSync();
 * Deno.writeFileSync(path, new Uint8Array(1 << 16));
 * const fd = libc().open(cString(path), 0, 0);
 * const buf = allocIoBuffer(4096, 4096);
 * const r = bareLoop(preadRead(fd, buf.pointer), 16, { count: 10, clock: true });
 * libc().close(fd);
 * freeAligned(buf);
 * Deno.removeSync(path);
 * console.assert(r.ios === 10);
 * ```
 */
export function bareLoop(
  read: BareRead,
  blocks: number,
  o: { seconds?: number; count?: number; clock: boolean },
): { ios: number; cpu: CpuPerIo } {
  const end = monoNow() + (o.seconds ?? 0) * 1000;
  let x = 2463534242;
  let ios = 0;
  const c0 = cpuTimes("thread");
  for (; o.count === undefined ? true : ios < o.count; ios++) {
    if (o.clock) monoNow();
    x ^= x << 13; // xorshift32: every block, in an order no cache predicts
    x ^= x >>> 17;
    x ^= x << 5;
    const got = read(((x >>> 0) % blocks) * BS, o.clock);
    if (got !== BS) {
      const why = got < 0 ? errnoName(-got) : `${got} bytes`;
      throw new Error(`short or failed read at block ${(x >>> 0) % blocks}: ${why}`);
    }
    // Without a clock the loop ends by its count; with one, by time, checked on every read.
    if (o.clock && monoNow() >= end && o.count === undefined) break;
  }
  const c1 = cpuTimes("thread");
  const n = Math.max(ios, 1);
  return { ios, cpu: { usr: (c1.usr_ns - c0.usr_ns) / n, sys: (c1.sys_ns - c0.sys_ns) / n } };
}

/**
 * psync's read: pread(2) of 4 KiB into `ptr`.
 *
 * @example
 * ```ts
 * import { preadRead } from "./ffi_floor.ts";
 * import { allocIoBuffer, cString, freeAligned, libc } from "../../core/libc.ts";
 * const path = Deno.makeTempFileSync();
 * Deno.writeFileSync(path, new Uint8Array(8192));
 * const fd = libc().open(cString(path), 0, 0);
 * const buf = allocIoBuffer(4096, 4096);
 * console.assert(preadRead(fd, buf.pointer)(4096, false) === 4096);
 * libc().close(fd);
 * freeAligned(buf);
 * Deno.removeSync(path);
 * ```
 */
export function preadRead(fd: number, ptr: Deno.PointerValue): BareRead {
  const { pread } = libc();
  const count = BigInt(BS);
  return (offset) => pread(fd, ptr, count, BigInt(offset));
}

/**
 * io_uring's read at depth 1 through the engine's own queue: one request
 * prepared in slot 0, submitted, waited for (unless already complete) and
 * reaped, as tierbench's io_uring engine does each at depth 1.
 *
 * @example
 * ```ts ignore
 * const q = UringQueue.open({ entries: 1, slotBytes: 4096, alignment: 4096 }, fail);
 * const bytes = uringRead(q, fd)(0, false);
 * ```
 */
export function uringRead(q: UringQueue, fd: number): BareRead {
  return (offset, clock) => {
    q.prepare(0, false, fd, 0, offset, BS);
    const rc = q.submit();
    if (rc !== 1) return rc < 0 ? rc : 0;
    if (clock) monoNow(); // the submission's end: fio's and tierbench's slat
    const n = q.reapReady() || q.getevents();
    if (n <= 0) return n;
    const res = q.eventResult(0);
    q.release(n);
    return res;
  };
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

/** What the three read, all at depth 1: 4 KiB at random, with the engine and pinning asked. */
type FloorOptions = Pick<Pattern, "size" | "runtimeS" | "registered" | "cpusAllowed"> & {
  engine: FloorEngine;
};

function pattern(o: FloorOptions): Pattern {
  const { engine, size, runtimeS, registered, cpusAllowed } = o;
  return {
    ...{ rw: "randread", bs: BS, size, engine, iodepth: 1, direct: false, runtimeS, rampS: 1 },
    ...(registered ? { registered } : {}),
    ...(cpusAllowed === undefined ? {} : { cpusAllowed }),
  };
}

async function fioRound(file: string, p: Pattern): Promise<CpuPerIo> {
  return parseFioJson(await runTool("fio", "fio", fioArgs(p, file)), "read").cpu_per_io_ns;
}

async function tierbenchRound(dir: string, file: string, p: Pattern): Promise<CpuPerIo> {
  const output = join(dir, "tierbench.json");
  const args = tierbenchRunArgs(["run", ...tierbenchArgs(p, `memory:${dir}`, file)], output);
  await runTool("tierbench", Deno.execPath(), args);
  try {
    return parseTierbenchJson(await Deno.readTextFile(output), "read").cpu_per_io_ns;
  } finally {
    await Deno.remove(output);
  }
}

/** Runs `f` with the calling thread on the CPUs `cpus` names (as it is when absent), then restores it. */
function onCpus<T>(cpus: string | undefined, f: () => T): T {
  if (cpus === undefined) return f();
  const before = threadCpus();
  const rc = pinThread(parseCpuList(cpus));
  if (rc !== 0) throw new Error(`--cpus-allowed ${cpus}: sched_setaffinity: ${errnoName(rc)}`);
  try {
    return f();
  } finally {
    pinThread(before);
  }
}

/** The engine's read on `fd` for the bare loops, and what frees what it holds. */
function openRead(p: Pattern, fd: number): { read: BareRead; close: () => void } {
  if (p.engine === "psync") {
    const buf = allocIoBuffer(BS, BS);
    return { read: preadRead(fd, buf.pointer), close: () => freeAligned(buf) };
  }
  const q = UringQueue.open({
    entries: 1,
    singleIssuer: true,
    slotBytes: BS,
    alignment: BS,
    fixedbufs: p.registered === true,
    registerfiles: p.registered === true,
    files: [fd],
  }, (syscall, errno) => {
    throw new Error(`${syscall}: ${errnoName(errno)}`);
  });
  return { read: uringRead(q, fd), close: () => q.close() };
}

/** The two bare loops on `file`: with clock reads for `seconds`, then as many reads without. */
function loopRound(file: string, p: Pattern): Omit<FloorRound, "fio" | "tierbench"> {
  const fd = libc().open(cString(file), 0, 0);
  if (fd < 0) throw new Error(`open ${file}: ${errnoName(lastErrno())}`);
  try {
    // pinned before the ring is made: io_uring's workers take the CPUs of the thread that starts them
    return onCpus(p.cpusAllowed, () => {
      const { read, close } = openRead(p, fd);
      try {
        const blocks = p.size / BS;
        bareLoop(read, blocks, { seconds: 1, clock: true }); // warm-up: optimised code
        const withClock = bareLoop(read, blocks, { seconds: p.runtimeS, clock: true });
        const without = bareLoop(read, blocks, { count: withClock.ios, clock: false });
        return { loop_with_clock: withClock.cpu, loop_without_clock: without.cpu };
      } finally {
        close();
      }
    });
  } finally {
    libc().close(fd);
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
    `bare loop ${ns(r.loop_with_clock)} (without the clock ${ns(r.loop_without_clock)})`;
}

/** Each way's label in the summary, for the engine of `p`. */
function labels(p: Pick<Pattern, "engine" | "registered">): Record<keyof FloorRound, string> {
  const engine = p.engine + (p.registered ? " (fixedbufs, registerfiles)" : "");
  const calls = p.engine === "psync" ? "pread" : "io_uring submit + wait";
  const clocks = p.engine === "psync" ? 2 : 3;
  return {
    fio: `fio ${engine}`,
    tierbench: `tierbench ${engine}`,
    loop_with_clock: `bare FFI loop: ${calls} + ${clocks} clock reads`,
    loop_without_clock: `bare FFI loop: ${calls} alone`,
  };
}

/**
 * The medians over rounds, and the ratios to fio's: of user time, and of
 * user + system time (each round's sum, then the median), as Markdown.
 */
export function summary(
  rounds: readonly FloorRound[],
  p: Pick<Pattern, "engine" | "registered">,
): string {
  const label = labels(p);
  const med = (k: keyof FloorRound, of: (c: CpuPerIo) => number) =>
    median(rounds.map((r) => of(r[k])));
  const usrOf = (c: CpuPerIo) => c.usr;
  const allOf = (c: CpuPerIo) => c.usr + c.sys;
  const lines = [
    "| 4 KiB randread, depth 1 | user ns/I/O | system ns/I/O | user ÷ fio's | user+system ÷ fio's |",
    "|---|---:|---:|---:|---:|",
  ];
  for (const k of Object.keys(label) as (keyof FloorRound)[]) {
    const usr = med(k, usrOf);
    const cells = [Math.round(usr), Math.round(med(k, (c) => c.sys))];
    const ratios = [usr / med("fio", usrOf), med(k, allOf) / med("fio", allOf)];
    lines.push(`| ${label[k]} | ${[...cells, ...ratios.map((x) => x.toFixed(2))].join(" | ")} |`);
  }
  return lines.join("\n");
}

function engineOption(text: string): FloorEngine {
  const engine = ENGINES.find((e) => e === text);
  if (engine === undefined) {
    throw new UsageError(`--engine: "${text}" is neither ${ENGINES.join(" nor ")}`);
  }
  return engine;
}

function options(args: string[]): FloorOptions & { rounds: number; dir: string } {
  const o = new Command()
    .name("bench:ffi-floor")
    .option("--rounds <n>", "rounds", "3")
    .option("--runtime <s>", "measured seconds of each run", "3")
    .option("--size <MiB>", "the file's size, MiB", "256")
    .option("--dir <dir>", "a directory on tmpfs, where the device costs nothing", "/dev/shm")
    .option("--engine <engine>", `the engine: ${ENGINES.join(" or ")}`, "psync")
    .option(
      "--registered",
      "io_uring: fixed buffers and registered files (fio's fixedbufs, registerfiles)",
    )
    .option("--cpus-allowed <cpus>", "pin the three to these CPUs (fio's cpus_allowed)")
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .parse(args, { from: "user" })
    .opts();
  const engine = engineOption(o.engine);
  if (o.registered && engine !== "io_uring") {
    throw new UsageError(`--registered: io_uring's alone; --engine is ${engine}`);
  }
  return {
    rounds: intOption("rounds", o.rounds, 1, 99),
    runtimeS: intOption("runtime", o.runtime, 1, 3600),
    size: intOption("size", o.size, 1, 1 << 20) * (1 << 20),
    dir: o.dir,
    engine,
    registered: o.registered === true,
    ...cpusOption(o.cpusAllowed),
  };
}

async function main(): Promise<void> {
  const o = options(Deno.args);
  await checkDir("dir", o.dir);
  const dir = await Deno.makeTempDir({ dir: o.dir, prefix: "tierbench-ffi-floor-" });
  try {
    const file = join(dir, "floor.dat");
    await layOut(file, o.size);
    const p = pattern(o);
    const all: FloorRound[] = [];
    for (let i = 1; i <= o.rounds; i++) {
      const r = {
        fio: await fioRound(file, p),
        tierbench: await tierbenchRound(dir, file, p),
        ...loopRound(file, p),
      };
      all.push(r);
      console.log(roundLine(i, r));
    }
    const load = Deno.loadavg().map((x) => x.toFixed(1)).join(" ");
    const pinned = p.cpusAllowed === undefined ? "" : ` · pinned to CPUs ${p.cpusAllowed}`;
    console.log(`\n${summary(all, p)}\n\nload average at the end: ${load}${pinned}`);
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
