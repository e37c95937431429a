/**
 * DeepSpeed's NVMe swap I/O in a trace, step by step, and two such traces
 * side by side (`trace diff`): a recording of DeepSpeed against a
 * generator's op stream exported as a trace.
 *
 * Swap files are those under a `zero_stage_3/` folder, named by their path
 * from there; their *state* is what the name says: `fp32` (`0_51.tensor.swp`),
 * an optimizer state (`exp_avg-0_51.tensor.swp` → `exp_avg`), `gradient`
 * (`0_51_gradient_0_1048576.tensor.swp`) or `param`
 * (`float32params/rank0/12_param.tensor.swp`). Steps come from the markers
 * `STEP n <phase>` (kit/train_tiny.py writes them; the export names its
 * phases so).
 *
 * A request belongs to the phase its file was opened in: DeepSpeed opens a
 * file on the thread that asks for the transfer, and its aio thread submits
 * the iocbs later, sometimes after the next marker.
 *
 * @module
 */

import type { TraceEvent } from "./events.ts";
import { DEFAULT_GAP_US, PhaseCutter } from "./phases.ts";
import type { Counts } from "./stats.ts";

/** A swap file: its path from `zero_stage_3/` and its state, or undefined for any other file. */
export function swapFileOf(path: string): { rel: string; state: string } | undefined {
  const at = path.indexOf("zero_stage_3/");
  if (at < 0) return undefined;
  const rel = path.slice(at + "zero_stage_3/".length);
  const name = rel.slice(rel.lastIndexOf("/") + 1);
  if (/_gradient_\d+_\d+\.tensor\.swp$/.test(name)) return { rel, state: "gradient" };
  if (/^\d+_param\.tensor\.swp$/.test(name)) return { rel, state: "param" };
  const st = /^([A-Za-z_]+)-\d+_\d+\.tensor\.swp$/.exec(name);
  if (st) return { rel, state: st[1]! };
  if (/^\d+_\d+\.tensor\.swp$/.test(name)) return { rel, state: "fp32" };
  return { rel, state: "other" };
}

/** One state's I/O in one direction. */
export interface StateDigest {
  bytes: number;
  requests: number;
  /** Request size → count. */
  sizes: Counts;
  files: Set<string>;
}

/** One training step's swap I/O. */
export interface StepDigest {
  readonly step: number;
  /** Keyed `fp32 read`, `gradient write`, … */
  readonly states: Map<string, StateDigest>;
  /** Bytes keyed `optimizer-step|fp32 read`. */
  readonly phaseBytes: Map<string, number>;
  /** Per aio context, a run per change of file or direction: `r:optimizer/rank0/0_51.tensor.swp`. */
  readonly streams: Map<number, string[]>;
  /** iocbs per io_submit → count. */
  readonly iocbsPerSubmit: Counts;
  /** At each submit of swap I/O, how many aio contexts had requests in flight → count. */
  readonly busyContexts: Counts;
  /** Failed completions on contexts that moved swap files. */
  failed: number;
}

/** A `STEP n phase` marker's step and phase, or undefined. */
export function stepOf(name: string): { step: number; phase: string } | undefined {
  const m = /^STEP (\d+) (.+)$/.exec(name);
  return m ? { step: Number(m[1]), phase: m[2]! } : undefined;
}

/**
 * Digests a trace's events into per-step swap statistics as they stream
 * (memory bounded by the files, contexts and steps, not the length).
 *
 * @example
 * ```ts
 * import { SwapDigest } from "./swap_diff.ts";
 * const d = new SwapDigest();
 * const f = "/nvme/zero_stage_3/optimizer/rank0/0_51.tensor.swp";
 * d.add({ kind: "phase", t: 0, name: "STEP 1 optimizer-step", marker: "" });
 * d.add({ kind: "open", t: 1, thread: "m", dur: 0, file: f, flags: "O_RDONLY", res: 3 });
 * d.add({ kind: "submit", t: 2, thread: "a", dur: 0, ctx: 0, asked: 1, res: 1, iocbs: [{ op: "read", file: f, offset: 0, length: 4096 }] });
 * console.assert(d.steps.get(1)!.states.get("fp32 read")!.bytes === 4096);
 * ```
 */
