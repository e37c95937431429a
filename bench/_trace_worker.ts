/**
 * Worker entry of one thread of a trace replay: reads the thread's ops file
 * a frame at a time, says it is ready, waits for the start and replays
 * (engines/trace_replay.ts), then sends back its report or the one-line
 * cause of its failure.
 *
 * @module
 */

import { openGate } from "../core/futex.ts";
import { redactSecrets } from "../core/secrets.ts";
import { workerScope } from "../core/worker_scope.ts";
import { CTRL, type ThreadReplayPlan } from "../engines/trace_ops.ts";
import { type ThreadReplayReport, TraceThreadReplay } from "../engines/trace_replay.ts";
import { readFrames } from "./_trace_compile.ts";
import { errorLine } from "../core/errors.ts";

/** Main → thread: the one message that starts it. */
export interface TraceThreadStart {
  readonly plan: ThreadReplayPlan;
  readonly opsPath: string;
  readonly ctrl: SharedArrayBuffer;
  readonly progress: SharedArrayBuffer;
  readonly slot: number;
  /** [file, bytes] laid out before the replay (for --verify). */
  readonly laidOut: readonly [number, number][];
}

/** Thread → main. */
export type TraceThreadMessage =
  | { readonly type: "ready" }
  | { readonly type: "done"; readonly report: ThreadReplayReport }
  | { readonly type: "failed"; readonly message: string };

const scope = workerScope<TraceThreadStart, TraceThreadMessage>();

scope.onmessage = (e: MessageEvent<TraceThreadStart>) => {
  const m = e.data;
  const ctrl = new Int32Array(m.ctrl);
  let out: TraceThreadMessage;
  let replay: TraceThreadReplay | undefined;
  try {
    replay = new TraceThreadReplay(m.plan, ctrl, new Float64Array(m.progress), m.slot, m.laidOut);
    const frames = readFrames(m.opsPath);
    scope.postMessage({ type: "ready" });
    out = { type: "done", report: replay.run(() => frames.next().value ?? undefined) };
  } catch (err) {
    // every other thread stops at its next op
    Atomics.store(ctrl, CTRL.STOP, 1);
    Atomics.notify(ctrl, CTRL.STOP);
    openGate(ctrl, CTRL.GO);
    out = {
      type: "failed",
      message: redactSecrets(errorLine(err)),
    };
  } finally {
    replay?.close();
  }
  scope.postMessage(out);
  scope.close();
};
