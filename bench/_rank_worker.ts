/**
 * Worker entry of one rank: lays out the rank's objects, runs its program,
 * and sends back its report or the one-line cause of its failure.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { redactSecrets } from "../core/secrets.ts";
import { type PathRuntime, RankExecutor } from "./_rank.ts";
import type { RankReport } from "../schema/workload.ts";
import { AbortedError, NodeSync } from "./_sync.ts";
import type { RankProgram } from "../workloads/ops.ts";

/** Main → rank: the one message that starts it. */
export interface RankStart {
  readonly program: RankProgram;
  readonly paths: readonly PathRuntime[];
  readonly ranks: number;
  readonly sync: { ints: SharedArrayBuffer; f64: SharedArrayBuffer };
  readonly timelineIteration: number;
}

/** Rank → main. */
export type RankMessage =
  | { readonly type: "done"; readonly report: RankReport }
  | { readonly type: "failed"; readonly rank: number; readonly message: string }
  | { readonly type: "aborted"; readonly rank: number };

self.onmessage = async (e: MessageEvent<RankStart>) => {
  const m = e.data;
  const sync = new NodeSync(m.ranks, m.paths.length, m.sync);
  const exec = new RankExecutor(m.program, m.paths, sync, m.timelineIteration);
  let out: RankMessage;
  try {
    await exec.layout();
    out = { type: "done", report: await exec.run() };
  } catch (err) {
    if (err instanceof AbortedError) out = { type: "aborted", rank: m.program.rank };
    else {
      sync.abort();
      const message = err instanceof Error ? err.message : String(err);
      out = { type: "failed", rank: m.program.rank, message: redactSecrets(message) };
    }
  }
  self.postMessage(out);
};
