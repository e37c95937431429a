/**
 * fio's CPU affinity: `cpus_allowed` (a list: `0,5,8-15`), `cpumask` (a bit
 * mask of CPUs 0-31) and `cpus_allowed_policy` (`shared`: every clone of the
 * job may run on every CPU of the set; `split`: clone k runs on one CPU, the
 * ((thread_number − 1) mod n)-th of the set, thread_number counting every
 * clone of every job of the file from 1, as fio's backend hands them out).
 * A job's Worker pins its own thread with sched_setaffinity before it opens
 * its engine, as fio pins each job's thread or process; the rest of the
 * process (the main thread, V8's and Deno's helpers) is left where it was.
 *
 * CPUs are checked against the CPUs this host has (sysconf's
 * _SC_NPROCESSORS_CONF, fio's `cpus_configured()`): fio refuses a CPU beyond
 * them, and so does this. fio reads each number with atoi, so it takes `x`
 * as CPU 0 and stops at an empty item (`0,,1` is CPU 0); here such text is
 * refused, naming it.
 *
 * @module
 */

import { errnoName, lastErrno, libc, strerror } from "./libc.ts";

/** How a job's clones share its CPUs (fio's cpus_allowed_policy). */
export type CpusPolicy = "shared" | "split";

/** The policies, as fio spells them. */
export const CPUS_POLICIES: readonly CpusPolicy[] = ["shared", "split"];

/** A job's CPUs: where its clones' threads run. */
export interface CpuAffinity {
  /** The CPUs of the set, ascending. */
  readonly cpus: readonly number[];
  readonly policy: CpusPolicy;
  /** fio's thread_number of the job's first clone (1 for a job given by options). */
  readonly firstThread: number;
}

/** `_SC_NPROCESSORS_CONF` of glibc on Linux. */
const SC_NPROCESSORS_CONF = 83;
/** The bits of fio's cpumask: an int. */
const MASK_BITS = 32;

let configured: number | undefined;
/** The calling thread's CPUs before {@linkcode pinJobThread} first pinned it. */
let unpinned: number[] | undefined;

/**
 * The CPUs this host has configured (online or not): sysconf's
 * _SC_NPROCESSORS_CONF, as fio's `cpus_configured()`.
 *
 * @example
 * ```ts
 * import { cpusConfigured } from "./cpu_affinity.ts";
 * console.assert(cpusConfigured() >= 1);
 * ```
 */
export function cpusConfigured(): number {
  configured ??= Math.max(1, Number(libc().sysconf(SC_NPROCESSORS_CONF)));
  return configured;
}

/** The CPUs a host of `count` CPUs has, as a list: `0-1`. */
function hostCpus(count: number): string {
  return count === 1 ? "0" : `0-${count - 1}`;
}

/**
 * A cpus_allowed list (`3`, `0-7`, `0,5,8-15`; blanks around items taken)
 * as the CPUs it names, ascending and once each.
 *
 * @throws {Error} saying what is wrong with the text: not a number or a
 * range, a range that runs backwards, a CPU the host does not have.
 *
 * @example
 * ```ts
 * import { parseCpuList } from "./cpu_affinity.ts";
 * console.assert(parseCpuList("0,5,2-3", 8).join() === "0,2,3,5");
 * ```
 */
export function parseCpuList(text: string, count: number = cpusConfigured()): number[] {
  const set = new Set<number>();
  for (const item of text.split(",")) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(item);
    if (!m) {
      const what = item === text ? `"${text}"` : `"${text}": "${item.trim()}"`;
      throw new Error(`${what} is not a CPU or a range (forms: 3, 0-7, 0,5,8-15)`);
    }
    const first = Number(m[1]);
    const last = m[2] === undefined ? first : Number(m[2]);
    if (last < first) throw new Error(`"${text}": the range ${first}-${last} runs backwards`);
    if (last >= count) {
      throw new Error(`"${text}": CPU ${last} is beyond this host's CPUs (${hostCpus(count)})`);
    }
    for (let cpu = first; cpu <= last; cpu++) set.add(cpu);
  }
  return [...set].sort((a, b) => a - b);
}

/**
 * fio's cpumask (bit i: CPU i, for CPUs 0-31) as the CPUs it names.
 *
 * @throws {Error} when it names no CPU, a CPU the host does not have, or
 * bits beyond fio's 32.
 *
 * @example
 * ```ts
 * import { cpusOfMask } from "./cpu_affinity.ts";
 * console.assert(cpusOfMask(34, 8).join() === "1,5");
 * ```
 */
