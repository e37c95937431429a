/**
 * Node-wide named locks that hold across processes: an exclusive `flock` on
 * a file under /dev/shm, as MLP-Offload's fork takes
 * `/dev/shm/dist_opt_read_lock.file` and `dist_opt_write_lock.file`
 * (fasteners.InterProcessLock) around each subgroup's read and write.
 *
 * Every rank opens the file itself, so ranks that are Workers of one process
 * and ranks in other processes on the node contend alike (flock locks an
 * open file description, not a process). Closing a file releases its lock,
 * so a rank that fails or exits never leaves one held.
 *
 * Unlike the fork's fixed names, the files live in a folder of the run's own
 * ({@linkcode runLockDir}: one per run and node), so two runs on one machine
 * never share a lock, and the folder is removed once no rank of the run can
 * open it again ({@linkcode removeLockDir}; a file removed while another
 * process may still open it would split the lock in two).
 *
 * @module
 */

import { join } from "node:path";

/** Where the runs' lock folders go: /dev/shm, or the system's temporary folder without it. */
export function lockBase(): string {
  try {
    if (Deno.statSync("/dev/shm").isDirectory) return "/dev/shm";
  } catch {
    // no /dev/shm: fall through
  }
  return Deno.env.get("TMPDIR") ?? "/tmp";
}

/**
 * The lock folder of run `tag` (a run id, with the node's name in a run
 * across processes); any character but letters, digits, `.`, `_` and `-`
 * becomes `_`.
 *
 * @example
 * ```ts
 * import { runLockDir } from "./_node_lock.ts";
 * console.assert(runLockDir("r1-node 2", "/dev/shm") === "/dev/shm/tierbench-locks-r1-node_2");
 * ```
 */
export function runLockDir(tag: string, base: string = lockBase()): string {
  if (tag.length === 0) throw new RangeError("a lock folder needs a run tag");
  return join(base, `tierbench-locks-${tag.replace(/[^A-Za-z0-9._-]/g, "_")}`);
}

/** The file behind lock `name` in the lock folder `dir`. */
export function lockPath(name: string, dir: string): string {
  if (!/^[a-z0-9_-]+$/i.test(name)) {
    throw new RangeError(`lock name "${name}" must be letters, digits, _ or -`);
  }
  return join(dir, `dist_opt_${name}_lock.file`);
}

/** Removes a run's lock folder and its files; nothing when it was never made. */
export async function removeLockDir(dir: string): Promise<void> {
  await Deno.remove(dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}

/**
 * One rank's handles on the node's locks.
 *
 * @example
 * ```ts
 * import { NodeLocks } from "./_node_lock.ts";
 * const dir = await Deno.makeTempDir();
 * const locks = new NodeLocks(dir);
 * await locks.acquire("read");
 * locks.release("read");
 * locks.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export class NodeLocks {
  readonly #dir: string;
  readonly #files = new Map<string, Deno.FsFile>();
  readonly #held = new Set<string>();

  /** Handles on the locks in folder `dir` (made on the first acquire). */
  constructor(dir: string) {
    this.#dir = dir;
  }

  /** Waits until this rank holds lock `name` (exclusive across the node). */
  async acquire(name: string): Promise<void> {
    if (this.#held.has(name)) throw new TypeError(`lock "${name}" is already held by this rank`);
    let f = this.#files.get(name);
    if (!f) {
      await Deno.mkdir(this.#dir, { recursive: true });
      f = await Deno.open(lockPath(name, this.#dir), { read: true, write: true, create: true });
      this.#files.set(name, f);
    }
    await f.lock(true);
    this.#held.add(name);
  }

  /** Releases lock `name`, which this rank holds. */
  release(name: string): void {
    const f = this.#files.get(name);
    if (!f || !this.#held.delete(name)) {
      throw new TypeError(`lock "${name}" is not held by this rank`);
    }
    f.unlockSync();
  }

  /**
   * Releases every lock this rank holds (a rank that has failed, so that
   * the streams waiting on them, its own and other ranks', can go on and stop).
   */
  releaseAll(): void {
    for (const name of this.#held) this.#files.get(name)?.unlockSync();
    this.#held.clear();
  }

  /** Closes every file, releasing what is still held. */
  close(): void {
    for (const f of this.#files.values()) {
      try {
        f.close();
      } catch {
        // already closed
      }
    }
    this.#files.clear();
    this.#held.clear();
  }
}
