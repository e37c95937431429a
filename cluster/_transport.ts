/**
 * The little a transport does for the star protocol of `group.ts`: send
 * bytes to a rank, receive the next bytes from a rank within a timeout,
 * close. TCP (`tcp.ts`) and MPI (`mpi.ts`) implement it.
 *
 * @module
 */

import { NO_DEADLINE_MS } from "./types.ts";

/** A link to a peer that is gone: its connection closed or reset, or its process exited. */
export class PeerGoneError extends Error {
  override name = "PeerGoneError";
  constructor(readonly peer: number, options?: ErrorOptions) {
    super(`rank ${peer}'s link is gone`, options);
  }
}

/** Nothing came from a peer in time. */
export class PeerTimeoutError extends Error {
  override name = "PeerTimeoutError";
  constructor(readonly peer: number, readonly timeoutMs: number) {
    super(`nothing from rank ${peer} within ${timeoutMs} ms`);
  }
}

/** Point-to-point messages between the ranks of one group. */
export interface Transport {
  readonly rank: number;
  readonly size: number;
  /**
   * Sends one message to `to`; resolves once the transport holds it.
   * Rejects with {@linkcode PeerGoneError} or {@linkcode PeerTimeoutError}.
   */
  send(to: number, bytes: Uint8Array, timeoutMs: number): Promise<void>;
  /**
   * The next message from `from`, in the order sent. Rejects with
   * {@linkcode PeerTimeoutError} when none comes within `timeoutMs`, and with
   * {@linkcode PeerGoneError} as soon as the peer is known to be gone.
   */
  receive(from: number, timeoutMs: number): Promise<Uint8Array>;
  /** Ends every link and pending receive; nothing stays listening. */
  close(): Promise<void>;
  /**
   * Reports what happens between steps: `gone` as soon as a peer's link
   * drops, and every message to `intercept` before it is queued (`true`
   * keeps it out of the queue). Transports that only learn of a peer when
   * they receive from it (MPI) never call them.
   */
  watch(handlers: WatchHandlers): void;
  /**
   * Sends a notice between steps, never awaited and never failing: the
   * receiver's `intercept` sees it (a lost member, a member done).
   */
  notify(to: number, bytes: Uint8Array): void;
}

/** What {@linkcode Transport.watch} reports. */
export interface WatchHandlers {
  gone(peer: number): void;
  intercept(peer: number, m: Uint8Array): boolean;
}

interface Waiter {
  resolve(m: Uint8Array): void;
  reject(e: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * The messages from one peer not yet received, and the receivers waiting
 * for the next one.
 */
export class Inbox {
  #queue: Uint8Array[] = [];
  #waiters: Waiter[] = [];
  #gone: Error | undefined;
  #left = false;

  /** Called when the peer is marked gone, once. */
  onGone: ((peer: number) => void) | undefined;
  /** Sees every message first; `true` keeps it out of the queue. */
  intercept: ((peer: number, m: Uint8Array) => boolean) | undefined;

  constructor(readonly peer: number) {}

  /** Whether the peer is gone (messages it sent before may still be queued). */
  get gone(): boolean {
    return this.#gone !== undefined;
  }

  /**
   * Marks the peer as leaving in order (it closes after its last step): its
   * link dropping next is not a loss to report, though a receive from it
   * still fails as gone.
   */
  leave(): void {
    this.#left = true;
  }

  /** Hands `m` to the oldest waiting receiver, or queues it. */
  push(m: Uint8Array): void {
    if (this.intercept?.(this.peer, m)) return;
    const w = this.#waiters.shift();
    if (w === undefined) {
      this.#queue.push(m);
      return;
    }
    clearTimeout(w.timer);
    w.resolve(m);
  }

  /** Marks the peer gone: every waiting and later receive rejects with `e` once the queue is empty. */
  fail(e: Error): void {
    if (this.#gone === undefined && !this.#left) this.onGone?.(this.peer);
    this.#gone ??= e;
    for (const w of this.#waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(this.#gone);
    }
  }

  /**
   * The next message, waiting up to `timeoutMs` (at most {@linkcode NO_DEADLINE_MS}: a
   * longer timer would fire at once).
   */
  take(timeoutMs: number): Promise<Uint8Array> {
    const m = this.#queue.shift();
    if (m !== undefined) return Promise.resolve(m);
    if (this.#gone !== undefined) return Promise.reject(this.#gone);
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.splice(this.#waiters.indexOf(w), 1);
          reject(new PeerTimeoutError(this.peer, timeoutMs));
        }, Math.min(timeoutMs, NO_DEADLINE_MS)),
      };
      this.#waiters.push(w);
    });
  }
}
