/**
 * `deno task bench:ffi-floor`: the least CPU per I/O that any harness written
 * in JavaScript on Deno's FFI can spend, against fio and tierbench in the
 * same run, for one engine (`--engine psync`, the default, or `io_uring`).
 *
 * Each round runs, on one file of `--size` bytes in `--dir`, reads of `--bs`
 * bytes (4 KiB at random, at depth 1, unless told) for `--runtime` seconds:
 *
 * - fio with the engine, its job's CPU per I/O;
 * - tierbench (`run --engine …`), its job thread's CPU per I/O;
 * - two bare loops in this process (tools/bench/_bare_loops.ts), with the
 *   same libc bindings, clock and (for io_uring) ring that tierbench's engine
 *   uses: the engine's calls and the clock reads a latency needs (psync: its
 *   start and end; io_uring: its submission too, as fio and tierbench read
 *   it), then the calls alone — pread, or io_uring's submits and waits. Both
 *   are warmed up first, so that neither compiles while measured. Nothing
 *   else runs in them: no histogram, no checks beyond each read's length.
 *
 * A bare loop is the floor of the JavaScript side. Where tierbench's CPU per
 * I/O is above fio's but near the floor, the difference is the cost of
 * crossing from JavaScript into libc and back, not tierbench's bookkeeping;
 * where the floor is below fio's, a JavaScript harness can match fio, and
 * what tierbench spends above the floor is its own. The loop without the
 * clock says what the clock reads cost.
 *
 * ```sh
 * deno task bench:ffi-floor [--rounds 3] [--runtime 3] [--dir /dev/shm]
 *   [--engine psync|io_uring] [--rw randread|read] [--bs 4k] [--iodepth 1]
 *   [--registered] [--cpus-allowed 1]
 * ```
 *
 * `--iodepth` above 1 is io_uring's; `--registered` is io_uring's fixedbufs
 * and registerfiles, in all three; `--cpus-allowed` pins fio's job,
 * tierbench's job thread and the bare loops to those CPUs (io_uring's
 * workers follow the thread that made the ring).
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { join } from "node:path";
import {
  allocIoBuffer,
  cString,
  errnoName,
  freeAligned,
  lastErrno,
  libc,
} from "../../core/libc.ts";
import { parseCpuList, pinThread, threadCpus } from "../../core/cpu_affinity.ts";
import { errorLine } from "../../core/errors.ts";
import { median } from "../../core/stats.ts";
import { formatSize, parseSize } from "../../core/units.ts";
import { UringQueue } from "../../engines/mod.ts";
import { type BareLoop, offsets, psyncLoop, uringLoop, warmUp } from "./_bare_loops.ts";
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

/** What the three read: the engine, the block size, the depth and the order, and the pinning. */
type FloorOptions =
  & Pick<Pattern, "rw" | "bs" | "iodepth" | "size" | "runtimeS" | "registered" | "cpusAllowed">
  & { engine: FloorEngine };

