/**
 * The device of `bench:fio --device loop`: an ext4 file system on a loop
 * device with direct I/O, backed by a file on tmpfs, so its speed is set by
 * CPU and memory and holds still from round to round. Made by the comparison
 * (root only) and removed by it whatever happens: the mount, the mount point,
 * every loop device backed by the file, and the file.
 *
 * @module
 */

import { join } from "node:path";
import { type ChildRunner, CompareError, decoder, lastLine, UsageError } from "./_fio_process.ts";

/** What every backing file and mount point of the loop mode is named from. */
export const LOOP_PREFIX = "tierbench-fio-loop-";

/** What the result document says about the loop device. */
export interface LoopFacts {
  /** `/dev/loopN`. */
  device: string;
  backing_file: string;
  backing_bytes: number;
  /**
   * Bytes of memory the backing file holds, from its block count after
   * `fallocate`: all of `backing_bytes`, so no write waits for tmpfs to
   * find a page.
   */
  backing_allocated_bytes: number;
  mount_point: string;
  /** What the kernel says in /sys/block/loopN/loop/dio: direct I/O to the backing file. */
  direct_io: boolean;
  fs_type: "ext4";
}

/**
 * Throws a {@linkcode UsageError} naming why when this process cannot make
 * and mount a loop device (it is not root).
 */
export function requireRoot(): void {
  const uid = Deno.uid();
  if (uid !== 0) {
    throw new UsageError(
      `--device loop: needs root to make, mount and remove a loop device (running as uid ${
        uid ?? "unknown"
      })`,
    );
  }
}

/**
 * An ext4 file system on a loop device with `--direct-io=on` over a file in a
 * tmpfs directory. Make it with {@linkcode LoopDevice.setup}; remove it with
 * {@linkcode LoopDevice.removeSync} in a `finally`, also when setup failed
 * half-way: it removes whatever setup got to.
 */
export class LoopDevice {
  /** The backing file, once created. */
  backing: string | undefined;
  /** The loop device, once attached. */
  device: string | undefined;
  /** The mount point directory, once created. */
  mountPoint: string | undefined;
  #mounted = false;
  #bytes = 0;

  /**
   * Creates a `bytes`-long file in `tmpfsDir` with all its memory allocated
   * up front (`fallocate`: a sparse file would make the first write to each
   * block pay for tmpfs finding a page, so a round's write case would be
   * slower or not by where ext4 happened to place its file), attaches it to
   * a free loop device with direct I/O, makes ext4 on it and mounts it on a
   * fresh temporary directory. Each command runs through `runner`, so a
   * signal stops setup (and the caller's `finally` removes what was made).
   */
  async setup(runner: ChildRunner, tmpfsDir: string, bytes: number): Promise<LoopFacts> {
    if (!Number.isSafeInteger(bytes) || bytes <= 0) {
      throw new RangeError(`loop device size must be a positive integer, got ${bytes}`);
    }
    const name = LOOP_PREFIX + crypto.randomUUID().slice(0, 8);
    const backing = join(tmpfsDir, `${name}.img`);
    try {
      const f = await Deno.open(backing, { createNew: true, write: true, mode: 0o600 });
      f.close();
      this.backing = backing;
    } catch (e) {
      throw new CompareError(`cannot create ${backing}: ${(e as Error).message}`, { cause: e });
    }
    await command(runner, "fallocate", ["--length", String(bytes), backing]);
    this.#bytes = bytes;
    const attached = await command(runner, "losetup", [
      "--find",
      "--show",
      "--direct-io=on",
      backing,
    ]);
    this.device = attached.trim();
    if (!directIo(this.device)) {
      throw new CompareError(`${this.device}: the kernel does no direct I/O to ${backing}`);
    }
    // nodiscard: mkfs's discard would reach tmpfs as hole punches and undo the fallocate.
    await command(runner, "mkfs.ext4", ["-q", "-E", "nodiscard", this.device]);
    this.mountPoint = await Deno.makeTempDir({ prefix: LOOP_PREFIX });
    await command(runner, "mount", ["-t", "ext4", this.device, this.mountPoint]);
    this.#mounted = true;
    return this.facts();
  }

  /** The facts of a device that is set up. */
  facts(): LoopFacts {
    if (!this.device || !this.backing || !this.mountPoint) {
      throw new TypeError("the loop device is not set up");
    }
    return {
      device: this.device,
      backing_file: this.backing,
      backing_bytes: this.#bytes,
      backing_allocated_bytes: (Deno.statSync(this.backing).blocks ?? 0) * 512,
      mount_point: this.mountPoint,
      direct_io: directIo(this.device),
      fs_type: "ext4",
    };
  }

