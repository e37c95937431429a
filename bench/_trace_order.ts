/**
 * The order between threads that a trace replay keeps: a read of bytes
 * another thread wrote waits, in the replay, for that write to be done, as
 * it was in the recording; an op on a file another thread truncated,
 * unlinked or renamed waits for that call. Each thread's own order is kept
 * anyway; without these waits a thread at `--speed max` runs ahead of the
 * one whose data it reads and reads short (or stale) bytes, differently
 * from run to run.
 *
 * The first pass (bench/_trace_compile.ts) feeds it every op in the
 * trace's order (strace's: a call appears when it returns) and gets back
 * what the op waits for: per thread, a count of ops that thread must have
 * done (engines/trace_ops.ts `WAIT`). A write through aio is done when the
 * io_getevents of its thread that left its context with nothing in flight
 * returned (strace ties no completion to its iocb, so only then is it
 * certainly done). A read that began before the write it reads was done —
 * the recording's threads raced, or another thread reaped the write — is
 * ordered after the write's issue only, and counted: what it reads can
 * vary from run to run, as it could in the recorded program.
 *
 * State is per 4 KiB page of the files written (the last writer of each),
 * and per context the writes still in flight; reads alone keep none.
 *
 * @module
 */

/** Bytes per page tracked. */
const PAGE = 4096;

/** Per file: each page's last writer and when its write was issued and done. */
class Pages {
  /** Writer thread + 1 (0: no write seen). */
  who = new Int32Array(16);
  /** Ops the writer had done when the write was issued. */
  issued = new Int32Array(16);
  /** Ops the writer has done once the write is done; -(ctx + 1) while in flight on ctx. */
  done = new Int32Array(16);
  /** When it was seen done, µs as recorded. */
  end = new Float64Array(16);

  grow(pages: number): void {
    if (pages <= this.who.length) return;
    const n = Math.max(pages, this.who.length * 2);
    const more = <T extends Int32Array | Float64Array>(a: T, b: T): T => (b.set(a), b);
    this.who = more(this.who, new Int32Array(n));
    this.issued = more(this.issued, new Int32Array(n));
    this.done = more(this.done, new Int32Array(n));
    this.end = more(this.end, new Float64Array(n));
  }
}

/** Pages with writes in flight on a context: file, first page, page past the last. */
type Span = [file: number, from: number, to: number];

/**
 * Spans kept per context before they are merged per file: a context that
 * never runs empty (a queue kept full) must not keep one per write.
 */
const SPANS = 1024;

/** A truncate, unlink or rename of a file: by whom, done at which count, when. */
interface Cut {
  readonly thread: number;
  readonly done: number;
  readonly end: number;
}

/** Per thread waited on: the count of its ops to wait for. */
export type Waits = Map<number, number>;

/**
 * The waits of a trace's threads on one another, found op by op.
 *
 * @example
 * ```ts
 * import { CrossThreadOrder } from "./_trace_order.ts";
 * const o = new CrossThreadOrder();
 * // thread 0's op 3 writes 8 KiB of file 0 synchronously, done at 20 µs
 * o.write(0, 0, 0, 8192, 3, 20);
 * // thread 1 reads it at 30 µs: it waits for thread 0 to have done 4 ops
 * console.assert(o.read(1, 0, 0, 8192, 30).get(0) === 4);
 * ```
 */
export class CrossThreadOrder {
  readonly #files = new Map<number, Pages>();
  readonly #cuts = new Map<number, Cut>();
  /** Per thread and context ("thread/ctx"): the pages of its writes not yet seen done. */
  readonly #pending = new Map<string, Span[]>();
  /** Per thread: per thread it waits on, the count it already waits for. */
  readonly #waited = new Map<number, Map<number, number>>();
  /** Threads some other thread waits on. */
  readonly waitedOn = new Set<number>();
  /** Reads that wait for another thread's write. */
  ordered = 0;
  /** Reads that began before the write they read was seen done. */
  raced = 0;

  /**
   * What thread `thread`'s read of [offset, offset + length) of `file`,
   * begun at `t` µs, waits for (only what it does not already wait for).
   */
  read(thread: number, file: number, offset: number, length: number, t: number): Waits {
    const w: Waits = new Map();
    this.#afterCut(w, thread, file, t);
    const p = this.#files.get(file);
    let raced = false, ordered = false;
    if (p !== undefined && length > 0) {
      const last = Math.min(p.who.length, Math.ceil((offset + length) / PAGE));
      for (let pg = Math.floor(offset / PAGE); pg < last; pg++) {
        const by = p.who[pg]! - 1;
        if (by < 0 || by === thread) continue;
        ordered = true;
        const done = p.done[pg]!;
        if (done > 0 && p.end[pg]! <= t) need(w, by, done);
        else {
          raced = true;
          need(w, by, p.issued[pg]!);
        }
      }
    }
    if (ordered) this.ordered++;
    if (raced) this.raced++;
    return this.#fresh(thread, w);
  }

