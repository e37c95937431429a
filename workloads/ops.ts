/**
 * The op stream: what a training workload issues, as data, before any I/O.
 *
 * A workload turns a training setup into one {@linkcode RankProgram} per rank:
 * a list of ops, each on a *stream* (a serial queue inside the rank, such as
 * `compute`, `local:read` or `remote:write`). The executor (workloads/run.ts)
 * runs every stream of a rank at once; an op starts when the op before it in
 * its stream has finished and every op it names in `after` has finished.
 * That is enough to say what the systems do:
 *
 * - prefetch: `read(i+1)` waits only for `compute(i-1)`, so it overlaps
 *   `compute(i)`;
 * - write-behind: `write(i)` waits for `compute(i)`, and `compute(i+1)` does
 *   not wait for it;
 * - bounded buffers: `compute(i+2)` waits for `write(i)`;
 * - phases across ranks: a `barrier` op waits until every rank reaches it;
 * - a lazy flush: ops marked `background` do not hold their phase open;
 * - node-wide locks: a `lock` op takes a lock shared by every rank of the
 *   node, the `unlock` op after it on the same stream releases it once what
 *   it names in `after` is done (waiting for a transfer while holding it).
 *
 * Sizes here are already scaled (see workloads/setup.ts); object names are
 * per rank and per path (the executor puts each rank's objects apart).
 *
 * @module
 */

/** What an op does. */
export type OpKind =
  /** Read `bytes` of `object` from `path`. */
  | "read"
  /** Write `bytes` of `object` to `path` (the object is created or overwritten). */
  | "write"
  /** Think time: compute that takes `ms` (Adam on the CPU, a layer on the GPU). */
  | "compute"
  /** `bytes` served from host memory that would otherwise be read (a cache hit): no I/O. */
  | "hit"
  /** Wait until every rank reaches its barrier of the same index. */
  | "barrier"
  /**
   * Take the node-wide lock `lock` (every rank of the node, every process:
   * MLP-Offload's cross-process file locks); done once held. Ops in `after`
   * are waited for first, as for any op.
   */
  | "lock"
  /**
   * Release the node-wide lock `lock`, once every op in `after` is done: what
   * a rank waits for while it holds the lock.
   */
  | "unlock";

/** One operation of a rank's program. */
export interface Op {
  /** Index in the program; `after` refers to these. */
  readonly id: number;
  readonly kind: OpKind;
  /** The serial queue it runs on. */
  readonly stream: string;
  /** Ops (earlier in the program) that must have finished before this one starts. */
  readonly after: readonly number[];
  /** Training iteration, from 0 (warm-up iterations come first). */
  readonly iteration: number;
  /** Phase of the iteration: `forward`, `backward`, `update`, `checkpoint`, `flush`, … */
  readonly phase: string;
  /** read, write, hit: the path name (see {@linkcode PathPolicy}). */
  readonly path?: string;
  /**
   * read, write: the object, unique within the rank and path; a `/` in it
   * names directories, made by the first write into them (in its time).
   */
  readonly object?: string;
  /** read, write, hit: bytes moved (or served from cache). */
  readonly bytes: number;
  /**
   * read, write: where in the object the bytes start (default 0): a region
   * of one file written tensor by tensor. A multiple of 4 KiB on an O_DIRECT file.
   */
  readonly offset?: number;
  /**
   * read, write: `false` opens the file buffered (through the page cache, no
   * O_DIRECT) even where the path uses O_DIRECT, as a system that writes
   * with ofstream or copies with sendfile does. Default: the path's.
   */
  readonly direct?: false;
  /**
   * write: fsync the object's file once the write is done (a flush that
   * persists each tensor before the next, as DataStates-LLM's pwrite handler).
   */
  readonly fsync?: true;
  /** compute: think time in milliseconds. */
  readonly ms?: number;
  /** What it models, for timelines: `sg12.m`, `layer3.act`. */
  readonly label: string;
  /** True for work that may run past the end of its phase (a lazy flush). */
  readonly background?: boolean;
  /** lock, unlock: the node-wide lock's name (`read`, `write`). */
  readonly lock?: string;
}

/** An object that must exist, laid out unmeasured, before the first op. */
export interface InitialObject {
  readonly path: string;
  readonly object: string;
  readonly bytes: number;
}

/** The program of one rank. */
export interface RankProgram {
  readonly rank: number;
  readonly ops: readonly Op[];
  readonly initial: readonly InitialObject[];
}

/** The role a path plays in a workload. */
export type PathRole =
  /** Host memory (cache, snapshot buffer): the memory tier. */
  | "host"
  /** Node-local storage (NVMe): a file tier. */
  | "local"
  /** Remote storage: a PFS directory or an S3 bucket. */
  | "remote"
  /** The GPU side of a host↔device copy (a memory tier stands in without a GPU). */
  | "device";

/** How the executor drives one path. */
export interface PathPolicy {
  /** Name used by ops (the tier label, e.g. `local`, `remote`, `local1`). */
  readonly name: string;
  readonly role: PathRole;
  /** Block size of each request, bytes (DeepSpeed aio's block_size). */
  readonly bs: number;
  /** Requests in flight per stream (DeepSpeed aio's queue_depth). */
  readonly iodepth: number;
  /** Node-wide: at most this many ranks read the path at once; undefined for no limit. */
  readonly readers?: number;
  /** Node-wide: at most this many ranks write the path at once; undefined for no limit. */
  readonly writers?: number;
  /**
   * File-backed paths: each read or write is cut into this many contiguous
   * slices moved at once, each on its own I/O context with `iodepth` requests
   * in flight (DeepSpeed aio's intra_op_parallelism); undefined for 1.
   */
  readonly threads?: number;
}

