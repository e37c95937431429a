/**
 * The MPI transport, through Deno FFI: MPI_Init, then non-blocking
 * point-to-point messages (MPI_Isend polled with MPI_Test; MPI_Iprobe +
 * MPI_Get_count, then MPI_Recv of the matched message) on MPI_COMM_WORLD,
 * polled from timers so the event loop keeps running and timeouts work.
 *
 * Open MPI (libmpi.so.40): its handles are the addresses of global symbols
 * (`&ompi_mpi_comm_world`, `&ompi_mpi_byte`), so the library is opened with
 * RTLD_GLOBAL through libc's dlopen (its plugins need its symbols) and the
 * addresses are taken with dlsym. MPICH (libmpich.so.12): handles are ints,
 * MPI_COMM_WORLD 0x44000000 and MPI_BYTE 0x4c00010d (MPICH 4.0's mpi.h).
 *
 * A lost peer is not seen here: when one process of an Open MPI or MPICH
 * job dies, `mpirun` kills the others itself (and exits non-zero), so the
 * survivors never get to report it. Under MPI a late member is reported
 * (RankTimeoutError); a lost one ends the job.
 *
 * @module
 */

import { PeerTimeoutError, type Transport, type WatchHandlers } from "./_transport.ts";
import type { LaunchInfo } from "./types.ts";

const RTLD_NOW = 2;
const RTLD_GLOBAL = 0x100;
const TAG = 7;
/** The tag of notices between steps (a member lost, a member done). */
const NOTICE_TAG = 8;
/** How often a watching transport looks for notices, ms. */
const NOTICE_POLL_MS = 20;

const OMPI_LIB = "libmpi.so.40";
const MPICH_LIB = "libmpich.so.12";
const MPICH_COMM_WORLD = 0x44000000;
const MPICH_BYTE = 0x4c00010d;

function symbols<H extends "pointer" | "i32">(h: H) {
  return {
    MPI_Initialized: { parameters: ["buffer"], result: "i32" },
    MPI_Init: { parameters: ["pointer", "pointer"], result: "i32" },
    MPI_Finalize: { parameters: [], result: "i32" },
    MPI_Comm_rank: { parameters: [h, "buffer"], result: "i32" },
    MPI_Comm_size: { parameters: [h, "buffer"], result: "i32" },
    MPI_Isend: { parameters: ["buffer", "i32", h, "i32", "i32", h, "buffer"], result: "i32" },
    MPI_Test: { parameters: ["buffer", "buffer", "buffer"], result: "i32" },
    MPI_Iprobe: { parameters: ["i32", "i32", h, "buffer", "buffer"], result: "i32" },
    MPI_Get_count: { parameters: ["buffer", h, "buffer"], result: "i32" },
    MPI_Recv: { parameters: ["buffer", "i32", h, "i32", "i32", h, "buffer"], result: "i32" },
  } as const;
}

type Handle = Deno.PointerValue | number;
// The two flavours differ only in the handles' FFI type; one loose view serves both.
// deno-lint-ignore no-explicit-any
type Mpi = Record<keyof ReturnType<typeof symbols>, (...args: any[]) => number>;

interface Loaded {
  readonly library: string;
  readonly mpi: Mpi;
  readonly comm: Handle;
  readonly byte: Handle;
}

let loaded: Loaded | undefined;

function libcDl() {
  return Deno.dlopen(
    "libc.so.6",
    {
      dlopen: { parameters: ["buffer", "i32"], result: "pointer" },
      dlsym: { parameters: ["pointer", "buffer"], result: "pointer" },
      dlerror: { parameters: [], result: "pointer" },
    } as const,
  ).symbols;
}

const cstr = (s: string) => new TextEncoder().encode(`${s}\0`);

function loadOpenMpi(): Loaded {
  const dl = libcDl();
  const handle = dl.dlopen(cstr(OMPI_LIB), RTLD_NOW | RTLD_GLOBAL);
  if (handle === null) {
    const err = dl.dlerror();
    throw new Error(
      `cannot open ${OMPI_LIB}: ${
        err === null ? "unknown error" : Deno.UnsafePointerView.getCString(err)
      }`,
    );
  }
  const addr = (name: string) => {
    const p = dl.dlsym(handle, cstr(name));
    if (p === null) throw new Error(`${OMPI_LIB} has no symbol ${name}`);
    return p;
  };
  const mpi = Deno.dlopen(OMPI_LIB, symbols("pointer")).symbols as unknown as Mpi;
  return { library: OMPI_LIB, mpi, comm: addr("ompi_mpi_comm_world"), byte: addr("ompi_mpi_byte") };
}

