/**
 * The ops of zero-infinity's phases for one rank (see zero_infinity.ts): a
 * small model of DeepSpeed's main Python thread, which computes, issues aio
 * requests on its handles (one stream each) and waits for them.
 *
 * @module
 */

import { forwardBackwardMs } from "./common.ts";
import type { OpKind, ProgramBuilder } from "./ops.ts";
import { adamMs, type TrainingSetup } from "./setup.ts";
import {
  type GradientSwapEvent,
  gradientSwaps,
  optimizerFolder,
  paramBytes,
  paramObject,
  paramsFile,
  stateFile,
  type Zero3Layout,
  type Zero3Param,
  type Zero3Settings as ZeroInfinitySettings,
  type Zero3Subgroup,
} from "./zero3.ts";
import { checkedLayout } from "./_zero_infinity_buffers.ts";

/** O_DIRECT's smallest unit: a request not a multiple of it is refused by the kernel. */
const SECTOR = 512;

/** zero-infinity's streams on the local path `local`: one per DeepSpeed aio handle. */
export function zeroInfinityStreams(local: string, pipeline: boolean) {
  return {
    /** The optimizer swapper's reads (the serial swapper's only handle). */
    read: pipeline ? `${local}:read` : `${local}:optimizer`,
    /** Its writes, the gradient swapper's included. */
    write: pipeline ? `${local}:write` : `${local}:optimizer`,
    paramRead: `${local}:param-read`,
    paramWrite: `${local}:param-write`,
  };
}

/** Builds the phases of one rank's iterations onto `b`. */
export function buildRank(
  b: ProgramBuilder,
  setup: TrainingSetup,
  local: string,
  settings: ZeroInfinitySettings,
): RankPhases {
  return new RankPhases(b, setup, local, settings, checkedLayout(setup, settings));
}

/** A module's parameters, in the order given. */
interface Module {
  readonly params: readonly Zero3Param[];
  readonly numel: number;
}

/** Consecutive parameters of one module, in the order of `params`. */
function modulesOf(params: readonly Zero3Param[]): Module[] {
  const out: { params: Zero3Param[]; numel: number }[] = [];
  for (const p of params) {
    const last = out.at(-1);
    if (last && last.params[0]!.module === p.module) {
      last.params.push(p);
      last.numel += p.numel;
    } else out.push({ params: [p], numel: p.numel });
  }
  return out;
}

class RankPhases {
  readonly #b: ProgramBuilder;
  readonly #setup: TrainingSetup;
  readonly #local: string;
  readonly #s: ZeroInfinitySettings;
  readonly #layout: Zero3Layout;
  readonly #streams: ReturnType<typeof zeroInfinityStreams>;
  readonly #folder: string;
  /** What the main thread's next action waits for. */
  #deps: (number | undefined)[] = [];
  #it = 0;
  #phase = "forward";
  /** The micro-step's prefix on labels (`micro1.`) with gradient accumulation. */
  #tag = "";
  /** Labels used in this iteration, to keep each op's unique (`backward#2`). */
  #labels = new Map<string, number>();

  /** `label`, or `label#n` for its n-th use in the iteration. */
  #unique(label: string): string {
    const n = (this.#labels.get(label) ?? 0) + 1;
    this.#labels.set(label, n);
    return n === 1 ? label : `${label}#${n}`;
  }

  constructor(
    b: ProgramBuilder,
    setup: TrainingSetup,
    local: string,
    settings: ZeroInfinitySettings,
    layout: Zero3Layout,
  ) {
    this.#b = b;
    this.#setup = setup;
    this.#local = local;
    this.#s = settings;
    this.#layout = layout;
    this.#streams = zeroInfinityStreams(local, settings.pipeline);
    this.#folder = optimizerFolder(b.rank);
  }