  /**
   * Unmounts, removes the mount point, detaches every loop device backed by
   * the file (also one attached by a `losetup` that a signal stopped before it
   * said which), and removes the file. Goes on past a failed step; says each
   * failure on stderr. Synchronous, so it completes inside a `finally`.
   */
  removeSync(): void {
    if (this.mountPoint) {
      if (this.#mounted || isMountPoint(this.mountPoint)) {
        // A lazy unmount when the plain one fails (something still open in it).
        if (!runSync("umount", [this.mountPoint]) && !runSync("umount", ["-l", this.mountPoint])) {
          warn(`could not unmount ${this.mountPoint}`);
        }
        this.#mounted = false;
      }
      try {
        Deno.removeSync(this.mountPoint);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) {
          warn(`could not remove ${this.mountPoint}: ${(e as Error).message}`);
        }
      }
      this.mountPoint = undefined;
    }
    if (this.backing) {
      const devices = new Set(backedBy(this.backing));
      if (this.device) devices.add(this.device);
      for (const dev of devices) {
        if (!runSync("losetup", ["-d", dev]) && backedBy(this.backing).includes(dev)) {
          warn(`could not detach ${dev} (backed by ${this.backing})`);
        }
      }
      this.device = undefined;
      try {
        Deno.removeSync(this.backing);
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) {
          warn(`could not remove ${this.backing}: ${(e as Error).message}`);
        }
      }
      this.backing = undefined;
    }
  }
}

/** Runs `cmd` through the runner; its stdout, or a {@linkcode CompareError} in one line. */
async function command(runner: ChildRunner, cmd: string, args: string[]): Promise<string> {
  let out: Deno.CommandOutput;
  try {
    out = await runner.run(cmd, args);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new CompareError(`${cmd} not found: apt-get install -y util-linux mount e2fsprogs`, {
        cause: e,
      });
    }
    throw e;
  }
  if (!out.success) throw new CompareError(`${cmd} ${args.join(" ")}: ${lastLine(out)}`);
  return decoder.decode(out.stdout);
}

/** Runs `cmd` to its end, output discarded; whether it succeeded. */
function runSync(cmd: string, args: string[]): boolean {
  try {
    return new Deno.Command(cmd, { args, stdin: "null", stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

/** The loop devices attached to `file` (`losetup -j FILE`), by name. */
export function backedBy(file: string): string[] {
  try {
    const out = new Deno.Command("losetup", { args: ["-j", file], stdout: "piped", stderr: "null" })
      .outputSync();
    return decoder.decode(out.stdout).split("\n").map((l) => /^(\/dev\/loop\d+):/.exec(l)?.[1])
      .filter((d): d is string => d !== undefined);
  } catch {
    return [];
  }
}

/** Whether `dir` is a mount point, by /proc/self/mountinfo. */
export function isMountPoint(dir: string): boolean {
  try {
    const info = Deno.readTextFileSync("/proc/self/mountinfo");
    return info.split("\n").some((l) => unescapeMount(l.split(" ")[4] ?? "") === dir);
  } catch {
    return false;
  }
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Whether the kernel does direct I/O to the backing file of `device`. */
function directIo(device: string): boolean {
  try {
    const name = device.replace(/^\/dev\//, "");
    return Deno.readTextFileSync(`/sys/block/${name}/loop/dio`).trim() === "1";
  } catch {
    return false;
  }
}

function warn(message: string): void {
  console.error(`fio-compare: ${message}`);
}

/** What a block device has done so far, from `/sys/block/NAME/stat`. */
export interface BlockCounts {
  /** Read and write requests completed. */
  requests: number;
  /** 512-byte sectors read and written. */
  sectors: number;
}

/** `device`'s counts now (`/dev/loop0` or `loop0`); undefined when the kernel does not say. */
export function blockCounts(device: string): BlockCounts | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(`/sys/block/${device.replace(/^\/dev\//, "")}/stat`);
  } catch {
    return undefined;
  }
  const f = text.trim().split(/\s+/).map(Number);
  if (f.length < 7 || f.some((n) => !Number.isFinite(n))) return undefined;
  return { requests: f[0]! + f[4]!, sectors: f[2]! + f[6]! };
}

/**
 * Requests the device completed per I/O of `bs` bytes between two counts:
 * 1 when each I/O was one request; more when the block layer split them (a
 * buffer whose pages lie in more pieces of memory than a request may hold).
 * Undefined when no byte moved.
 *
 * @example
 * ```ts
 * import { requestsPerIo } from "./_loop_device.ts";
 * const r = requestsPerIo({ requests: 10, sectors: 0 }, { requests: 16, sectors: 8192 }, 1 << 20);
 * console.assert(r === 1.5); // 4 I/Os of 1 MiB made 6 requests
 * ```
 */
export function requestsPerIo(
  before: BlockCounts,
  after: BlockCounts,
  bs: number,
): number | undefined {
  const bytes = (after.sectors - before.sectors) * 512;
  if (bytes <= 0) return undefined;
  return (after.requests - before.requests) / (bytes / bs);
}