export class SwapDigest {
  readonly steps = new Map<number, StepDigest>();
  /** Phases with a `STEP` marker seen. */
  markers = 0;
  /** The largest step number a marker named (a micro-step with gradient accumulation). */
  markedSteps = 0;
  readonly #cut: PhaseCutter;
  readonly #opened = new Map<string, { step: number; phase: string }>();
  readonly #lastRun = new Map<string, string>();
  /** Contexts that moved swap files, by the step they did it in last. */
  readonly #swapCtx = new Map<number, number>();
  /** Requests in flight per context (submitted, not yet reaped). */
  readonly #inFlight = new Map<number, number>();

  readonly #microSteps: number;

  /**
   * A digest cutting phases at pauses of `gapUs` before the first marker;
   * with `microSteps` > 1 (gradient accumulation), marker steps are
   * micro-steps and every `microSteps` of them make one optimizer step.
   */
  constructor(gapUs = DEFAULT_GAP_US, microSteps = 1) {
    this.#cut = new PhaseCutter(gapUs);
    this.#microSteps = microSteps;
  }

  /** The optimizer step and phase a phase name stands for. */
  #stepOf(name: string): { step: number; phase: string } | undefined {
    const s = stepOf(name);
    return s && { step: Math.ceil(s.step / this.#microSteps), phase: s.phase };
  }

  #step(step: number): StepDigest {
    let s = this.steps.get(step);
    if (!s) {
      this.steps.set(
        step,
        s = {
          step,
          states: new Map(),
          phaseBytes: new Map(),
          streams: new Map(),
          iocbsPerSubmit: {},
          busyContexts: {},
          failed: 0,
        },
      );
    }
    return s;
  }

  #count(
    at: { step: number; phase: string },
    state: string,
    dir: "read" | "write",
    rel: string,
    length: number,
  ): StepDigest {
    const s = this.#step(at.step);
    const key = `${state} ${dir}`;
    let d = s.states.get(key);
    if (!d) s.states.set(key, d = { bytes: 0, requests: 0, sizes: {}, files: new Set() });
    d.bytes += length;
    d.requests++;
    d.sizes[String(length)] = (d.sizes[String(length)] ?? 0) + 1;
    d.files.add(rel);
    const pk = `${at.phase}|${key}`;
    s.phaseBytes.set(pk, (s.phaseBytes.get(pk) ?? 0) + length);
    return s;
  }

  /** Takes in one event of the trace, in trace order. */
  add(e: TraceEvent): void {
    const phase = this.#cut.place(e);
    const now = this.#stepOf(phase.name);
    if (e.kind === "phase") {
      const marked = stepOf(e.name);
      if (marked) {
        this.markers++;
        this.markedSteps = Math.max(this.markedSteps, marked.step);
      }
      return;
    }
    if (e.kind === "open") {
      if (swapFileOf(e.file) && now) this.#opened.set(e.file, now);
      else this.#opened.delete(e.file);
      return;
    }
    if (e.kind === "read" || e.kind === "write") {
      const f = swapFileOf(e.file);
      const at = this.#opened.get(e.file) ?? now;
      if (f && at) this.#count(at, f.state, e.kind, f.rel, e.length);
      return;
    }
    if (e.kind === "reap") {
      if (e.res > 0) {
        this.#inFlight.set(e.ctx, Math.max(0, (this.#inFlight.get(e.ctx) ?? 0) - e.res));
      }
      const step = this.#swapCtx.get(e.ctx);
      if (step !== undefined) this.#step(step).failed += e.results.filter((r) => r < 0).length;
      return;
    }
    if (e.kind === "submit") this.#submit(e, now);
  }

  #submit(
    e: Extract<TraceEvent, { kind: "submit" }>,
    now: { step: number; phase: string } | undefined,
  ) {
    let first: StepDigest | undefined;
    for (const c of e.iocbs) {
      const f = swapFileOf(c.file);
      const at = this.#opened.get(c.file) ?? now;
      if (!f || !at || (c.op !== "read" && c.op !== "write")) continue;
      const s = this.#count(at, f.state, c.op, f.rel, c.length);
      first ??= s;
      this.#swapCtx.set(e.ctx, at.step);
      const run = `${c.op === "read" ? "r" : "w"}:${f.rel}`;
      const key = `${at.step}|${e.ctx}`;
      if (this.#lastRun.get(key) !== run) {
        this.#lastRun.set(key, run);
        let list = s.streams.get(e.ctx);
        if (!list) s.streams.set(e.ctx, list = []);
        list.push(run);
      }
    }
    if (e.res > 0) this.#inFlight.set(e.ctx, (this.#inFlight.get(e.ctx) ?? 0) + e.res);
    if (first) {
      const k = String(e.iocbs.length);
      first.iocbsPerSubmit[k] = (first.iocbsPerSubmit[k] ?? 0) + 1;
      let busy = 0;
      for (const n of this.#inFlight.values()) if (n > 0) busy++;
      first.busyContexts[String(busy)] = (first.busyContexts[String(busy)] ?? 0) + 1;
    }
  }
}

