/**
 * The TCP transport: rank 0 listens, every other rank connects to it
 * (retrying until the timeout, since rank 0 may start last) and says which
 * rank it is. Messages are frames: a 4-byte big-endian length, then the
 * bytes. A closed or reset connection marks its peer gone at once.
 *
 * @module
 */

import {
  Inbox,
  PeerGoneError,
  PeerTimeoutError,
  type Transport,
  type WatchHandlers,
} from "./_transport.ts";

/** Where rank 0 listens, and who this process is. */
export interface TcpOptions {
  readonly rank: number;
  readonly size: number;
  readonly host: string;
  readonly port: number;
  /** How long a non-zero rank keeps trying to connect. */
  readonly timeoutMs: number;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1)$/;
const RETRY_MS = 50;
/** How long close() waits to tell its peers it leaves in order. */
const LEAVE_WAIT_MS = 1000;

/** Reads whole frames from a connection through one buffer. */
class FrameReader {
  #buf = new Uint8Array(1 << 16);
  #start = 0;
  #end = 0;
  constructor(readonly conn: Deno.Conn) {}

  /** Makes `n` bytes available; false at a clean end of stream before any of them. */
  async #fill(n: number): Promise<boolean> {
    while (this.#end - this.#start < n) {
      if (this.#buf.length - this.#start < n) {
        const bigger = new Uint8Array(Math.max(this.#buf.length, n * 2));
        bigger.set(this.#buf.subarray(this.#start, this.#end));
        this.#end -= this.#start;
        this.#start = 0;
        this.#buf = bigger;
      }
      const got = await this.conn.read(this.#buf.subarray(this.#end));
      if (got === null) {
        if (this.#end === this.#start) return false;
        throw new Error("the connection closed in the middle of a frame");
      }
      this.#end += got;
    }
    return true;
  }

  /** The next frame's bytes (a copy), or null at the end of the stream. */
  async next(): Promise<Uint8Array | null> {
    if (!await this.#fill(4)) return null;
    const n = new DataView(this.#buf.buffer, this.#start, 4).getUint32(0);
    this.#start += 4;
    if (n > 0 && !await this.#fill(n)) {
      throw new Error("the connection closed after a frame's length");
    }
    const frame = this.#buf.slice(this.#start, this.#start + n);
    this.#start += n;
    if (this.#start === this.#end) this.#start = this.#end = 0;
    return frame;
  }
}

function framed(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + bytes.length);
  new DataView(out.buffer).setUint32(0, bytes.length);
  out.set(bytes, 4);
  return out;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
}

class TcpTransport implements Transport {
  readonly #inboxes: Inbox[];
  readonly #conns = new Map<number, Deno.Conn>();
  readonly #writing = new Map<number, Promise<void>>();
  #listener: Deno.TcpListener | undefined;
  /** The accept loop and the readers, awaited by close so that nothing outlives it. */
  readonly #loops: Promise<void>[] = [];
  /** Accepted connections that have not said their rank yet. */
  readonly #unknown = new Set<Deno.Conn>();
  #closed = false;

  constructor(readonly rank: number, readonly size: number) {
    this.#inboxes = Array.from({ length: size }, (_, r) => new Inbox(r));
  }

  /** Starts reading frames from `peer`'s connection into its inbox. */
  attach(peer: number, conn: Deno.Conn, reader: FrameReader): void {
    this.#conns.set(peer, conn);
    const inbox = this.#inboxes[peer]!;
    this.#loops.push((async () => {
      try {
        for (let m = await reader.next(); m !== null; m = await reader.next()) {
          // an empty frame: the peer is closing in order (see close())
          if (m.length === 0) inbox.leave();
          else inbox.push(m);
        }
        inbox.fail(new PeerGoneError(peer, { cause: new Error("connection closed") }));
      } catch (e) {
        inbox.fail(new PeerGoneError(peer, { cause: e }));
      }
    })());
  }

  /** Rank 0: accepts connections, each introduced by its rank, until closed. */
  accept(listener: Deno.TcpListener): void {
    this.#listener = listener;
    this.#loops.push((async () => {
      try {
        for await (const conn of listener) {
          conn.setNoDelay(true);
          const reader = new FrameReader(conn);
          this.#unknown.add(conn);
          this.#loops.push(
            reader.next().then((hello) => {
              this.#unknown.delete(conn);
              const peer = hello?.length === 4 ? new DataView(hello.buffer).getUint32(0) : -1;
              if (this.#closed || peer < 1 || peer >= this.size || this.#conns.has(peer)) {
                conn.close();
                return;
              }
              this.attach(peer, conn, reader);
            }, () => {
              if (this.#unknown.delete(conn)) conn.close();
            }),
          );
        }
      } catch {
        // the listener was closed
      }
    })());
  }

