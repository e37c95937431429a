/**
 * The star protocol, written once over a {@linkcode Transport}: rank 0 is
 * the hub. Every step sends to the hub and waits for its answer, so the hub
 * sees a lost member as soon as its link drops, and tells the others.
 *
 * After a step fails the group is broken: every later step rejects with the
 * same error. Dispose it.
 *
 * When rank 0 is lost the group fails (root stays 0); moving the root to
 * the lowest live rank is not done.
 *
 * @module
 */

import { decode, encode, type Failure, type Header } from "./_message.ts";
import { PeerGoneError, PeerTimeoutError, type Transport } from "./_transport.ts";
import { RankLostError, RankTimeoutError, VersionMismatchError } from "./errors.ts";
import { openMpi } from "./mpi.ts";
import { openTcp } from "./tcp.ts";
import type { Group, LaunchInfo, Member } from "./types.ts";
import { errorLine } from "../core/errors.ts";

/** Options of {@linkcode joinGroup}. */
export interface JoinOptions {
  /** This process's tierbench version; every member must run the same. */
  readonly version: string;
  /** How long to wait for every member to connect and say hello. */
  readonly timeoutMs: number;
}

/** How much longer than the hub a member waits for the hub's verdict on a step. */
function grace(timeoutMs: number): number {
  return Math.max(2000, timeoutMs / 2);
}

/** The error a failure names, as seen from `me`. */
function errorOf(f: Failure, phase: string, me: number): Error {
  switch (f.kind) {
    case "lost":
      return new RankLostError(f.rank, f.node, phase);
    case "timeout":
      return new RankTimeoutError(f.ranks, phase, f.timeoutMs);
    case "version":
      return f.theirs.rank === me
        ? new VersionMismatchError(f.theirs, f.mine)
        : new VersionMismatchError(f.mine, f.theirs);
    case "error":
      return new Error(f.message);
  }
}

/** The failure to tell the others about `e`. */
function failureOf(e: unknown): Failure {
  if (e instanceof RankLostError) return { kind: "lost", rank: e.rank, node: e.node };
  if (e instanceof RankTimeoutError) {
    return { kind: "timeout", ranks: e.ranks, timeoutMs: e.timeoutMs };
  }
  if (e instanceof VersionMismatchError) return { kind: "version", mine: e.mine, theirs: e.theirs };
  return { kind: "error", message: `rank 0 failed: ${errorLine(e)}` };
}

class StarGroup implements Group {
  readonly rank: number;
  readonly size: number;
  readonly root = 0;
  members: readonly Member[] = [];
  #seq = 0;
  #broken: Error | undefined;
  #disposed = false;
  readonly #lost = new AbortController();
  readonly #stonewalls = new Map<string, AbortController>();

  constructor(readonly info: LaunchInfo, readonly transport: Transport | undefined) {
    this.rank = info.rank;
    this.size = info.size;
  }

  get lost(): AbortSignal {
    return this.#lost.signal;
  }

