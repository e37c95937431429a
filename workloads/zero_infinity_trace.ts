/**
 * zero-infinity's op stream as a trace: the system calls DeepSpeed's aio
 * handles would make for the ops (trace/events.ts), so that `trace stats`
 * and `trace diff` read a generator and a recording alike.
 *
 * Each I/O op becomes an open on the rank's main thread (DeepSpeed opens
 * on the Python thread that issues the request), then, on each of its
 * stream's aio threads, the iocbs of its slice — block_size each, the last
 * shorter, at the slice's offsets (csrc/aio/common/deepspeed_aio_utils.cpp
 * `io_prep_generator`) — submitted as `single_submit` and `overlap_events`
 * say, and reaped; then a close. A request O_DIRECT refuses (not a
 * multiple of 512 bytes: the serial swapper's unpadded writes of some
 * sizes) completes with EINVAL, as DeepSpeed, which never checks, gets it.
 * Times are synthetic (one µs per event): the order is the generator's,
 * the timing is not.
 *
 * @module
 */

import type { TraceEvent } from "../trace/mod.ts";
import type { Op, WorkloadProgram } from "./ops.ts";
import type { TrainingSetup } from "./setup.ts";
import { paramsFile, type Zero3Layout, type Zero3Settings } from "./zero3.ts";
import { zeroInfinityStreams } from "./_zero_infinity_ops.ts";

/** Where the swap files live: the config's nvme_path of the optimizer and of the parameters. */
export interface NvmePaths {
  readonly optimizer: string;
  readonly param: string;
}

const EINVAL = 22;
const SECTOR = 512;

/** Phase names as the recordings' markers spell them (kit/train_tiny.py). */
export function stepPhase(iteration: number, phase: string): string {
  const name = phase === "update" ? "optimizer-step" : phase;
  return `STEP ${iteration + 1} ${name}`;
}

/** What the exporter needs besides the program. */
export interface TraceExportInput {
  readonly program: WorkloadProgram;
  readonly setup: TrainingSetup;
  readonly settings: Zero3Settings;
  readonly layout: Zero3Layout;
  readonly nvme: NvmePaths;
  /** The name of the local path in the program (`local`). */
  readonly local: string;
}

/**
 * The trace events of `input.program`, every rank's, phase by phase.
 *
 * @example
 * ```ts
 * import { resolveSetup } from "./setup.ts";
 * import { zero3Layout } from "./zero3.ts";
 * import { zeroInfinity, zeroInfinitySettings } from "./zero_infinity.ts";
 * import { zeroInfinityTrace } from "./zero_infinity_trace.ts";
 * const setup = resolveSetup({ model: "7b", scale: 0.0001, ranksPerNode: 1, iterations: 1, warmup: 0 });
 * const settings = zeroInfinitySettings();
 * const program = zeroInfinity.build(setup, { local: ["local"] });
 * const events = [...zeroInfinityTrace({
 *   program, setup, settings, layout: zero3Layout(setup, settings),
 *   nvme: { optimizer: "/nvme", param: "/nvme" }, local: "local",
 * })];
 * console.assert(events[0]!.kind === "phase" && events.some((e) => e.kind === "submit"));
 * ```
 */
export function* zeroInfinityTrace(input: TraceExportInput): Generator<TraceEvent> {
  const { program } = input;
  const exporter = new Exporter(input);
  const cursors = program.ranks.map(() => 0);
  let t = 0;
  const phases = phaseOrder(program);
  for (const { iteration, phase } of phases) {
    yield { kind: "phase", t: t++, name: stepPhase(iteration, phase), marker: "" };
    for (const [r, rank] of program.ranks.entries()) {
      const ops = rank.ops;
      let i = cursors[r]!;
      while (i < ops.length && ops[i]!.iteration === iteration && ops[i]!.phase === phase) {
        for (const e of exporter.op(r, ops[i]!, t)) {
          t = Math.max(t, e.t + 1);
          yield e;
        }
        i++;
      }
      cursors[r] = i;
    }
  }
}

/** The (iteration, phase) pairs of the program, in the order rank 0 runs them. */
function phaseOrder(program: WorkloadProgram): { iteration: number; phase: string }[] {
  const out: { iteration: number; phase: string }[] = [];
  for (const op of program.ranks[0]?.ops ?? []) {
    const last = out.at(-1);
    if (!last || last.iteration !== op.iteration || last.phase !== op.phase) {
      out.push({ iteration: op.iteration, phase: op.phase });
    }
  }
  return out;
}

/** Turns ops into the calls DeepSpeed's aio handles make. */
class Exporter {
  readonly #in: TraceExportInput;
  readonly #ctx = new Map<string, number>();
  /** Objects the serial swapper writes unpadded (pinned tensors), by object → unpadded bytes. */
  readonly #unpadded = new Map<string, number>();
  readonly #serialStream: string | undefined;

  constructor(input: TraceExportInput) {
    this.#in = input;
    const streams = zeroInfinityStreams(input.local, input.settings.pipeline);
    this.#serialStream = input.settings.pipeline ? undefined : streams.write;
    for (const sg of input.layout.subgroups) {
      if (sg.swapped) this.#unpadded.set(paramsFile(sg), sg.elements * input.setup.bytesPerState);
    }
  }