  /** Main thread: think time after what it waits for. */
  #compute(ms: number, label: string): number {
    const id = this.#b.add({
      kind: "compute",
      stream: "compute",
      iteration: this.#it,
      phase: this.#phase,
      ms,
      label: this.#unique(label),
      after: this.#deps,
    });
    this.#deps = [id];
    return id;
  }

  /** Main thread: an aio request issued on `stream` (not waited for), labelled `label.in` or `label.out`. */
  #io(kind: OpKind, stream: string, object: string, bytes: number, label: string): number {
    return this.#b.add({
      kind,
      stream,
      iteration: this.#it,
      phase: this.#phase,
      path: this.#local,
      object,
      bytes,
      label: this.#unique(`${label}.${kind === "read" ? "in" : "out"}`),
      after: this.#deps,
    });
  }

  /** Main thread: waits for `id` (and, on its stream, everything before it). */
  #wait(id: number | undefined): void {
    if (id !== undefined) this.#deps.push(id);
  }

  #open(phase: string, after: readonly (number | undefined)[] | undefined): void {
    this.#phase = phase;
    this.#deps = [this.#b.barrier({ iteration: this.#it, phase, after })];
  }

  /** The forward and backward passes of iteration `it`; returns the last compute op. */
  backward(it: number, after?: readonly (number | undefined)[]): number {
    this.#it = it;
    this.#labels.clear();
    const fb = forwardBackwardMs(this.#setup);
    const total = this.#layout.params.reduce((t, p) => t + p.numel, 0);
    const steps = this.#s.gradientAccumulation;
    const swaps = gradientSwaps(this.#layout, this.#s.bufferCount).perFlush;
    let last = 0;
    for (let micro = 0; micro < steps; micro++) {
      if (micro === 0) this.#open("forward", after);
      else this.#phase = "forward";
      last = this.#forward(fb.forward, total, micro);
      this.#phase = "backward";
      // gradients are swapped only at the accumulation boundary (partition_grads)
      last = this.#backwardPass(fb.backward, total, micro === steps - 1 ? swaps : []);
    }
    return last;
  }

  #forward(ms: number, total: number, micro: number): number {
    const tag = this.#tag = this.#s.gradientAccumulation > 1 ? `micro${micro}.` : "";
    if (this.#s.offloadParam === undefined) return this.#compute(ms, `${tag}forward`);
    let pending = 0;
    let last: number | undefined;
    for (const m of modulesOf(this.#layout.params)) {
      if (m.params.some((p) => p.onNvme)) {
        // the modules before it compute, then it waits for its parameters
        if (pending > 0) last = this.#compute(pending, `${tag}forward`);
        pending = 0;
        this.#readParams(m);
      }
      pending += (ms * m.numel) / total;
    }
    return pending > 0 || last === undefined ? this.#compute(pending, `${tag}forward`) : last;
  }

  /** A module's parameters on NVMe read and waited for (fetch_sub_module). */
  #readParams(m: Module): void {
    const mine = m.params.filter((p) => p.onNvme);
    let id: number | undefined;
    for (const p of mine) {
      const object = paramObject(this.#b.rank, this.#s, p.id);
      const bytes = paramBytes(this.#setup, this.#s, p);
      const label = `${this.#tag}${p.name}.${this.#phase}`;
      id = this.#io("read", this.#streams.paramRead, object, bytes, label);
    }
    this.#wait(id);
  }

  #backwardPass(
    ms: number,
    total: number,
    swaps: readonly GradientSwapEvent[][],
  ): number {
    const label = `${this.#tag}backward`;
    const flushes = this.#layout.flushes;
    let pending = 0;
    let last: number | undefined;
    // the backward computed so far, before a wait or an I/O the main thread issues
    const settle = () => {
      if (pending > 0) last = this.#compute(pending, label);
      pending = 0;
    };
    let done = 0; // parameters whose gradient is in
    let f = 0;
    for (const m of modulesOf(this.#layout.backward)) {
      if (m.params.some((p) => p.onNvme)) {
        settle();
        this.#readParams(m);
      }
      pending += (ms * m.numel) / total;
      for (let k = 0; k < m.params.length; k++, done++) {
        // a full bucket is flushed before this parameter's gradient joins it
        while (f < flushes.length && flushes[f]!.after === done) this.#flush(swaps[f++], settle);
      }
    }
    while (f < flushes.length) this.#flush(swaps[f++], settle);
    if (pending > 0 || last === undefined) last = this.#compute(pending, label);
    return last;
  }

  #flush(events: readonly GradientSwapEvent[] | undefined, settle: () => void) {
    if (events === undefined || events.length === 0) return;
    settle();
    this.#gradientEvents(events);
  }

  /** The gradient swapper's writes (on the write handle) and waits. */
  #gradientEvents(events: readonly GradientSwapEvent[]): void {
    let lastWrite: number | undefined;
    for (const e of events) {
      if (e.kind === "wait") {
        this.#wait(lastWrite ?? this.#b.lastHeldOn(this.#streams.write));
        continue;
      }
      for (const g of e.pieces) {
        lastWrite = this.#io(
          "write",
          this.#streams.write,
          `${this.#folder}/${g.file}`,
          g.bytes,
          `sg${g.subgroup}.grad@${g.offset}`,
        );
      }
    }
  }

  /** The optimizer step of iteration `it`; returns its last op. */
  update(it: number, after?: readonly (number | undefined)[]): number {
    this.#it = it;
    this.#labels.clear();
    this.#open("update", after);
    const first = it === 0;
    const swapped = this.#layout.subgroups.filter((sg) => sg.swapped);
    const atStep = gradientSwaps(this.#layout, this.#s.bufferCount).atStep;
    let gradientsOut = false;
    let last = this.#deps[0]!;
    const pipe = {
      asyncIn: undefined as { sg: number; reads: number[] } | undefined,
      asyncOut: undefined as number | undefined,
    };
    for (const sg of this.#layout.subgroups) {
      if (!sg.swapped) {
        last = this.#compute(adamMs(this.#setup, sg.elements), `sg${sg.index}.adam`);
        last = this.#writeParams(sg) ?? last;
        continue;
      }
      if (!gradientsOut) {
        this.#gradientEvents(atStep); // swap_in_optimizer_state flushes the gradient swapper
        gradientsOut = true;
      }
      const next = swapped[swapped.indexOf(sg) + 1];
      last = this.#s.pipeline ? this.#pipelined(sg, next, first, pipe) : this.#serial(sg, first);
    }
    return last;
  }

  /** The states of `sg` this step reads: the fp32 params, and the optimizer's once they exist. */
  #stateReads(sg: Zero3Subgroup, first: boolean): { object: string; label: string }[] {
    const out = [{ object: paramsFile(sg), label: `sg${sg.index}.params` }];
    if (!first) {
      for (const st of this.#s.states) {
        out.push({ object: stateFile(sg, st), label: `sg${sg.index}.${st}` });
      }
    }
    return out.map((x) => ({ ...x, object: `${this.#folder}/${x.object}` }));
  }

  /** The serial swapper: one handle, each transfer waited for (partitioned_optimizer_swapper.py). */
  #serial(sg: Zero3Subgroup, first: boolean): number {
    const s = this.#streams.read;
    let id: number | undefined;
    for (const r of this.#stateReads(sg, first)) {
      id = this.#io("read", s, r.object, sg.stateBytes, r.label);
    }
    this.#wait(id);
    for (const g of sg.gradients) {
      id = this.#io(
        "read",
        s,
        `${this.#folder}/${g.file}`,
        g.bytes,
        `sg${sg.index}.grad@${g.offset}`,
      );
    }
    this.#wait(id);
    this.#compute(adamMs(this.#setup, sg.elements), `sg${sg.index}.adam`);
    this.#writeParams(sg);
    // pinned tensors are written unpadded; the optimizer's new states (first step) padded
    const unpadded = this.#unpadded(sg);
    id = this.#io(
      "write",
      s,
      `${this.#folder}/${paramsFile(sg)}`,
      unpadded,
      `sg${sg.index}.params`,
    );
    for (const st of this.#s.states) {
      const bytes = first ? sg.stateBytes : unpadded;
      id = this.#io(
        "write",
        s,
        `${this.#folder}/${stateFile(sg, st)}`,
        bytes,
        `sg${sg.index}.${st}`,
      );
    }
    this.#wait(id);
    return id;
  }

  /** Bytes of an unpadded swap as the device takes it: a tail under a sector is refused, so rounded up. */
  #unpadded(sg: Zero3Subgroup): number {
    return Math.min(sg.stateBytes, Math.ceil(sg.unpaddedBytes / SECTOR) * SECTOR);
  }

  /** The pipelined swapper: a read and a write handle (pipelined_optimizer_swapper.py). */
  #pipelined(
    sg: Zero3Subgroup,
    next: Zero3Subgroup | undefined,
    first: boolean,
    pipe: { asyncIn: { sg: number; reads: number[] } | undefined; asyncOut: number | undefined },
  ): number {
    let reads: number[];
    if (pipe.asyncIn?.sg === sg.index) reads = pipe.asyncIn.reads;
    else reads = this.#pipelinedReads(sg, first);
    pipe.asyncIn = undefined;
    this.#wait(reads.at(-1));
    if (this.#s.pipelineRead && next) {
      pipe.asyncIn = { sg: next.index, reads: this.#pipelinedReads(next, first) };
    }
    this.#compute(adamMs(this.#setup, sg.elements), `sg${sg.index}.adam`);
    this.#writeParams(sg);
    this.#wait(pipe.asyncOut);
    pipe.asyncOut = undefined;
    const w = this.#streams.write;
    let id = this.#io(
      "write",
      w,
      `${this.#folder}/${paramsFile(sg)}`,
      sg.stateBytes,
      `sg${sg.index}.params`,
    );
    for (const st of this.#s.states) {
      id = this.#io(
        "write",
        w,
        `${this.#folder}/${stateFile(sg, st)}`,
        sg.stateBytes,
        `sg${sg.index}.${st}`,
      );
    }
    if (this.#s.pipelineWrite && next) pipe.asyncOut = id;
    else this.#wait(id);
    return id;
  }

  /** One swap-in on the read handle: states, then gradient files. */
  #pipelinedReads(sg: Zero3Subgroup, first: boolean): number[] {
    const s = this.#streams.read;
    const ids = this.#stateReads(sg, first).map((r) =>
      this.#io("read", s, r.object, sg.stateBytes, r.label)
    );
    for (const g of sg.gradients) {
      ids.push(
        this.#io("read", s, `${this.#folder}/${g.file}`, g.bytes, `sg${sg.index}.grad@${g.offset}`),
      );
    }
    return ids;
  }

  /**
   * offload_param: a subgroup outside max_in_cpu writes its parameters on
   * NVMe after Adam, and waits (`_partitioned_params_swap_out`, stage3.py
   * L958–977). Returns the last write, if any.
   */
  #writeParams(sg: Zero3Subgroup): number | undefined {
    if (this.#s.offloadParam === undefined || sg.paramsInCpu) return undefined;
    let id: number | undefined;
    for (const p of sg.params.filter((x) => x.onNvme)) {
      const object = paramObject(this.#b.rank, this.#s, p.id);
      id = this.#io(
        "write",
        this.#streams.paramWrite,
        object,
        paramBytes(this.#setup, this.#s, p),
        `${p.name}.param`,
      );
    }
    this.#wait(id);
    return id;
  }
}
