/**
 * The cases `tools/bench/fio_compare.ts` runs: each a pattern both tools run, where
 * it runs, and the throughput tierbench must reach against fio. Every case
 * also compares the CPU time each tool spends per I/O, against
 * {@linkcode CPU_TARGET}.
 *
 * @module
 */

import type { Pattern } from "./_fio.ts";
import type { Place } from "./_fio_process.ts";

const MiB = 1024 ** 2;

/** Most acceptable ratio of tierbench's CPU time per I/O to fio's, in every case. */
export const CPU_TARGET = 1.0;

/** Where a case runs: a scratch directory, or no I/O at all (the null case). */
export type CasePlace = Place | "null";

/** Where the disk cases run: the directory of `--dir`, or a loop device made for the run. */
export type DeviceMode = "disk" | "loop";

/** One comparison: a pattern both tools run, and what tierbench must reach. */
export interface CaseDef {
  readonly id: string;
  readonly label: string;
  readonly place: CasePlace;
  readonly metric: "bw" | "iops";
  /** Least acceptable ratio tierbench/fio of the metric. */
  readonly target: number;
  readonly pattern: Pick<Pattern, "rw" | "bs" | "engine" | "iodepth" | "direct" | "registered">;
}

/** The engine as a case names it: io_uring with fixedbufs + registerfiles is `io_uring-reg`. */
function engineName(engine: Pattern["engine"], registered: boolean): string {
  return registered ? `${engine}-reg` : engine;
}

/** What a case's id and label say about its place: nothing on the disk. */
function placeWords(place: Place): { id: string; label: string } {
  return place === "tmpfs" ? { id: "tmpfs-", label: "tmpfs" } : { id: "", label: "direct" };
}

/** 1 MiB sequential reads or writes, O_DIRECT on the disk, buffered on tmpfs. */
function seqCase(
  rw: "read" | "write",
  engine: Pattern["engine"],
  iodepth: number,
  place: Place = "disk",
): CaseDef {
  const w = placeWords(place);
  return {
    id: `seq${rw}-1m-${w.id}${engine}-d${iodepth}`,
    label: `1m seq ${rw}, ${w.label}, ${engine} d${iodepth}`,
    place,
    metric: "bw",
    target: 0.98,
    pattern: { rw, bs: MiB, engine, iodepth, direct: place === "disk" },
  };
}

/** 4 KiB random reads, O_DIRECT on the disk (or the loop device), buffered on tmpfs. */
function randreadCase(
  engine: Pattern["engine"],
  iodepth: number,
  target: number,
  place: Place = "disk",
  registered = false,
): CaseDef {
  const w = placeWords(place);
  const name = engineName(engine, registered);
  return {
    id: `randread-4k-${w.id}${name}-d${iodepth}`,
    label: `4k rand read, ${w.label}, ${name} d${iodepth}`,
    place,
    metric: "iops",
    target,
    pattern: {
      rw: "randread",
      bs: 4096,
      engine,
      iodepth,
      direct: place === "disk",
      ...(registered ? { registered } : {}),
    },
  };
}

/** tierbench's null tier against fio's null engine: the harnesses alone, no I/O. */
const NULL_CASE: CaseDef = {
  id: "null-4k-randread-d1",
  label: "null tier vs fio null engine, 4k d1",
  place: "null",
  metric: "iops",
  target: 1.3,
  pattern: { rw: "randread", bs: 4096, engine: "null", iodepth: 1, direct: false },
};

/** The compared cases on a real disk, in the order they run in each round. */
const DISK_CASES: readonly CaseDef[] = [
  seqCase("read", "psync", 1),
  seqCase("read", "libaio", 1),
  seqCase("read", "libaio", 8),
  seqCase("write", "psync", 1),
  seqCase("write", "libaio", 1),
  seqCase("write", "libaio", 8),
  randreadCase("psync", 1, 0.95, "tmpfs"),
  randreadCase("libaio", 32, 0.9),
  randreadCase("io_uring", 32, 0.9),
  NULL_CASE,
];

/**
 * 4 KiB random reads at depth 1 and 32 with every engine (psync has no
 * depth: depth 1 only), io_uring also with fixedbufs + registerfiles; and 1
 * MiB sequential reads and writes at depth 8 with libaio and io_uring.
 */
function perRequestCases(place: Place): CaseDef[] {
  const d1 = place === "tmpfs" ? 0.95 : 0.97;
  const d32 = 0.95;
  return [
    randreadCase("psync", 1, d1, place),
    randreadCase("libaio", 1, d1, place),
    randreadCase("libaio", 32, d32, place),
    randreadCase("io_uring", 1, d1, place),
    randreadCase("io_uring", 32, d32, place),
    randreadCase("io_uring", 1, d1, place, true),
    randreadCase("io_uring", 32, d32, place, true),
    seqCase("read", "libaio", 8, place),
    seqCase("read", "io_uring", 8, place),
    seqCase("write", "libaio", 8, place),
    seqCase("write", "io_uring", 8, place),
  ];
}

/**
 * The compared cases of loop mode: every per-request case on the loop
 * device and again on tmpfs, 1 MiB psync at depth 1 on the loop device, and
 * the null case.
 */
const LOOP_CASES: readonly CaseDef[] = [
  seqCase("read", "psync", 1),
  seqCase("write", "psync", 1),
  ...perRequestCases("disk"),
  ...perRequestCases("tmpfs"),
  NULL_CASE,
];

/**
 * The cases of a device mode.
 *
 * @example
 * ```ts
 * import { casesOf } from "./_fio_cases.ts";
 * console.assert(casesOf("loop").some((c) => c.id === "randread-4k-tmpfs-io_uring-reg-d32"));
 * ```
 */
export function casesOf(device: DeviceMode): readonly CaseDef[] {
  return device === "loop" ? LOOP_CASES : DISK_CASES;
}

/** A case's figure of its metric. */
export function metricOf(c: CaseDef, f: { bw_bytes: number; iops: number }): number {
  return c.metric === "bw" ? f.bw_bytes : f.iops;
}
