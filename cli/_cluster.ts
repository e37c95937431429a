/**
 * Commands started by a launcher (mpirun, srun, a torchrun-style
 * environment): the group joined, one run id for all, progress on the root
 * only, and one document written by the root. Without a launcher none of
 * this runs: commands behave exactly as on one node.
 *
 * @module
 */

import {
  detectLaunch,
  type Group,
  joinGroup,
  type LaunchInfo,
  NO_DEADLINE_MS,
} from "../cluster/mod.ts";
import { DEFAULT_TIMEOUT_MS, type JobOptions } from "../core/config.ts";
import { filesOfRank } from "../core/fio_job.ts";
import { runClusterSession } from "../bench/cluster_session.ts";
import { scratchIdOf } from "../bench/cluster_document.ts";
import { runContentionAcross } from "../bench/cluster_contention.ts";
import type { ContentionOptions } from "../bench/contention.ts";
import { decodeJson, encodeJson } from "../bench/cluster_phase.ts";
import type { RunProgress } from "../bench/runner.ts";
import { measureScaling, type ScalingOptions } from "../bench/scaling.ts";
import {
  newResultDocument,
  runSession,
  type SessionOutcome,
  VERSION,
  withSession,
} from "../bench/session.ts";
import type { TierSpec } from "../core/config.ts";
import type { ResultDocument } from "../schema/result.ts";
import type { ScalingResult } from "../schema/scaling.ts";
import { type AfterRuns, outputOf, type ReportTo } from "./_session.ts";
import type { SteadyCriterion } from "../bench/steady.ts";
import { newRunId } from "../tiers/scratch.ts";
import { EXIT_FAILED, fail } from "./_exit.ts";
import { finish } from "./_finish.ts";
import { withSignals } from "./_signals.ts";
import { ProgressLine } from "./progress.ts";
import { errorLine, sizeHintNaming } from "../core/errors.ts";

/** This process's launch, or undefined when no launcher started it (a plain run). */
export function launchedBy(): LaunchInfo | undefined {
  const info = detectLaunch();
  return info.launcher === "none" ? undefined : info;
}

/** What a command's body across processes works with. */
export interface GroupContext {
  readonly group: Group;
  readonly runId: string;
  readonly signal: AbortSignal;
  /** On the root only; quiet elsewhere. */
  readonly onProgress: (p: RunProgress) => void;
  readonly progress: ProgressLine;
}

/**
 * Joins the group `info` describes, runs `body` on every process, and on
 * the root writes the document it returns (in `o.outputFormat`: fio's
 * formats in fio's client/server layout) and exits as it calls for; the
 * other processes write nothing and exit 0, or 1 with one line naming their
 * rank and the cause.
 */
export async function acrossProcesses(
  info: LaunchInfo,
  o: ReportTo,
  timeoutMs: number,
  body: (ctx: GroupContext) => Promise<SessionOutcome & { readonly root: boolean }>,
): Promise<void> {
  outputOf(o, "check"); // before any I/O: a result that cannot be written is refused now
  await withSignals(async (signal) => {
    let group: Group;
    try {
      group = await joinGroup(info, { version: VERSION, timeoutMs });
    } catch (e) {
      fail(`rank ${info.rank} on ${info.node}: ${errorLine(e)}`, EXIT_FAILED);
    }
    let disposed = false;
    const dispose = async () => {
      if (disposed) return;
      disposed = true;
      await group[Symbol.asyncDispose]();
    };
    try {
      const root = group.rank === group.root;
      const progress = new ProgressLine(o.quiet || !root);
      if (root && !o.quiet) {
        const nodes = new Set(group.members.map((m) => m.node)).size;
        console.error(
          `tierbench: ${group.size} processes on ${nodes} node(s), started by ${info.launcher} ` +
            `(${info.transport})`,
        );
      }
      const outcome = await body({
        group,
        runId: newRunId(),
        signal,
        onProgress: (p) => progress.update(p),
        progress,
      });
      progress.stop();
      // Left before the end is written: MPI is finalized before any exit.
      await dispose();
      if (outcome.root) {
        const output = outputOf(o, outcome.doc.run_id);
        await finish(outcome, output, signal, {
          format: o.outputFormat,
          source: o.fioSource,
          verbose: o.verbose,
          sizeOption: o.sizeOption,
        });
      } else if (outcome.doc.status !== "ok") {
        const cause = outcome.error instanceof Error
          ? outcome.error.message
          : outcome.doc.error ?? outcome.doc.status;
        const sized = o.sizeOption ? sizeHintNaming(cause, o.sizeOption) : cause;
        fail(`rank ${group.rank} on ${info.node}: ${sized}`, EXIT_FAILED);
      }
    } finally {
      await dispose();
    }
  });
}

/**
 * `run` across processes: every job on every process at once, one aggregate
 * document; `config` is recorded (default: the command and its jobs).
 */