  /** What thread `thread`'s write to `file` begun at `t` waits for (another thread's cut). */
  writeWaits(thread: number, file: number, t: number): Waits {
    const w: Waits = new Map();
    this.#afterCut(w, thread, file, t);
    return this.#fresh(thread, w);
  }

  /**
   * A synchronous write by `thread`, its op number `op` (ops done before
   * it), that returned at `end` µs.
   */
  write(thread: number, file: number, offset: number, length: number, op: number, end: number) {
    this.#mark(thread, file, offset, length, op, op + 1, end);
  }

  /** A write by `thread` submitted on context `ctx` in its op number `op`. */
  submitted(thread: number, ctx: number, file: number, offset: number, length: number, op: number) {
    const from = this.#mark(thread, file, offset, length, op + 1, -(ctx + 1), 0);
    if (from < 0) return;
    const key = `${thread}/${ctx}`;
    let list = this.#pending.get(key);
    if (!list) this.#pending.set(key, list = []);
    const to = Math.ceil((offset + length) / PAGE), last = list.at(-1);
    if (last && last[0] === file && from <= last[2] && to >= last[1]) {
      last[1] = Math.min(last[1], from);
      last[2] = Math.max(last[2], to);
    } else list.push([file, from, to]);
    if (list.length > SPANS) this.#pending.set(key, perFile(list));
  }

  /**
   * `thread`'s io_getevents in its op number `op`, returned at `end` µs,
   * left context `ctx` with nothing in flight: its writes there are done.
   */
  drained(thread: number, ctx: number, op: number, end: number): void {
    const key = `${thread}/${ctx}`;
    for (const [file, from, to] of this.#pending.get(key) ?? []) {
      const p = this.#files.get(file)!;
      for (let pg = from; pg < to; pg++) {
        if (p.who[pg] === thread + 1 && p.done[pg] === -(ctx + 1)) {
          p.done[pg] = op + 1;
          p.end[pg] = end;
        }
      }
    }
    this.#pending.delete(key);
  }

  /**
   * `thread`'s truncate, unlink or rename of `file` in its op number `op`,
   * returned at `end` µs: the file's earlier writes are gone, and others'
   * later ops on it wait for this one. `keep` bytes stay (a truncate's length).
   */
  cut(thread: number, file: number, op: number, end: number, keep = 0): void {
    this.#cuts.set(file, { thread, done: op + 1, end });
    const p = this.#files.get(file);
    if (p) p.who.fill(0, Math.ceil(keep / PAGE));
  }

  #afterCut(w: Waits, thread: number, file: number, t: number): void {
    const c = this.#cuts.get(file);
    if (c !== undefined && c.thread !== thread && c.end <= t) need(w, c.thread, c.done);
  }

  /** Marks the pages of a write; the first page, or -1 when it has none. */
  #mark(
    thread: number,
    file: number,
    offset: number,
    length: number,
    issued: number,
    done: number,
    end: number,
  ): number {
    if (length <= 0) return -1;
    let p = this.#files.get(file);
    if (!p) this.#files.set(file, p = new Pages());
    const from = Math.floor(offset / PAGE), to = Math.ceil((offset + length) / PAGE);
    p.grow(to);
    p.who.fill(thread + 1, from, to);
    p.issued.fill(issued, from, to);
    p.done.fill(done, from, to);
    p.end.fill(end, from, to);
    return from;
  }

  /** Of `w`, what `thread` does not wait for already; remembered as waited for. */
  #fresh(thread: number, w: Waits): Waits {
    if (w.size === 0) return w;
    let had = this.#waited.get(thread);
    if (!had) this.#waited.set(thread, had = new Map());
    for (const [by, count] of w) {
      if ((had.get(by) ?? 0) >= count) w.delete(by);
      else {
        had.set(by, count);
        this.waitedOn.add(by);
      }
    }
    return w;
  }
}

/** `spans` merged into one per file, from its first page to its last. */
function perFile(spans: Span[]): Span[] {
  const byFile = new Map<number, Span>();
  for (const [file, from, to] of spans) {
    const s = byFile.get(file);
    if (!s) byFile.set(file, [file, from, to]);
    else {
      s[1] = Math.min(s[1], from);
      s[2] = Math.max(s[2], to);
    }
  }
  return [...byFile.values()];
}

function need(w: Waits, thread: number, count: number): void {
  if (count > (w.get(thread) ?? 0)) w.set(thread, count);
}