function loadMpich(): Loaded {
  const mpi = Deno.dlopen(MPICH_LIB, symbols("i32")).symbols as unknown as Mpi;
  return { library: MPICH_LIB, mpi, comm: MPICH_COMM_WORLD, byte: MPICH_BYTE };
}

/** The MPI library for this launcher: Open MPI's or MPICH's; under Slurm whichever opens. */
function load(info: LaunchInfo): Loaded {
  if (loaded !== undefined) return loaded;
  if (info.launcher === "openmpi") loaded = loadOpenMpi();
  else if (info.launcher === "mpich") loaded = loadMpich();
  else {
    try {
      loaded = loadOpenMpi();
    } catch (e) {
      try {
        loaded = loadMpich();
      } catch {
        throw new Error(`neither ${OMPI_LIB} nor ${MPICH_LIB} could be opened`, { cause: e });
      }
    }
  }
  return loaded;
}

function check(rc: number, call: string): void {
  if (rc !== 0) throw new Error(`${call} failed with MPI error ${rc}`);
}

/**
 * How long a wait polls MPI from microtasks before it falls back to timers.
 * A timer tick costs about 1 ms, several per step; polling from microtasks
 * answers in microseconds but holds the event loop and a core, so only the first
 * 5 ms of each wait do it (a long wait at a barrier costs no CPU after that).
 */
const SPIN_MS = 5;

const timer = () => new Promise<void>((r) => setTimeout(r, 0));

class MpiTransport implements Transport {
  #closed = false;
  #pendingSends = 0;
  #poll: ReturnType<typeof setInterval> | undefined;
  #notices: { buf: Uint8Array; req: BigUint64Array }[] = [];
  readonly #status = new Uint8Array(64);
  readonly #flag = new Int32Array(1);
  readonly #count = new Int32Array(1);
  /**
   * Hops through a message port before each timer tick: timers set from
   * timer callbacks five deep are clamped to 4 ms (HTML's rule, which Deno
   * follows); one set from a message event starts the count again.
   */
  readonly #channel = new MessageChannel();
  readonly #hops: (() => void)[] = [];

  constructor(readonly rank: number, readonly size: number, readonly l: Loaded) {
    this.#channel.port1.onmessage = () => this.#hops.shift()?.();
  }