  /** The bytes DeepSpeed asks for: the serial swapper writes pinned tensors unpadded. */
  #asked(op: Op): number {
    if (op.stream !== this.#serialStream || op.kind !== "write" || this.#in.setup.scale !== 1) {
      return op.bytes;
    }
    const name = op.object!.split("/").at(-1)!;
    // the fp32 partition always; the optimizer's states once they were swapped in (not step 1)
    const m = /^([A-Za-z_]+)-(\d+_\d+\.tensor\.swp)$/.exec(name);
    const fp32 = this.#unpadded.get(name);
    if (fp32 !== undefined) return fp32;
    if (m && op.iteration > 0) return this.#unpadded.get(m[2]!) ?? op.bytes;
    return op.bytes;
  }

  /**
   * Whether the memory a transfer reads into is off O_DIRECT's 512-byte
   * grid, so that every iocb fails: a gradient file is read into the
   * subgroup's gradient buffer at its parameter's offset
   * (`_swap_in_pinned_gradients`, partitioned_optimizer_swapper.py L187–191;
   * pipelined_optimizer_swapper.py L219–223 via optimizer_utils.py L86–88),
   * and that offset in bytes need not be a multiple of 512. The pinned
   * buffers themselves are page-aligned, and the gradient swapper packs at
   * 1 KiB steps, so no other transfer is off the grid.
   */
  #misaligned(op: Op): boolean {
    if (op.kind !== "read") return false;
    const m = /_gradient_(\d+)_\d+\.tensor\.swp$/.exec(op.object!);
    return m !== null && (Number(m[1]) * this.#in.setup.bytesPerState) % SECTOR !== 0;
  }

  *op(rank: number, op: Op, t0: number): Generator<TraceEvent> {
    if (op.kind !== "read" && op.kind !== "write") return;
    const s = this.#in.settings;
    const base = op.object!.includes("params/rank") ? this.#in.nvme.param : this.#in.nvme.optimizer;
    const file = `${base.replace(/\/+$/, "")}/${op.object}`;
    const main = `rank${rank}/main`;
    const read = op.kind === "read";
    let t = t0;
    yield {
      kind: "open",
      t: t++,
      thread: main,
      dur: 0,
      file,
      flags: read ? "O_RDONLY|O_DIRECT" : "O_WRONLY|O_CREAT|O_DIRECT",
      res: 100,
    };
    const asked = this.#asked(op);
    const per = Math.floor(asked / s.threads);
    const misaligned = this.#misaligned(op);
    for (let th = 0; th < s.threads; th++) {
      const thread = `rank${rank}/${op.stream}#${th}`;
      const key = `${rank}|${op.stream}|${th}`;
      let ctx = this.#ctx.get(key);
      if (ctx === undefined) {
        this.#ctx.set(key, ctx = this.#ctx.size);
        yield { kind: "io_setup", t: t++, thread, dur: 0, ctx, nr: s.queueDepth, res: 0 };
      }
      for (const e of this.#slice(thread, ctx, file, read, th * per, per, t, misaligned)) {
        t = e.t + 1;
        yield e;
      }
    }
    yield { kind: "close", t: t++, thread: main, dur: 0, file, res: 0 };
  }

  /** One aio thread's share of a transfer: its iocbs, submitted and reaped as DeepSpeed does. */
  *#slice(
    thread: string,
    ctx: number,
    file: string,
    read: boolean,
    base: number,
    bytes: number,
    t0: number,
    misaligned: boolean,
  ): Generator<TraceEvent> {
    const s = this.#in.settings;
    const iocbs: { op: "read" | "write"; file: string; offset: number; length: number }[] = [];
    for (let off = 0; off < bytes; off += s.blockSize) {
      iocbs.push({
        op: read ? "read" : "write",
        file,
        offset: base + off,
        length: Math.min(s.blockSize, bytes - off),
      });
    }
    const result = (length: number) => (length % SECTOR === 0 && !misaligned ? length : -EINVAL);
    let t = t0;
    let next = 0;
    let pending: number[] = [];
    const submit = function* (n: number): Generator<TraceEvent> {
      const batch = iocbs.slice(next, next + n);
      next += batch.length;
      const calls = s.singleSubmit ? batch.map((b) => [b]) : [batch];
      for (const c of calls) {
        yield {
          kind: "submit",
          t: t++,
          thread,
          dur: 0,
          ctx,
          asked: c.length,
          res: c.length,
          iocbs: c,
        };
      }
      pending = pending.concat(batch.map((b) => result(b.length)));
    };
    const reap = (n: number): TraceEvent => {
      const results = pending.slice(0, n);
      pending = pending.slice(n);
      return {
        kind: "reap",
        t: t++,
        thread,
        dur: 0,
        ctx,
        min: n,
        max: s.queueDepth,
        res: n,
        results,
      };
    };
    // overlap_events: keep queue_depth in flight, refilling as each completes
    // (do_aio_operation_overlap); otherwise batches of queue_depth, each reaped whole
    yield* submit(Math.min(s.queueDepth, iocbs.length));
    while (pending.length > 0) {
      if (s.overlapEvents) {
        yield reap(1);
        if (next < iocbs.length) yield* submit(1);
      } else {
        yield reap(pending.length);
        if (next < iocbs.length) yield* submit(Math.min(s.queueDepth, iocbs.length - next));
      }
    }
  }
}