export function cpusOfMask(mask: number, count: number = cpusConfigured()): number[] {
  if (!Number.isInteger(mask) || mask < 0 || mask >= 2 ** MASK_BITS) {
    throw new Error(`${mask}: a mask of CPUs 0-31 (cpus_allowed names more)`);
  }
  const cpus: number[] = [];
  for (let cpu = 0; cpu < MASK_BITS; cpu++) {
    if (Math.floor(mask / 2 ** cpu) % 2 === 0) continue;
    if (cpu >= count) {
      throw new Error(
        `${mask} (0x${mask.toString(16)}) names CPU ${cpu}, beyond this host's CPUs ` +
          `(${hostCpus(count)})`,
      );
    }
    cpus.push(cpu);
  }
  if (cpus.length === 0) throw new Error(`${mask}: names no CPU`);
  return cpus;
}

/**
 * The CPUs clone `clone` (0-based) of a job runs on: the whole set when
 * shared, one CPU of it when split, handed round the set in fio's
 * thread_number order.
 *
 * @example
 * ```ts
 * import { cloneCpus } from "./cpu_affinity.ts";
 * const a = { cpus: [2, 3], policy: "split", firstThread: 2 } as const;
 * console.assert(cloneCpus(a, 0).join() === "3" && cloneCpus(a, 1).join() === "2");
 * ```
 */
export function cloneCpus(a: CpuAffinity, clone: number): readonly number[] {
  if (a.policy === "shared") return a.cpus;
  return [a.cpus[(a.firstThread - 1 + clone) % a.cpus.length]!];
}

/** A cpu_set_t of the host's size (at least glibc's 1024 bits), with `cpus` set. */
function cpuSet(cpus: readonly number[] = []): Uint8Array<ArrayBuffer> {
  const bits = Math.max(1024, cpusConfigured());
  const set = new Uint8Array(Math.ceil(bits / 64) * 8);
  for (const cpu of cpus) set[cpu >> 3]! |= 1 << (cpu & 7);
  return set;
}

/**
 * Pins the calling thread (a job's Worker) to `cpus`: 0, or the errno of
 * sched_setaffinity (EINVAL: none of them is online or in this process's
 * cpuset).
 *
 * @example
 * ```ts ignore
 * import { pinThread } from "./cpu_affinity.ts";
 * if (pinThread([0]) !== 0) console.log("not pinned");
 * ```
 */
export function pinThread(cpus: readonly number[]): number {
  const set = cpuSet(cpus);
  return libc().sched_setaffinity(0, BigInt(set.byteLength), set) === 0 ? 0 : lastErrno();
}

/**
 * The CPUs the calling thread may run on (sched_getaffinity), ascending.
 *
 * @example
 * ```ts
 * import { threadCpus } from "./cpu_affinity.ts";
 * console.assert(threadCpus().length >= 1);
 * ```
 */
export function threadCpus(): number[] {
  const set = cpuSet();
  if (libc().sched_getaffinity(0, BigInt(set.byteLength), set) !== 0) return [];
  const cpus: number[] = [];
  for (let cpu = 0; cpu < set.length * 8; cpu++) {
    if (set[cpu >> 3]! & (1 << (cpu & 7))) cpus.push(cpu);
  }
  return cpus;
}

/**
 * A list of CPUs as fio and the kernel write one (`0-3,5`).
 *
 * @example
 * ```ts
 * import { formatCpuList } from "./cpu_affinity.ts";
 * console.assert(formatCpuList([0, 1, 2, 3, 5]) === "0-3,5");
 * ```
 */
export function formatCpuList(cpus: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < cpus.length;) {
    let j = i;
    while (j + 1 < cpus.length && cpus[j + 1] === cpus[j]! + 1) j++;
    parts.push(j === i ? `${cpus[i]}` : `${cpus[i]}-${cpus[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}

/**
 * A job's thread could not be pinned: its message says to which CPUs and
 * why, named as fio's option (`cpus_allowed: …`).
 */
export class AffinityError extends Error {
  override name = "cpus_allowed";
}

/**
 * Pins the calling thread to `cpus`, or, with none, gives it back the CPUs
 * it had before an earlier call pinned it (a Worker that runs job after
 * job), doing nothing where it was never pinned.
 *
 * @throws {AffinityError} when sched_setaffinity refuses, with its errno.
 *
 * @example
 * ```ts ignore
 * import { pinJobThread } from "./cpu_affinity.ts";
 * pinJobThread([0]); // this thread on CPU 0
 * pinJobThread(undefined); // back where it was
 * ```
 */
export function pinJobThread(cpus: readonly number[] | undefined): void {
  if (cpus === undefined && unpinned === undefined) return;
  unpinned ??= threadCpus();
  const want = cpus ?? unpinned;
  const errno = pinThread(want);
  if (errno === 0) return;
  throw new AffinityError(
    `the kernel refused CPUs ${formatCpuList(want)} (sched_setaffinity: ${errnoName(errno)}, ` +
      `${strerror(errno)}): they are offline or outside this process's cpuset`,
  );
}