/** One line of a diff: a statistic of one step, recorded beside the generator's. */
export interface DiffRow {
  readonly step: number;
  /** What is compared: `fp32 read`, `optimizer-step: gradient write`, `aio contexts`, … */
  readonly group: string;
  /** Which of its statistics: `bytes`, `requests`, `request sizes`, `files`, or "". */
  readonly aspect: string;
  readonly recorded: string;
  readonly model: string;
  /** true: within tolerance; false: beyond it; undefined: shown, not judged (timing). */
  readonly ok: boolean | undefined;
}

/** How strict a diff is. */
export interface DiffOptions {
  /** Bytes per state and phase may differ by this fraction (0.01: 1 %). */
  readonly bytesTolerance: number;
  /** The steps to compare. */
  readonly steps: readonly number[];
  /** Whether the second trace's times mean anything (a generator's export: synthetic, no). */
  readonly modelTimed?: boolean;
}

/**
 * Compares a recording's steps with a generator's: bytes per state and per
 * phase within the tolerance; files, request sizes and request counts per
 * state, the aio contexts used, the order of files on each context and
 * the failed completions (requests O_DIRECT refuses) exactly; iocbs per
 * submit shown, not judged.
 */
export function diffSteps(
  recorded: ReadonlyMap<number, StepDigest>,
  model: ReadonlyMap<number, StepDigest>,
  options: DiffOptions,
): DiffRow[] {
  const rows: DiffRow[] = [];
  for (const step of options.steps) {
    const a = recorded.get(step), b = model.get(step);
    const push = (group: string, aspect: string, ra: string, rb: string, ok: boolean | undefined) =>
      rows.push({ step, group, aspect, recorded: ra, model: rb, ok });
    if (!a || !b) {
      push("swap I/O", "", a ? "yes" : "none", b ? "yes" : "none", a === b);
      continue;
    }
    const keys = [...new Set([...a.states.keys(), ...b.states.keys()])].sort();
    for (const k of keys) stateRows(k, a.states.get(k), b.states.get(k), options, push);
    const pkeys = [...new Set([...a.phaseBytes.keys(), ...b.phaseBytes.keys()])].sort();
    for (const k of pkeys) {
      const x = a.phaseBytes.get(k) ?? 0, y = b.phaseBytes.get(k) ?? 0;
      push(
        k.replace("|", ": "),
        "bytes",
        String(x),
        String(y),
        within(x, y, options.bytesTolerance),
      );
    }
    const ca = a.streams.size, cb = b.streams.size;
    push("aio contexts moving swap files", "", String(ca), String(cb), ca === cb);
    orderRows(a, b, push);
    push("iocbs per io_submit", "", counts(a.iocbsPerSubmit), counts(b.iocbsPerSubmit), undefined);
    push(
      "aio contexts busy at once (at each submit)",
      "",
      counts(a.busyContexts),
      options.modelTimed === false
        ? "— (the export's times are synthetic)"
        : counts(b.busyContexts),
      undefined,
    );
    push("failed completions", "", String(a.failed), String(b.failed), a.failed === b.failed);
  }
  return rows;
}

