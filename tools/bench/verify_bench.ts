/**
 * `deno task bench:verify`: what `--verify` costs. The same write and read
 * runs with and without verify, on the memory tier and on the file tier, in
 * one invocation (one run id), alternating which goes first each round; the
 * figure is the median of verify bandwidth / plain bandwidth over rounds.
 * Then the checksums verify could use, on 1 MiB blocks: `node:zlib` crc32
 * (the one it uses), hash-wasm's xxhash64 and crc32c, WebCrypto SHA-256.
 *
 * ```sh
 * deno task bench:verify [--file-dir DIR] [--memory-dir /dev/shm] [--rounds 3] \
 *   [--runtime 2] [--size 256m]
 * ```
 *
 * Each mode works in its own scratch directory (a verify read needs its file
 * laid out with headers), removed at the end.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import Table from "cli-table3";
import { crc32 } from "node:zlib";
import { createCRC32, createXXHash64 } from "hash-wasm";
import { DEFAULT_MEMORY_DIR, type JobOptions, parseJobOptions } from "../../core/config.ts";
import { hostFacts } from "../../core/host.ts";
import { median } from "../../core/stats.ts";
import { runJob } from "../../bench/runner.ts";
import { FileTier, MemoryTier } from "../../tiers/mod.ts";
import { newRunId } from "../../tiers/scratch.ts";
import type { Tier } from "../../tiers/types.ts";

const MiB = 1024 ** 2;

/** One measured pattern on one tier. */
interface Point {
  readonly tier: "memory" | "file";
  readonly rw: "write" | "read";
  readonly bs: string;
  /** Extra options (the file tier runs O_DIRECT through libaio, 8 deep). */
  readonly extra: Record<string, string | boolean>;
}

function mbps(bytesPerS: number): string {
  return (bytesPerS / 1e6).toFixed(0);
}

/** MiB/s of `f` over 1 MiB blocks, for about 0.5 s. */
async function rate(
  f: (b: Uint8Array<ArrayBuffer>) => unknown | Promise<unknown>,
): Promise<number> {
  const buf = new Uint8Array(MiB);
  for (let at = 0; at < buf.length; at += 65536) {
    crypto.getRandomValues(buf.subarray(at, at + 65536));
  }
  for (let i = 0; i < 10; i++) await f(buf);
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 500) {
    buf[n % MiB] = n & 0xff; // no caching of results across calls
    await f(buf);
    n++;
  }
  return n / ((performance.now() - t0) / 1000);
}

async function checksums(): Promise<[string, number][]> {
  const xx = await createXXHash64();
  const c32c = await createCRC32(0x82f63b78);
  return [
    ["node:zlib crc32 (used)", await rate((b) => crc32(b))],
    ["hash-wasm xxhash64", await rate((b) => xx.init().update(b).digest("binary"))],
    ["hash-wasm crc32c", await rate((b) => c32c.init().update(b).digest("binary"))],
    ["WebCrypto SHA-256 (async)", await rate((b) => crypto.subtle.digest("SHA-256", b))],
  ];
}

/** The command line, parsed. */
type Settings = ReturnType<typeof parseArgs>;

function parseArgs(args: string[]) {
  return new Command()
    .name("bench:verify")
    .option("--file-dir <dir>", "directory on the disk for the file tier", Deno.cwd())
    .option("--memory-dir <dir>", "tmpfs directory for the memory tier", DEFAULT_MEMORY_DIR)
    .option("--rounds <n>", "rounds (median taken)", "3")
    .option("--runtime <s>", "measured seconds per run", "2")
    .option("--ramp <s>", "warm-up per run, excluded", "0.5")
    .option("--size <size>", "file size per run", "256m")
    .parse(["deno", "bench:verify", ...args])
    .opts();
}

