/**
 * Node-wide named locks that hold across processes: an exclusive `flock` on
 * a file under /dev/shm, as MLP-Offload's fork takes
 * `/dev/shm/dist_opt_read_lock.file` and `dist_opt_write_lock.file`
 * (fasteners.InterProcessLock) around each subgroup's read and write.
 *
 * Every rank opens the file itself, so ranks that are Workers of one process
 * and ranks in other processes on the node contend alike (flock locks an
 * open file description, not a process). Closing a file releases its lock,
 * so a rank that fails or exits never leaves one held. The files stay after
 * the run: removing one that another process has open would split the lock
 * in two.
 *
 * @module
 */

import { join } from "node:path";

/** The folder of the lock files: /dev/shm, or the system's temporary folder without it. */
export function lockDir(): string {
  try {
    if (Deno.statSync("/dev/shm").isDirectory) return "/dev/shm";
  } catch {
    // no /dev/shm: fall through
  }
  return Deno.env.get("TMPDIR") ?? "/tmp";
}

/** The file behind lock `name`: one per name and node, shared by every tierbench process. */
export function lockPath(name: string, dir: string = lockDir()): string {
  if (!/^[a-z0-9_-]+$/i.test(name)) {
    throw new RangeError(`lock name "${name}" must be letters, digits, _ or -`);
  }
  return join(dir, `tierbench_dist_opt_${name}_lock.file`);
}

/**
 * One rank's handles on the node's locks.
 *
 * @example
 * ```ts
 * import { NodeLocks } from "./_node_lock.ts";
 * const locks = new NodeLocks();
 * await locks.acquire("read");
 * locks.release("read");
 * locks.close();
 * ```
 */
export class NodeLocks {
  readonly #dir: string;
  readonly #files = new Map<string, Deno.FsFile>();
  readonly #held = new Set<string>();

  constructor(dir: string = lockDir()) {
    this.#dir = dir;
  }

  /** Waits until this rank holds lock `name` (exclusive across the node). */
  async acquire(name: string): Promise<void> {
    if (this.#held.has(name)) throw new TypeError(`lock "${name}" is already held by this rank`);
    let f = this.#files.get(name);
    if (!f) {
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
