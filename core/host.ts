/**
 * Facts about the machine and about what lies under each tier path: the
 * file system, its mount, and the block device (model, rotational, logical
 * block size, scheduler). Read from /proc and /sys through libc (Deno's own
 * file API refuses those paths without --allow-all); nothing is executed.
 *
 * @module
 */

import * as os from "node:os";
import { peakRss, readSmallFile, realPath } from "./libc.ts";

/** The machine a result was measured on. */
export interface HostFacts {
  hostname: string;
  os: string;
  arch: string;
  kernel: string;
  cpu_model: string;
  cores: number;
  memory_bytes: number;
  page_size: number;
}

/** The block device behind a path, where there is one. */
export interface DeviceFacts {
  /** Kernel name of the whole disk, e.g. `nvme0n1`, `vda`. */
  name: string;
  /** The partition, when the file system sits on one. */
  partition?: string;
  model?: string;
  rotational?: boolean;
  logical_block_size?: number;
  physical_block_size?: number;
  scheduler?: string;
  size_bytes?: number;
}

/** What lies under a tier path. */
export interface PathFacts {
  path: string;
  mount_point: string;
  fs_type: string;
  source: string;
  mount_options: string;
  device?: DeviceFacts;
}

/** /proc and /sys files, read through libc (see readSmallFile). */
function readText(path: string): string | undefined {
  return readSmallFile(path)?.trim();
}

/**
 * Facts about this machine.
 *
 * @example
 * ```ts
 * import { hostFacts } from "./host.ts";
 * console.assert(hostFacts().cores >= 1);
 * ```
 */
export function hostFacts(): HostFacts {
  const cpuinfo = readText("/proc/cpuinfo") ?? "";
  const model = /^(?:model name|Model|cpu model)\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ??
    os.cpus()[0]?.model ?? "unknown";
  return {
    hostname: Deno.hostname(),
    os: Deno.build.os,
    arch: Deno.build.arch,
    kernel: Deno.osRelease(),
    cpu_model: model.trim(),
    cores: navigator.hardwareConcurrency,
    memory_bytes: Deno.systemMemoryInfo().total,
    page_size: 4096,
  };
}

/** One line of /proc/self/mountinfo. */
interface Mount {
  majorMinor: string;
  mountPoint: string;
  options: string;
  fsType: string;
  source: string;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

function mounts(): Mount[] {
  const text = readText("/proc/self/mountinfo") ?? "";
  const out: Mount[] = [];
  for (const line of text.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!left || !right) continue;
    const l = left.split(" ");
    const r = right.split(" ");
    out.push({
      majorMinor: l[2] ?? "",
      mountPoint: unescapeMount(l[4] ?? ""),
      options: l[5] ?? "",
      fsType: r[0] ?? "",
      source: unescapeMount(r[1] ?? ""),
    });
  }
  return out;
}

function deviceFacts(majorMinor: string): DeviceFacts | undefined {
  const target = realPath(`/sys/dev/block/${majorMinor}`);
  if (target === undefined) return undefined;
  const name = target.split("/").pop()!;
  const isPartition = readText(`${target}/partition`) !== undefined;
  const disk = isPartition ? target.split("/").slice(0, -1).join("/") : target;
  const diskName = disk.split("/").pop()!;
  const facts: DeviceFacts = { name: diskName };
  if (isPartition) facts.partition = name;
  const model = readText(`${disk}/device/model`);
  if (model) facts.model = model;
  const rot = readText(`${disk}/queue/rotational`);
  if (rot !== undefined) facts.rotational = rot === "1";
  const lbs = Number(readText(`${disk}/queue/logical_block_size`));
  if (lbs > 0) facts.logical_block_size = lbs;
  const pbs = Number(readText(`${disk}/queue/physical_block_size`));
  if (pbs > 0) facts.physical_block_size = pbs;
  const sched = readText(`${disk}/queue/scheduler`);
  const chosen = sched ? /\[([^\]]+)\]/.exec(sched)?.[1] ?? sched : undefined;
  if (chosen) facts.scheduler = chosen;
  const sectors = Number(readText(`${target}/size`));
  if (sectors > 0) facts.size_bytes = sectors * 512;
  return facts;
}

/**
 * What lies under `path`: the mount holding it (longest mount-point prefix of
 * its real path), its file system and, for a block-backed one, the device.
 *
 * @example
 * ```ts
 * import { pathFacts } from "./host.ts";
 * console.assert(pathFacts("/dev/shm").fs_type === "tmpfs");
 * ```
 */
export function pathFacts(path: string): PathFacts {
  const real = Deno.realPathSync(path);
  let best: Mount | undefined;
  for (const m of mounts()) {
    const inside = real === m.mountPoint ||
      real.startsWith(m.mountPoint.endsWith("/") ? m.mountPoint : m.mountPoint + "/");
    if (inside && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  const facts: PathFacts = {
    path: real,
    mount_point: best?.mountPoint ?? "/",
    fs_type: best?.fsType ?? "unknown",
    source: best?.source ?? "unknown",
    mount_options: best?.options ?? "",
  };
  const device = best ? deviceFacts(best.majorMinor) : undefined;
  if (device) facts.device = device;
  return facts;
}

/**
 * Peak resident memory of this process in bytes, for checking that memory
 * stays flat however many bytes move.
 */
export function peakRssBytes(): number {
  return peakRss();
}
