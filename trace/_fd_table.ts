/**
 * Which file each descriptor of each thread is open on, as an strace log
 * tells it: opens, dups and closes (numbers are reused), positions moved by
 * read, write and lseek, threads and forked processes.
 *
 * A descriptor table belongs to a process. When the log shows how a thread
 * began (clone, clone3, fork, vfork: recorded by `trace record`), a thread
 * shares its parent's table and a forked child starts with a copy. When it
 * does not (the DeepSpeed recordings trace no clone), each thread keeps the
 * descriptors it opened itself and falls back on the latest open of that
 * number by any thread: right for threads of one process (one opens, another
 * submits), and for a forked child's own opens.
 *
 * @module
 */

/** An open file description: what a descriptor points at (shared by dups). */
export interface Description {
  readonly path: string;
  readonly flags: string;
  /** The position read, write and lseek move. */
  pos: number;
}

/** A process's descriptor table and the thread that leads it. */
class Proc {
  readonly table = new Map<number, Description>();
  constructor(readonly leader: number) {}
}

/**
 * The descriptor tables of every process in a log.
 *
 * @example
 * ```ts
 * import { FdTables } from "./_fd_table.ts";
 * const t = new FdTables();
 * t.open(100, 5, { path: "/a", flags: "O_RDONLY", pos: 0 });
 * console.assert(t.get(101, 5)?.path === "/a"); // another thread of the same process
 * t.close(100, 5);
 * console.assert(t.get(101, 5) === undefined);
 * ```
 */
export class FdTables {
  readonly #procs = new Map<number, Proc>();
  /** The latest description opened under each number, and whose table holds it. */
  readonly #latest = new Map<number, { proc: Proc; desc: Description }>();

  #proc(tid: number): Proc {
    let p = this.#procs.get(tid);
    if (!p) this.#procs.set(tid, p = new Proc(tid));
    return p;
  }

  /** The process (its leading thread's id) thread `tid` belongs to, as far as known. */
  processOf(tid: number): number {
    return this.#proc(tid).leader;
  }

  /** The description `fd` of thread `tid` points at, or undefined when unknown. */
  get(tid: number, fd: number): Description | undefined {
    const own = this.#proc(tid).table.get(fd);
    if (own) return own;
    return this.#latest.get(fd)?.desc;
  }

  /** `fd` of thread `tid` now points at `desc` (an open, a dup, a -y path seen). */
  open(tid: number, fd: number, desc: Description): void {
    const proc = this.#proc(tid);
    proc.table.set(fd, desc);
    this.#latest.set(fd, { proc, desc });
  }

  /** Closes `fd` of thread `tid`: what it pointed at, or undefined. */
  close(tid: number, fd: number): Description | undefined {
    const proc = this.#proc(tid);
    let desc = proc.table.get(fd);
    let owner = proc;
    if (!desc) {
      const l = this.#latest.get(fd);
      if (!l) return undefined;
      desc = l.desc;
      owner = l.proc;
    }
    owner.table.delete(fd);
    if (this.#latest.get(fd)?.desc === desc) this.#latest.delete(fd);
    return desc;
  }

  /** `newFd` of thread `tid` becomes a duplicate of `oldFd` (dup, dup2, dup3, F_DUPFD). */
  dup(tid: number, oldFd: number, newFd: number): void {
    const desc = this.get(tid, oldFd);
    if (oldFd === newFd) return;
    this.close(tid, newFd);
    if (desc) this.open(tid, newFd, desc);
  }

  /**
   * Thread `child` began from `parent`: sharing its table (a thread, or
   * CLONE_FILES) or with a copy of it (fork). Descriptors the child already
   * opened (its lines came before the clone returned) are kept.
   */
  clone(parent: number, child: number, share: boolean): void {
    const from = this.#proc(parent);
    const mine = this.#procs.get(child);
    if (share) {
      if (mine && mine !== from) {
        for (const [fd, d] of mine.table) from.table.set(fd, d);
      }
      this.#procs.set(child, from);
      return;
    }
    const to = mine && mine !== from ? mine : new Proc(child);
    for (const [fd, d] of from.table) {
      if (!to.table.has(fd)) to.table.set(fd, { ...d });
    }
    this.#procs.set(child, to);
  }

  /** Thread `tid` ran execve: descriptors opened with O_CLOEXEC close. */
  exec(tid: number): void {
    const proc = this.#proc(tid);
    for (const [fd, d] of proc.table) {
      if (d.flags.includes("O_CLOEXEC")) this.close(tid, fd);
    }
  }
}