  #stonewallOf(phase: string): AbortController {
    let c = this.#stonewalls.get(phase);
    if (c === undefined) {
      c = new AbortController();
      this.#stonewalls.set(phase, c);
    }
    return c;
  }

  /** Hub: everyone stops `phase`. */
  #stopAll(phase: string): void {
    const c = this.#stonewallOf(phase);
    if (c.signal.aborted) return;
    c.abort(new Error(`a member finished ${phase}`));
    const stop = encode({ t: "stop", phase });
    for (const r of this.#others()) this.transport?.notify(r, stop);
  }

  stonewall(phase: string): { readonly signal: AbortSignal; finished(): void } {
    const c = this.#stonewallOf(phase);
    return {
      signal: c.signal,
      finished: () => {
        if (c.signal.aborted || this.#disposed) return;
        if (this.rank === 0 || this.transport === undefined) return this.#stopAll(phase);
        c.abort(new Error(`finished ${phase}`));
        this.transport.notify(0, encode({ t: "done", phase }));
      },
    };
  }

  /**
   * After the group formed: a member's link dropping between steps aborts
   * `lost` at once; the hub tells the others, who abort theirs.
   */
  watch(): void {
    const t = this.transport;
    if (t === undefined) return;
    const lose = (rank: number, node: string) => {
      if (this.#disposed || this.#lost.signal.aborted) return;
      this.#lost.abort(new RankLostError(rank, node, "the run"));
    };
    t.watch({
      gone: (peer) => {
        if (this.#disposed || this.#lost.signal.aborted) return;
        lose(peer, this.#node(peer));
        if (this.rank !== 0) return;
        const notice = encode({ t: "lost", rank: peer, node: this.#node(peer) });
        for (const r of this.#others()) if (r !== peer) t.notify(r, notice);
      },
      intercept: (peer, m) => {
        let header: Header;
        try {
          header = decode(m).header;
        } catch {
          return false;
        }
        if (this.rank === 0) {
          if (header.t !== "done") return false;
          this.#stopAll(header.phase);
          return true;
        }
        if (peer !== 0) return false;
        if (header.t === "lost") lose(header.rank, header.node);
        else if (header.t === "stop") this.#stonewallOf(header.phase).abort(new Error("stop"));
        else return false;
        return true;
      },
    });
  }

  #node(rank: number): string {
    return this.members[rank]?.node ?? "a node not yet known";
  }

  /** Runs one step; a failure breaks the group, and the hub tells the others. */
  async #step<T>(phase: string, fn: (t: Transport) => Promise<T>, single: () => T): Promise<T> {
    if (this.#disposed) throw new Error(`the group is disposed; ${phase} cannot run`);
    if (this.#broken !== undefined) throw this.#broken;
    if (this.transport === undefined) return single();
    const t = this.transport;
    try {
      return await fn(t);
    } catch (e) {
      this.#broken = e instanceof Error ? e : new Error(String(e));
      if (this.rank === 0) {
        const fail = encode({ t: "fail", phase, failure: failureOf(e) });
        await Promise.allSettled(this.#others().map((r) => t.send(r, fail, 1000)));
      }
      throw e;
    }
  }

  #others(): number[] {
    return Array.from({ length: this.size - 1 }, (_, i) => i + 1);
  }

  /** Hub: one message from every other rank; the first loss fails at once, the late are named together. */
  async #receiveAll(t: Transport, phase: string, timeoutMs: number) {
    const late: number[] = [];
    const got = await Promise.all(
      this.#others().map(async (r) => {
        try {
          return decode(await t.receive(r, timeoutMs));
        } catch (e) {
          if (e instanceof PeerTimeoutError) {
            late.push(r);
            return undefined;
          }
          if (e instanceof PeerGoneError) {
            throw new RankLostError(r, this.#node(r), phase, { cause: e });
          }
          throw e;
        }
      }),
    );
    if (late.length > 0) {
      late.sort((a, b) => a - b);
      throw new RankTimeoutError(
        late.map((r) => ({ rank: r, node: this.#node(r) })),
        phase,
        timeoutMs,
      );
    }
    return got.map((m) => m!);
  }

  /** Hub: every other rank's message for the current step, checked to be that step's. */
  async #collect(t: Transport, phase: string, timeoutMs: number) {
    return (await this.#receiveAll(t, phase, timeoutMs)).map((m, i) => {
      const r = i + 1;
      const h = m.header;
      if (h.t !== "arrive" && h.t !== "release" && h.t !== "data") {
        throw new Error(`rank ${r} sent "${h.t}" during ${phase}`);
      }
      if (h.seq !== this.#seq || h.phase !== phase) {
        throw new Error(
          `rank ${r} is at step ${h.seq} (${h.phase}) while rank 0 is at step ${this.#seq} (${phase}): ` +
            "the members call different steps",
        );
      }
      return m;
    });
  }

  /** Member: a transport failure talking to the hub, as the group's error naming rank 0. */
  #hubError(e: unknown, phase: string, timeoutMs: number): unknown {
    if (e instanceof PeerGoneError) return new RankLostError(0, this.#node(0), phase, { cause: e });
    if (e instanceof PeerTimeoutError) {
      return new RankTimeoutError([{ rank: 0, node: this.#node(0) }], phase, timeoutMs);
    }
    return e;
  }

  /** Member: the hub's next message, its failures turned into errors. */
  async #fromHub(t: Transport, phase: string, timeoutMs: number) {
    let m;
    try {
      m = decode(await t.receive(0, timeoutMs + grace(timeoutMs)));
    } catch (e) {
      throw this.#hubError(e, phase, timeoutMs);
    }
    if (m.header.t === "fail") throw errorOf(m.header.failure, m.header.phase, this.rank);
    return m;
  }

  async #toHub(t: Transport, phase: string, bytes: Uint8Array, timeoutMs: number) {
    try {
      await t.send(0, bytes, timeoutMs);
    } catch (e) {
      throw this.#hubError(e, phase, timeoutMs);
    }
  }

  async #toAll(t: Transport, phase: string, bytes: Uint8Array, timeoutMs: number) {
    await Promise.all(
      this.#others().map(async (r) => {
        try {
          await t.send(r, bytes, timeoutMs);
        } catch (e) {
          if (e instanceof PeerGoneError) {
            throw new RankLostError(r, this.#node(r), phase, { cause: e });
          }
          if (e instanceof PeerTimeoutError) {
            throw new RankTimeoutError([{ rank: r, node: this.#node(r) }], phase, timeoutMs);
          }
          throw e;
        }
      }),
    );
  }

  /** Forms the group: hellos to the hub, the member list back. */
  join(me: Member, timeoutMs: number): Promise<void> {
    const phase = "joining the group";
    return this.#step(phase, async (t) => {
      if (this.rank === 0) {
        const hellos = await this.#collectHellos(t, phase, timeoutMs);
        const members = [me, ...hellos];
        const other = members.find((m) => m.version !== me.version);
        this.members = members;
        if (other !== undefined) {
          throw new VersionMismatchError(
            { rank: me.rank, node: me.node, version: me.version },
            { rank: other.rank, node: other.node, version: other.version },
          );
        }
        await this.#toAll(t, phase, encode({ t: "welcome", members }), timeoutMs);
      } else {
        await this.#toHub(t, phase, encode({ t: "hello", member: me }), timeoutMs);
        const m = await this.#fromHub(t, phase, timeoutMs);
        if (m.header.t !== "welcome") {
          throw new Error(`rank 0 sent "${m.header.t}" during ${phase}`);
        }
        this.members = m.header.members;
      }
    }, () => {
      this.members = [me];
    });
  }

  /** Hub: every other rank's hello, naming itself. */
  async #collectHellos(t: Transport, phase: string, timeoutMs: number): Promise<Member[]> {
    return (await this.#receiveAll(t, phase, timeoutMs)).map(({ header: h }, i) => {
      const r = i + 1;
      if (h.t !== "hello" || h.member.rank !== r) {
        throw new Error(`rank ${r} sent no hello during ${phase}`);
      }
      return h.member;
    });
  }

  barrier(phase: string, timeoutMs: number): Promise<void> {
    checkTimeout(timeoutMs);
    return this.#step(phase, async (t) => {
      const seq = ++this.#seq;
      if (this.rank === 0) {
        await this.#collect(t, phase, timeoutMs);
        await this.#toAll(t, phase, encode({ t: "release", seq, phase }), timeoutMs);
      } else {
        await this.#toHub(t, phase, encode({ t: "arrive", seq, phase }), timeoutMs);
        const m = await this.#fromHub(t, phase, timeoutMs);
        if (m.header.t !== "release") {
          throw new Error(`rank 0 sent "${m.header.t}" during ${phase}`);
        }
      }
    }, () => {
      ++this.#seq;
    });
  }

  gather(bytes: Uint8Array, timeoutMs: number): Promise<Uint8Array[] | undefined> {
    checkTimeout(timeoutMs);
    const phase = "gather";
    return this.#step(phase, async (t) => {
      const seq = ++this.#seq;
      if (this.rank === 0) {
        const got = await this.#collect(t, phase, timeoutMs);
        return [bytes, ...got.map((m) => m.payload)];
      }
      await this.#toHub(t, phase, encode({ t: "data", seq, phase }, bytes), timeoutMs);
      return undefined;
    }, () => {
      ++this.#seq;
      return [bytes];
    });
  }

  broadcast(bytes: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    checkTimeout(timeoutMs);
    const phase = "broadcast";
    return this.#step(phase, async (t) => {
      const seq = ++this.#seq;
      if (this.rank === 0) {
        await this.#toAll(t, phase, encode({ t: "data", seq, phase }, bytes), timeoutMs);
        return bytes;
      }
      const m = await this.#fromHub(t, phase, timeoutMs);
      const h: Header = m.header;
      if (h.t !== "data" || h.seq !== seq) {
        throw new Error(
          `rank 0 sent "${h.t}" at another step during ${phase}: the members call different steps`,
        );
      }
      return m.payload.slice();
    }, () => {
      ++this.#seq;
      return bytes;
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await this.transport?.close();
  }
}