  send(to: number, bytes: Uint8Array, _timeoutMs: number): Promise<void> {
    const conn = this.#conns.get(to);
    const inbox = this.#inboxes[to];
    if (conn === undefined || inbox === undefined || inbox.gone) {
      return Promise.reject(new PeerGoneError(to, { cause: new Error("not connected") }));
    }
    const frame = framed(bytes);
    const done = (this.#writing.get(to) ?? Promise.resolve()).then(() => writeAll(conn, frame))
      .catch((e) => {
        throw e instanceof PeerGoneError ? e : new PeerGoneError(to, { cause: e });
      });
    this.#writing.set(to, done.catch(() => {}));
    return done;
  }

  receive(from: number, timeoutMs: number): Promise<Uint8Array> {
    const inbox = this.#inboxes[from];
    if (inbox === undefined || from === this.rank) {
      return Promise.reject(
        new RangeError(`no rank ${from} to receive from in a group of ${this.size}`),
      );
    }
    return inbox.take(timeoutMs);
  }

  notify(to: number, bytes: Uint8Array): void {
    this.send(to, bytes, 1000).catch(() => {});
  }

  watch(handlers: WatchHandlers): void {
    for (const inbox of this.#inboxes) {
      inbox.onGone = (peer) => {
        if (!this.#closed) handlers.gone(peer);
      };
      inbox.intercept = handlers.intercept;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Tell every peer this is an orderly leave (an empty frame, after what is being written),
    // so that a peer still busy does not take the link dropping for a lost member.
    // A peer that stopped reading is not waited for beyond LEAVE_WAIT_MS.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled([...this.#conns].map(async ([peer, conn]) => {
        await this.#writing.get(peer);
        await writeAll(conn, framed(new Uint8Array(0)));
      })),
      new Promise((r) => (timer = setTimeout(r, LEAVE_WAIT_MS))),
    ]);
    clearTimeout(timer);
    for (const inbox of this.#inboxes) {
      inbox.fail(new PeerGoneError(inbox.peer, { cause: new Error("closed") }));
    }
    this.#listener?.close();
    for (const conn of [...this.#conns.values(), ...this.#unknown]) {
      try {
        conn.close();
      } catch {
        // already closed by its reader
      }
    }
    await Promise.allSettled(this.#loops);
  }
}

/**
 * Opens the TCP links of one rank: rank 0 starts listening on `port` (on
 * the loopback address when `host` is one, else on every address); the
 * others connect to `host:port`, retrying until `timeoutMs`.
 *
 * @throws {PeerTimeoutError} a non-zero rank could not connect in time.
 *
 * @example
 * ```ts ignore
 * import { openTcp } from "./tcp.ts";
 * const t = await openTcp({ rank: 1, size: 2, host: "127.0.0.1", port: 29500, timeoutMs: 5000 });
 * await t.send(0, new TextEncoder().encode("hi"), 5000);
 * await t.close();
 * ```
 */
export async function openTcp(o: TcpOptions): Promise<Transport> {
  const t = new TcpTransport(o.rank, o.size);
  if (o.rank === 0) {
    const hostname = LOOPBACK.test(o.host)
      ? (o.host === "localhost" ? "127.0.0.1" : o.host)
      : "0.0.0.0";
    t.accept(Deno.listen({ hostname, port: o.port, transport: "tcp" }));
    return t;
  }
  const deadline = Date.now() + o.timeoutMs;
  for (;;) {
    try {
      const conn = await Deno.connect({ hostname: o.host, port: o.port, transport: "tcp" });
      conn.setNoDelay(true);
      const hello = new Uint8Array(4);
      new DataView(hello.buffer).setUint32(0, o.rank);
      await writeAll(conn, framed(hello));
      t.attach(0, conn, new FrameReader(conn));
      return t;
    } catch (e) {
      if (!(e instanceof Deno.errors.ConnectionRefused)) throw e;
      if (Date.now() + RETRY_MS > deadline) throw new PeerTimeoutError(0, o.timeoutMs);
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }
}