function within(x: number, y: number, tolerance: number): boolean {
  if (x === y) return true;
  return Math.abs(x - y) <= tolerance * Math.max(Math.abs(x), Math.abs(y));
}

/** Counts as `k×n`, largest count first. */
export function counts(c: Counts): string {
  const e = Object.entries(c).sort((p, q) => q[1] - p[1] || Number(p[0]) - Number(q[0]));
  return e.length === 0 ? "—" : e.map(([k, n]) => `${k}×${n}`).join(" ");
}

function stateRows(
  key: string,
  a: StateDigest | undefined,
  b: StateDigest | undefined,
  options: DiffOptions,
  push: (group: string, aspect: string, ra: string, rb: string, ok: boolean | undefined) => void,
): void {
  const x = a ?? { bytes: 0, requests: 0, sizes: {}, files: new Set<string>() };
  const y = b ?? { bytes: 0, requests: 0, sizes: {}, files: new Set<string>() };
  push(
    key,
    "bytes",
    String(x.bytes),
    String(y.bytes),
    within(x.bytes, y.bytes, options.bytesTolerance),
  );
  push(key, "requests", String(x.requests), String(y.requests), x.requests === y.requests);
  push(key, "request sizes", counts(x.sizes), counts(y.sizes), counts(x.sizes) === counts(y.sizes));
  const only = (p: Set<string>, q: Set<string>) => [...p].filter((f) => !q.has(f)).sort();
  const missing = only(x.files, y.files), extra = only(y.files, x.files);
  const same = missing.length === 0 && extra.length === 0;
  push(
    key,
    "files",
    `${x.files.size}${
      missing.length
        ? ` (only here: ${missing.slice(0, 2).join(", ")}${missing.length > 2 ? ", …" : ""})`
        : ""
    }`,
    `${y.files.size}${
      extra.length
        ? ` (only here: ${extra.slice(0, 2).join(", ")}${extra.length > 2 ? ", …" : ""})`
        : ""
    }`,
    same,
  );
}

/**
 * The order of files on each aio context, compared as a set of sequences
 * (contexts are numbered differently in the two traces): each recorded
 * sequence must have its equal in the generator's.
 */
function orderRows(
  a: StepDigest,
  b: StepDigest,
  push: (group: string, aspect: string, ra: string, rb: string, ok: boolean | undefined) => void,
): void {
  const seqs = (d: StepDigest) => [...d.streams.values()].map((s) => s.join(" ")).sort();
  const sa = seqs(a), sb = seqs(b);
  const left = [...sb];
  let first: string | undefined;
  for (const s of sa) {
    const i = left.indexOf(s);
    if (i >= 0) left.splice(i, 1);
    else first ??= s;
  }
  const ok = first === undefined && left.length === 0;
  if (ok) {
    push(
      "order of files on each aio context",
      "",
      `${sa.length} sequences`,
      `${sb.length} sequences`,
      true,
    );
    return;
  }
  // show where the first unmatched recorded sequence parts from its closest model sequence
  const rec = (first ?? left[0]!).split(" ");
  const best = (first === undefined ? sa : sb).map((s) => s.split(" "))
    .map((s) => ({ s, at: prefix(rec, s) })).sort((p, q) => q.at - p.at)[0];
  const at = best?.at ?? 0;
  const show = (s: string[]) => `#${at + 1}: ${s[at] ?? "(end)"}`;
  push(
    "order of files on each aio context",
    "",
    first === undefined ? show(best?.s ?? []) : show(rec),
    first === undefined ? show(rec) : show(best?.s ?? []),
    false,
  );
}

function prefix(a: readonly string[], b: readonly string[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}