function checkTimeout(timeoutMs: number): void {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(`timeoutMs must be a positive number of milliseconds, got ${timeoutMs}`);
  }
}

/**
 * Forms the group `info` describes: opens its transport (TCP or MPI), sends
 * a hello (rank, node, host, pid, version) to rank 0, and waits for the
 * member list. A group of one (transport "single") forms at once.
 *
 * @throws {VersionMismatchError} (on every rank) members run different versions.
 * @throws {RankTimeoutError} members did not say hello within `timeoutMs`.
 * @throws {RankLostError} a member's link dropped while the group formed.
 *
 * @example
 * ```ts
 * import { detectLaunch, joinGroup } from "./mod.ts";
 * await using group = await joinGroup(detectLaunch({}), { version: "1.0.0", timeoutMs: 1000 });
 * await group.barrier("warm-up", 1000);
 * console.assert((await group.gather(new Uint8Array([1]), 1000))?.length === 1);
 * ```
 */
export async function joinGroup(info: LaunchInfo, options: JoinOptions): Promise<Group> {
  checkTimeout(options.timeoutMs);
  let transport: Transport | undefined;
  if (info.transport === "tcp" && info.size > 1) {
    if (info.address === undefined) throw new TypeError("a tcp launch needs an address for rank 0");
    transport = await openTcp({
      rank: info.rank,
      size: info.size,
      host: info.address.host,
      port: info.address.port,
      timeoutMs: options.timeoutMs,
    }).catch((e) => {
      if (e instanceof PeerTimeoutError) {
        throw new RankTimeoutError(
          [{ rank: 0, node: info.address!.host }],
          "joining the group",
          options.timeoutMs,
        );
      }
      throw e;
    });
  } else if (info.transport === "mpi" && info.size > 1) {
    transport = openMpi(info);
  }
  const group = new StarGroup(info, info.size > 1 ? transport : undefined);
  const me: Member = {
    rank: info.rank,
    node: info.node,
    host: Deno.hostname(),
    pid: Deno.pid,
    version: options.version,
  };
  try {
    await group.join(me, options.timeoutMs);
  } catch (e) {
    await group[Symbol.asyncDispose]();
    throw e;
  }
  group.watch();
  return group;
}