export async function runAcross(
  info: LaunchInfo,
  jobs: JobOptions[],
  kind: ResultDocument["kind"],
  o: ReportTo,
  stonewalling = false,
  config: Record<string, unknown> = {
    command: "run",
    jobs,
    ...(stonewalling ? { stonewalling } : {}),
  },
): Promise<void> {
  const timeoutMs = Math.max(...jobs.map((j) => j.timeoutMs ?? DEFAULT_TIMEOUT_MS));
  await acrossProcesses(
    info,
    o,
    timeoutMs,
    ({ group, runId, signal, onProgress }) =>
      runClusterSession(
        group,
        jobs.map((j) => filesOfRank(j, group.rank)),
        { kind, runId, config, signal, onProgress },
        stonewalling,
      ),
  );
}

/**
 * `contention` across processes: every process runs the matrix on its own
 * node's tiers at once, each phase started at a barrier, and the root writes
 * one document with the matrices summed (docs/multinode.md).
 */
export async function contentionAcross(
  info: LaunchInfo,
  tiers: readonly TierSpec[],
  options: ContentionOptions,
  config: Record<string, unknown>,
  o: ReportTo,
): Promise<void> {
  await acrossProcesses(
    info,
    o,
    DEFAULT_TIMEOUT_MS,
    ({ group, runId, signal, onProgress }) =>
      runContentionAcross(
        group,
        tiers,
        { ...options, runId, signal, onProgress },
        config,
        DEFAULT_TIMEOUT_MS,
      ),
  );
}

/** What `bench` across nodes runs: the root's profile, then the scaling curve on every node. */
export interface BenchAcross {
  readonly jobs: JobOptions[];
  readonly config: Record<string, unknown>;
  readonly remote: ResultDocument["remote"];
  /** Stop each of the root's points once it is steady (bench/steady.ts). */
  readonly steady?: SteadyCriterion;
  /** The root's steps after its points (the contention matrix, the workloads). */
  readonly after: AfterRuns;
  /** The shared tiers of the curve. */
  readonly tiers: readonly TierSpec[];
  readonly scaling: Omit<ScalingOptions, "signal" | "onProgress" | "open" | "timeoutMs">;
  /** Ends a phase of the root's document (`bench`'s clock): here the scaling curve. */
  readonly lap?: (doc: ResultDocument, name: string) => void;
}

/**
 * `bench` across nodes: the root profiles its own node as `bench` does on
 * one (the others wait, so nothing else loads the shared tiers), then every
 * node takes part in each shared tier's scaling curve; the root's profile
 * gains the `scaling` section.
 */
export async function benchAcross(
  info: LaunchInfo,
  b: BenchAcross,
  o: ReportTo,
): Promise<void> {
  const timeoutMs = Math.max(...b.jobs.map((j) => j.timeoutMs ?? DEFAULT_TIMEOUT_MS));
  await acrossProcesses(info, o, timeoutMs, async ({ group, runId, signal, onProgress }) => {
    const root = group.rank === group.root;
    const shared = decodeJson<string>(await group.broadcast(encodeJson(runId), timeoutMs));
    let outcome: SessionOutcome | undefined;
    if (root) {
      outcome = await runSession(b.jobs, {
        kind: "profile",
        runId: shared,
        config: b.config,
        signal,
        onProgress,
        ...(b.remote ? { remote: b.remote } : {}),
        ...(b.steady ? { steady: b.steady } : {}),
      });
      if (outcome.doc.status === "ok" && !signal.aborted) {
        outcome = await b.after(outcome.doc, signal, onProgress);
      }
    }
    // The others wait for the root's profile however long it takes, then hear how it ended.
    await group.barrier("the end of the root's node profile", NO_DEADLINE_MS);
    const status = decodeJson<string>(
      await group.broadcast(encodeJson(outcome?.doc.status ?? "ok"), timeoutMs),
    );
    let scaling: ScalingResult | undefined;
    const curve = status === "ok" && !signal.aborted
      ? await withSession(
        { kind: "profile", config: {}, runId: shared, signal },
        async (s) => {
          scaling = await measureScaling(group, b.tiers, {
            ...b.scaling,
            timeoutMs,
            signal,
            onProgress,
            open: (job) => s.tier(job.tier, job.s3, scratchIdOf(shared, group.rank)),
          });
          return scaling?.status ?? "ok";
        },
      )
      : undefined;
    if (!root || !outcome) {
      return curve
        ? { ...curve, root: false }
        : { doc: newResultDocument("profile", shared, {}), root: false };
    }
    const doc = outcome.doc;
    if (scaling) {
      doc.scaling = scaling;
      b.lap?.(doc, "scaling");
    }
    if (curve && curve.doc.status !== "ok" && doc.status === "ok") {
      doc.status = curve.doc.status;
      doc.error = `scaling curve: ${curve.doc.error ?? scaling?.error ?? curve.doc.status}`;
      return { doc, root, error: new Error(doc.error) };
    }
    return { ...outcome, doc, root };
  });
}