  /** Yields to the event loop: a microtask while `spinUntil` is ahead, else an unclamped timer tick. */
  async #tick(spinUntil: number): Promise<void> {
    if (performance.now() < spinUntil) return;
    await new Promise<void>((r) => {
      this.#hops.push(r);
      this.#channel.port2.postMessage(0);
    });
    await timer();
  }

  async send(to: number, bytes: Uint8Array, timeoutMs: number): Promise<void> {
    const { mpi, comm, byte } = this.l;
    // An ArrayBuffer of its own does not move while MPI holds its address.
    const buf = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
      ? bytes
      : new Uint8Array(bytes);
    const req = new BigUint64Array(1);
    const flag = new Int32Array(1);
    const status = new Uint8Array(64);
    check(mpi.MPI_Isend(buf, buf.length, byte, to, TAG, comm, req), "MPI_Isend");
    this.#pendingSends++;
    const deadline = Date.now() + timeoutMs;
    const spinUntil = performance.now() + SPIN_MS;
    try {
      for (;;) {
        if (this.#closed) throw new Error("the MPI transport closed during a send");
        check(mpi.MPI_Test(req, flag, status), "MPI_Test");
        if (flag[0] !== 0) return;
        if (Date.now() > deadline) throw new PeerTimeoutError(to, timeoutMs);
        await this.#tick(spinUntil);
      }
    } finally {
      if (flag[0] !== 0) this.#pendingSends--;
      void buf;
    }
  }

  async receive(from: number, timeoutMs: number): Promise<Uint8Array> {
    const { mpi, comm, byte } = this.l;
    const deadline = Date.now() + timeoutMs;
    const spinUntil = performance.now() + SPIN_MS;
    for (;;) {
      if (this.#closed) throw new Error("the MPI transport closed during a receive");
      check(mpi.MPI_Iprobe(from, TAG, comm, this.#flag, this.#status), "MPI_Iprobe");
      if (this.#flag[0] !== 0) {
        check(mpi.MPI_Get_count(this.#status, byte, this.#count), "MPI_Get_count");
        const out = new Uint8Array(
          new ArrayBuffer(Math.max(this.#count[0]!, 1)),
          0,
          this.#count[0]!,
        );
        check(mpi.MPI_Recv(out, out.length, byte, from, TAG, comm, this.#status), "MPI_Recv");
        return out;
      }
      if (Date.now() > deadline) throw new PeerTimeoutError(from, timeoutMs);
      await this.#tick(spinUntil);
    }
  }

  /**
   * Notices travel under a tag of their own, so they never mix with a step's
   * messages; their buffers stay referenced until MPI has sent them.
   */
  notify(to: number, bytes: Uint8Array): void {
    if (this.#closed) return;
    const { mpi, comm, byte } = this.l;
    const buf = new Uint8Array(bytes);
    const req = new BigUint64Array(1);
    check(mpi.MPI_Isend(buf, buf.length, byte, to, NOTICE_TAG, comm, req), "MPI_Isend");
    this.#notices.push({ buf, req });
  }

  /**
   * Polls for notices every {@linkcode NOTICE_POLL_MS} ms and hands them to
   * `intercept`. MPI learns of a lost peer only when it receives from it, and
   * mpirun ends a job whose process died, so `gone` is never called.
   */
  watch(handlers: WatchHandlers): void {
    if (this.#poll !== undefined || this.#closed) return;
    const { mpi, comm, byte } = this.l;
    const flag = new Int32Array(1);
    const status = new Uint8Array(64);
    const count = new Int32Array(1);
    this.#poll = setInterval(() => {
      if (this.#closed) return;
      this.#reapNotices();
      for (let peer = 0; peer < this.size; peer++) {
        if (peer === this.rank) continue;
        for (;;) {
          check(mpi.MPI_Iprobe(peer, NOTICE_TAG, comm, flag, status), "MPI_Iprobe");
          if (flag[0] === 0) break;
          check(mpi.MPI_Get_count(status, byte, count), "MPI_Get_count");
          const out = new Uint8Array(new ArrayBuffer(Math.max(count[0]!, 1)), 0, count[0]!);
          check(mpi.MPI_Recv(out, out.length, byte, peer, NOTICE_TAG, comm, status), "MPI_Recv");
          handlers.intercept(peer, out);
        }
      }
    }, NOTICE_POLL_MS);
  }

  /** Drops the notices MPI has sent; true when none is left in flight. */
  #reapNotices(): boolean {
    const flag = new Int32Array(1);
    const status = new Uint8Array(64);
    this.#notices = this.#notices.filter(({ req }) => {
      check(this.l.mpi.MPI_Test(req, flag, status), "MPI_Test");
      return flag[0] === 0;
    });
    return this.#notices.length === 0;
  }

  /**
   * MPI_Finalize, unless a send is still pending (a failed step): then the
   * process is left to exit without it, which makes mpirun end the job, rather
   * than blocking in MPI_Finalize for a member that will not come.
   */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    clearInterval(this.#poll);
    this.#channel.port1.close();
    this.#channel.port2.close();
    const noticesSent = this.#reapNotices();
    if (this.#pendingSends === 0 && noticesSent) check(this.l.mpi.MPI_Finalize(), "MPI_Finalize");
    return Promise.resolve();
  }
}

/**
 * Initialises MPI (once per process) and returns its transport; checks that
 * MPI's rank and size are the launcher's.
 *
 * @example
 * ```ts ignore
 * import { detectLaunch } from "./launch.ts";
 * import { openMpi } from "./mpi.ts";
 * const t = openMpi(detectLaunch()); // under mpirun
 * await t.close();
 * ```
 */
export function openMpi(info: LaunchInfo): Transport {
  const l = load(info);
  const flag = new Int32Array(1);
  check(l.mpi.MPI_Initialized(flag), "MPI_Initialized");
  if (flag[0] === 0) check(l.mpi.MPI_Init(null, null), "MPI_Init");
  const rank = new Int32Array(1);
  const size = new Int32Array(1);
  check(l.mpi.MPI_Comm_rank(l.comm, rank), "MPI_Comm_rank");
  check(l.mpi.MPI_Comm_size(l.comm, size), "MPI_Comm_size");
  if (rank[0] !== info.rank || size[0] !== info.size) {
    throw new Error(
      `${l.library} says rank ${rank[0]} of ${
        size[0]
      }, the launcher's environment rank ${info.rank} of ${info.size}`,
    );
  }
  return new MpiTransport(info.rank, info.size, l);
}