/** Every tier × block size × direction measured. */
function pointsOf(): Point[] {
  const points: Point[] = [];
  for (const tier of ["memory", "file"] as const) {
    for (const bs of ["4k", "1m"]) {
      for (const rw of ["write", "read"] as const) {
        const extra = tier === "file" ? { engine: "libaio", iodepth: "8", direct: true } : {};
        points.push({ tier, rw, bs, extra });
      }
    }
  }
  return points;
}

/** Bandwidths of each pattern (`tier rw bs`), without and with verify, one per round. */
type Bandwidths = Map<string, { plain: number[]; verify: number[] }>;

/** Runs every point with and without verify, `rounds` times, taking turns at going first. */
async function measure(o: Settings, rounds: number): Promise<Bandwidths> {
  const runId = newRunId();
  const points = pointsOf();
  // One tier object per tier and mode, all under this run id.
  const tiers = new Map<string, Tier>();
  const tierOf = async (p: Point, verify: boolean): Promise<Tier> => {
    const key = `${p.tier}-${verify}`;
    let t = tiers.get(key);
    if (!t) {
      t = p.tier === "memory"
        ? new MemoryTier({ kind: "memory", path: o.memoryDir }, `${runId}-${verify ? "v" : "p"}`)
        : new FileTier({ kind: "file", path: o.fileDir }, `${runId}-${verify ? "v" : "p"}`);
      tiers.set(key, t);
      await t.setup();
    }
    return t;
  };
  const bw: Bandwidths = new Map();
  try {
    for (let round = 0; round < rounds; round++) {
      for (const p of points) {
        const order = round % 2 === 0 ? [false, true] : [true, false];
        for (const verify of order) {
          const job: JobOptions = parseJobOptions({
            tier: p.tier === "memory" ? `memory:${o.memoryDir}` : `file:${o.fileDir}`,
            rw: p.rw,
            bs: p.bs,
            size: o.size,
            runtime: o.runtime,
            ramp: o.ramp,
            verify,
            ...p.extra,
          });
          const r = await runJob(await tierOf(p, verify), job);
          if (r.status !== "ok") throw new Error(`${job.name}: ${r.error}`);
          const key = `${p.tier} ${p.rw} ${p.bs}`;
          const e = bw.get(key) ?? { plain: [], verify: [] };
          e[verify ? "verify" : "plain"].push(r[p.rw].bw_bytes);
          bw.set(key, e);
          console.error(
            `round ${round + 1}/${rounds} ${key} verify=${verify}: ` +
              `${mbps(r[p.rw].bw_bytes)} MB/s`,
          );
        }
      }
    }
  } finally {
    for (const t of tiers.values()) await t[Symbol.asyncDispose]();
  }
  return bw;
}

/** Prints the medians, verify against plain, then the checksums' rates. */
async function report(o: Settings, rounds: number, bw: Bandwidths): Promise<void> {
  const host = hostFacts();
  console.log(
    `bench:verify on ${host.cpu_model} (${host.cores} cores), ${rounds} rounds of ` +
      `${o.runtime} s after ${o.ramp} s ramp; memory: ${o.memoryDir} (psync), ` +
      `file: ${o.fileDir} (libaio, O_DIRECT, iodepth 8); medians`,
  );
  const t = new Table({
    head: ["tier", "rw", "bs", "plain MB/s", "verify MB/s", "verify / plain"],
  });
  for (const [key, e] of bw) {
    const ratios = e.plain.map((x, i) => (e.verify[i] ?? 0) / x);
    t.push([
      ...key.split(" "),
      mbps(median(e.plain)),
      mbps(median(e.verify)),
      median(ratios).toFixed(2),
    ]);
  }
  console.log(t.toString());
  const c = new Table({ head: ["checksum, 1 MiB blocks", "MiB/s"] });
  for (const [name, r] of await checksums()) c.push([name, r.toFixed(0)]);
  console.log(c.toString());
}

async function main(): Promise<void> {
  const o = parseArgs(Deno.args);
  const rounds = Number(o.rounds);
  await report(o, rounds, await measure(o, rounds));
}

if (import.meta.main) await main();
