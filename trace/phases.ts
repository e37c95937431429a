/**
 * Cutting a trace into phases as it streams: a `phase` event (a marker the
 * process wrote, or a generator's phase) starts one; before the first of
 * them — all along, in a trace without markers — a pause of at least
 * `gapUs` between one call's end and the next call's start does.
 *
 * Threads' events come in the order their calls ended, so an event may
 * start a little before the phase that is current when it arrives: it then
 * belongs to the phase before, as its start time says.
 *
 * @module
 */

import type { TraceEvent } from "./events.ts";

/** One phase of a trace. */
export interface Phase {
  /** 0, 1, 2 … in trace order. */
  readonly index: number;
  /** The marker's words (`STEP 2 forward`), or `part N` for a phase cut at a pause. */
  readonly name: string;
  /** The marker text, "" for a phase cut at a pause. */
  readonly marker: string;
  /** When it starts, µs. */
  readonly start: number;
}

/** The pause that starts a phase in a trace without markers: 1 s. */
export const DEFAULT_GAP_US = 1_000_000;

/**
 * Places each event of a trace in its phase.
 *
 * @example
 * ```ts
 * import { PhaseCutter } from "./phases.ts";
 * const cut = new PhaseCutter(1000);
 * const io = (t: number) => ({ kind: "read" as const, t, thread: "1", dur: 10, file: "/f", offset: 0, length: 1, res: 1 });
 * console.assert(cut.place(io(0)).name === "part 1");
 * console.assert(cut.place(io(100)).name === "part 1");
 * console.assert(cut.place(io(5000)).name === "part 2"); // after a pause of 4.89 ms
 * console.assert(cut.place({ kind: "phase", t: 6000, name: "STEP 1", marker: "TBMARK STEP 1" }).name === "STEP 1");
 * ```
 */
export class PhaseCutter {
  readonly #gap: number;
  #current: Phase | undefined;
  #previous: Phase | undefined;
  #markers = false;
  #lastEnd = -Infinity;
  #count = 0;

  /** A cutter that starts a phase at a pause of `gapUs` until the first marker. */
  constructor(gapUs: number = DEFAULT_GAP_US) {
    this.#gap = gapUs;
  }

  /** The phase being filled (undefined before the first event). */
  get current(): Phase | undefined {
    return this.#current;
  }

  #start(name: string, marker: string, start: number): Phase {
    this.#previous = this.#current;
    this.#current = { index: this.#count++, name, marker, start };
    return this.#current;
  }

  /** The phase `e` belongs to (for a `phase` event, the phase it starts). */
  place(e: TraceEvent): Phase {
    if (e.kind === "phase") {
      this.#markers = true;
      return this.#start(e.name, e.marker, e.t);
    }
    const end = e.t + Math.max(0, e.dur);
    let p = this.#current;
    if (p === undefined || (!this.#markers && e.t - this.#lastEnd >= this.#gap)) {
      p = this.#start(`part ${this.#count + 1}`, "", e.t);
    } else if (e.t < p.start && this.#previous && e.t >= this.#previous.start) {
      p = this.#previous;
    }
    if (end > this.#lastEnd) this.#lastEnd = end;
    return p;
  }
}
