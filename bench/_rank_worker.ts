/**
 * Worker entry of one rank: lays out the rank's objects, (when gated) says
 * it is ready and waits at the start gate, runs its program, and sends back
 * its report or the one-line cause of its failure.
 *
 * @module
 */

import { redactSecrets } from "../core/secrets.ts";
import { type PathRuntime, RankExecutor } from "./_rank.ts";
import type { RankReport } from "../schema/workload.ts";
import { AbortedError, NodeSync } from "./_sync.ts";
import type { RankProgram } from "../workloads/ops.ts";
import { workerScope } from "../core/worker_scope.ts";

/** Main → rank: the one message that starts it. */
export interface RankStart {
  readonly program: RankProgram;
  readonly paths: readonly PathRuntime[];
  readonly ranks: number;
  readonly sync: { ints: SharedArrayBuffer; f64: SharedArrayBuffer };
  readonly timelineIteration: number;
  /** Say "ready" after the layout and wait for the main thread to open the start gate. */
  readonly gated?: boolean;
  /** --background-rate: bytes/s of the rank's background stream to each path. */
  readonly backgroundRate?: number;
  /** The run's lock folder on this node, for `lock`/`unlock` ops (bench/_node_lock.ts). */
  readonly lockDir?: string;
}

/** Rank → main. */
export type RankMessage =
  | { readonly type: "ready"; readonly rank: number }
  | { readonly type: "done"; readonly report: RankReport }
  | { readonly type: "failed"; readonly rank: number; readonly message: string }
  | { readonly type: "aborted"; readonly rank: number };

const scope = workerScope<RankStart, RankMessage>();

scope.onmessage = async (e: MessageEvent<RankStart>) => {
  const m = e.data;
  const sync = new NodeSync(m.ranks, m.paths.length, m.sync);
  const exec = new RankExecutor(
    m.program,
    m.paths,
    sync,
    m.timelineIteration,
    m.backgroundRate,
    m.lockDir,
  );
  let out: RankMessage;
  try {
    await exec.layout();
    if (m.gated) {
      scope.postMessage({ type: "ready", rank: m.program.rank } satisfies RankMessage);
      await sync.gate();
    }
    out = { type: "done", report: await exec.run() };
  } catch (err) {
    if (err instanceof AbortedError) out = { type: "aborted", rank: m.program.rank };
    else {
      sync.abort();
      const message = err instanceof Error ? err.message : String(err);
      out = { type: "failed", rank: m.program.rank, message: redactSecrets(message) };
    }
  }
  scope.postMessage(out);
};