/** A workload, ready to run: one program per rank and how to drive each path. */
export interface WorkloadProgram {
  /** `zero-infinity`, `mlp-offload`, … */
  readonly workload: string;
  readonly paths: readonly PathPolicy[];
  readonly ranks: readonly RankProgram[];
  /** Iterations run first and left out of the summary. */
  readonly warmupIterations: number;
  /** Iterations measured. */
  readonly iterations: number;
  /** What the workload derived from the setup, recorded in the results. */
  readonly derived: Readonly<Record<string, number | string | boolean>>;
  /** Things a reader of the results must know (stand-ins, simplifications). */
  readonly notes: readonly string[];
}

/** Fields of an op the builder fills in itself. */
export type OpInput = Omit<Op, "id" | "after" | "bytes"> & {
  readonly after?: readonly (number | undefined)[];
  readonly bytes?: number;
};

/** What {@linkcode ProgramBuilder.barrier} needs to open a phase. */
export interface BarrierInput {
  readonly iteration: number;
  /** The phase the barrier opens (also its label). */
  readonly phase: string;
  /**
   * What the barrier waits for; by default the last held op of every stream
   * so far ({@linkcode ProgramBuilder.lastHeld}).
   */
  readonly after?: readonly (number | undefined)[] | undefined;
}

/**
 * Builds a rank program op by op, numbering ops and dropping `after`
 * references that do not exist (`undefined`, for "the op two subgroups back"
 * at the start).
 *
 * It also keeps, per stream, the last op that holds its phase open (every op
 * not marked `background`), so that a workload opens each phase with
 * {@linkcode ProgramBuilder.barrier}: a barrier on the `compute` stream that
 * waits until every stream has done the work of the phases before.
 *
 * @example
 * ```ts
 * import { ProgramBuilder } from "./ops.ts";
 * const b = new ProgramBuilder(0);
 * b.barrier({ iteration: 0, phase: "update" });
 * const r = b.add({ kind: "read", stream: "local:read", iteration: 0, phase: "update",
 *   path: "local", object: "sg0.params", bytes: 4096, label: "sg0.params" });
 * const c = b.add({ kind: "compute", stream: "compute", iteration: 0, phase: "update", ms: 1,
 *   label: "sg0.adam", after: [r] });
 * const next = b.barrier({ iteration: 1, phase: "update" });
 * console.assert(b.build().ops[next]!.after.join() === [c, r].join());
 * ```
 */
export class ProgramBuilder {
  readonly rank: number;
  readonly #ops: Op[] = [];
  readonly #initial: InitialObject[] = [];
  /** Per stream, in the order streams first appear: the last op not in the background. */
  readonly #held = new Map<string, number>();
  /** The same, for the streams that have had such an op since the last {@linkcode barrier}. */
  readonly #heldInPhase = new Map<string, number>();

  constructor(rank: number) {
    this.rank = rank;
  }

  /** Appends an op and returns its id. */
  add(op: OpInput): number {
    const id = this.#ops.length;
    const after: number[] = [];
    for (const a of op.after ?? []) {
      if (a === undefined) continue;
      if (!Number.isInteger(a) || a < 0 || a >= id) {
        throw new RangeError(`op ${id} (${op.label}) waits for op ${a}, which is not before it`);
      }
      after.push(a);
    }
    this.#ops.push({ ...op, id, after, bytes: op.bytes ?? 0 });
    if (!op.background) {
      this.#held.set(op.stream, id);
      this.#heldInPhase.set(op.stream, id);
    }
    return id;
  }

  /**
   * Ids of the last op of every stream that holds its phase open (all ops but
   * `background` ones), streams in the order they first appeared: over the
   * whole program so far, or with `"phase"` only the streams that have had
   * such an op since the last {@linkcode barrier}, in the order they first
   * did. The two name the same set of finished work when the last barrier
   * waited for every stream: the streams left out were done before it.
   */
  lastHeld(scope: "program" | "phase" = "program"): number[] {
    return [...(scope === "program" ? this.#held : this.#heldInPhase).values()];
  }

  /** The last op of `stream` that holds its phase open, or undefined when it has none. */
  lastHeldOn(stream: string): number | undefined {
    return this.#held.get(stream);
  }

  /**
   * Opens a phase: adds a `barrier` op on the `compute` stream, labelled with
   * the phase, that waits for `after`, by default for {@linkcode lastHeld}
   * (the last held op of every stream), and returns its id. `lastHeld("phase")`
   * counts from this barrier on.
   */
  barrier(input: BarrierInput): number {
    const after = input.after ?? this.lastHeld();
    this.#heldInPhase.clear();
    return this.add({
      kind: "barrier",
      stream: "compute",
      iteration: input.iteration,
      phase: input.phase,
      label: input.phase,
      after,
    });
  }

  /** Notes an object that must exist before the first op. */
  initial(path: string, object: string, bytes: number): void {
    this.#initial.push({ path, object, bytes });
  }

  /** The program so far. */
  build(): RankProgram {
    return { rank: this.rank, ops: [...this.#ops], initial: [...this.#initial] };
  }
}

/** Bytes of a program's ops, summed per `path:kind` (hits count as `path:hit`). */
export function bytesByPath(
  ops: readonly Op[],
  filter: (op: Op) => boolean = () => true,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const op of ops) {
    if (op.path === undefined || !filter(op)) continue;
    const k = `${op.path}:${op.kind}`;
    out[k] = (out[k] ?? 0) + op.bytes;
  }
  return out;
}