function pattern(o: FloorOptions): Pattern {
  const { rw, bs, iodepth, engine, size, runtimeS, registered, cpusAllowed } = o;
  return {
    ...{ rw, bs, size, engine, iodepth, direct: false, runtimeS, rampS: 1 },
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

/** The engine's bare loop on `fd`, and what frees what it holds. */
function openLoop(p: Pattern, fd: number): { loop: BareLoop; close: () => void } {
  const next = offsets(p.rw === "read" ? "read" : "randread", p.bs, p.size);
  if (p.engine === "psync") {
    const buf = allocIoBuffer(p.bs, 4096);
    return { loop: psyncLoop(fd, buf.pointer, p.bs, next), close: () => freeAligned(buf) };
  }
  const q = UringQueue.open({
    entries: p.iodepth,
    singleIssuer: true,
    slotBytes: p.bs,
    alignment: 4096,
    fixedbufs: p.registered === true,
    registerfiles: p.registered === true,
    files: [fd],
  }, (syscall, errno) => {
    throw new Error(`${syscall}: ${errnoName(errno)}`);
  });
  return { loop: uringLoop(q, fd, p.bs, p.iodepth, next), close: () => q.close() };
}

/** The two bare loops on `file`, warmed up: with clock reads for the runtime, then as many reads without. */
function loopRound(file: string, p: Pattern): Omit<FloorRound, "fio" | "tierbench"> {
  const fd = libc().open(cString(file), 0, 0);
  if (fd < 0) throw new Error(`open ${file}: ${errnoName(lastErrno())}`);
  try {
    // pinned before the ring is made: io_uring's workers take the CPUs of the thread that starts them
    return onCpus(p.cpusAllowed, () => {
      const { loop, close } = openLoop(p, fd);
      try {
        warmUp(loop);
        const withClock = loop({ seconds: p.runtimeS, clock: true });
        const without = loop({ count: withClock.ios, clock: false });
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
  const clocks = p.engine === "psync" ? "2 clock reads" : "clock reads for lat, slat, clat";
  return {
    fio: `fio ${engine}`,
    tierbench: `tierbench ${engine}`,
    loop_with_clock: `bare FFI loop: ${calls} + ${clocks}`,
    loop_without_clock: `bare FFI loop: ${calls} alone`,
  };
}

/**
 * The medians over rounds, and the ratios to fio's: of user time, and of
 * user + system time (each round's sum, then the median), as Markdown.
 */
export function summary(
  rounds: readonly FloorRound[],
  p: Pick<Pattern, "engine" | "registered" | "rw" | "bs" | "iodepth">,
): string {
  const label = labels(p);
  const med = (k: keyof FloorRound, of: (c: CpuPerIo) => number) =>
    median(rounds.map((r) => of(r[k])));
  const usrOf = (c: CpuPerIo) => c.usr;
  const allOf = (c: CpuPerIo) => c.usr + c.sys;
  const lines = [
    `| ${
      formatSize(p.bs)
    } ${p.rw}, depth ${p.iodepth} | user ns/I/O | system ns/I/O | user ÷ fio's | user+system ÷ fio's |`,
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

/** `--bs`: a size fio would take (`4k`, `1m`), a multiple of 512 bytes up to 64 MiB. */
function bsOption(text: string): number {
  const bs = parseSize(text);
  if (bs === undefined || bs < 512 || bs > 64 << 20 || bs % 512 !== 0) {
    throw new UsageError(`--bs: "${text}" is not a size from 512 to 64m in 512-byte steps`);
  }
  return bs;
}

function options(args: string[]): FloorOptions & { rounds: number; dir: string } {
  const o = new Command()
    .name("bench:ffi-floor")
    .option("--rounds <n>", "rounds", "3")
    .option("--runtime <s>", "measured seconds of each run", "3")
    .option("--size <MiB>", "the file's size, MiB", "256")
    .option("--dir <dir>", "a directory on tmpfs, where the device costs nothing", "/dev/shm")
    .option("--engine <engine>", `the engine: ${ENGINES.join(" or ")}`, "psync")
    .option("--rw <rw>", "randread or read (in order)", "randread")
    .option("--bs <size>", "bytes a read (4k, 1m)", "4k")
    .option("--iodepth <n>", "reads in flight (io_uring)", "1")
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
  if (o.rw !== "read" && o.rw !== "randread") {
    throw new UsageError(`--rw: "${o.rw}" is neither randread nor read`);
  }
  const iodepth = intOption("iodepth", o.iodepth, 1, 1024);
  if (iodepth > 1 && engine === "psync") {
    throw new UsageError(`--iodepth: psync reads one at a time; "${o.iodepth}" needs io_uring`);
  }
  const size = intOption("size", o.size, 1, 1 << 20) * (1 << 20);
  const bs = bsOption(o.bs);
  if (bs > size) throw new UsageError(`--bs: "${o.bs}" is more than the file (--size ${o.size})`);
  return {
    rounds: intOption("rounds", o.rounds, 1, 99),
    runtimeS: intOption("runtime", o.runtime, 1, 3600),
    size,
    dir: o.dir,
    engine,
    rw: o.rw,
    bs,
    iodepth,
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
