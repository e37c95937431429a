/**
 * Worker entry of one rank: lays out the rank's objects, (when gated) says
 * it is ready and waits at the start gate, runs its program, and sends back
 * its report or the one-line cause of its failure.
 *
 * @module
 */

import { redactSecrets } from "../core/secrets.ts";
import { errorLine, RequestTimeoutError, S3Error } from "../core/errors.ts";
import { type PathRuntime, RankExecutor } from "./_rank.ts";
import type { RankReport } from "../schema/workload.ts";
import { AbortedError, NodeSync } from "./_sync.ts";
import type { RankProgram } from "../workloads/ops.ts";
import { workerScope } from "../core/worker_scope.ts";
import { StreamVerifier } from "../engines/stream_verify.ts";

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
  /** --verify: the run id, which makes the pattern of what the rank writes its own. */
  readonly verify?: { readonly runId: string };
}

/** Rank → main. */
export type RankMessage =
  | { readonly type: "ready"; readonly rank: number }
  | { readonly type: "done"; readonly report: RankReport }
  | {
    readonly type: "failed";
    readonly rank: number;
    readonly message: string;
    /**
     * A request timed out (--timeout): the file it was on, or `s3` — the tier
     * under it stopped answering, so its scratch is left for `clean`.
     */
    readonly timedOut?: string;
  }
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
    m.verify ? new StreamVerifier(m.verify.runId) : undefined,
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
      const message = errorLine(err);
      const timedOut = err instanceof RequestTimeoutError
        ? err.path
        : err instanceof S3Error && err.code === "timed out"
        ? "s3"
        : undefined;
      out = {
        type: "failed",
        rank: m.program.rank,
        message: redactSecrets(message),
        ...(timedOut === undefined ? {} : { timedOut }),
      };
    }
  }
  scope.postMessage(out);
};
