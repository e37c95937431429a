/**
 * `trace replay`: a trace's ops run again on real tiers. Its paths are
 * mapped by prefix onto tiers (each a scratch directory, removed at the
 * end); a first pass checks the whole trace and compiles each thread's ops
 * (bench/_trace_compile.ts); the files read before the trace writes them
 * are laid out (unmeasured); then one Worker per trace thread replays its
 * ops in order (engines/trace_replay.ts), all starting together. The result
 * is a document like any run's: per tier and direction, bytes, IOPS and
 * latency histograms, with recorded beside replayed time for the whole
 * trace, each thread and each phase.
 *
 * @module
 */

import process from "node:process";
import { ConfigError } from "../core/errors.ts";
import type { TierSpec } from "../core/config.ts";
import { formatTierSpec } from "../core/config.ts";
import { monoNow } from "../core/libc.ts";
import { openGate } from "../core/futex.ts";
import { CTRL, PROGRESS, PROGRESS_SLOTS } from "../engines/trace_ops.ts";
import { layOutTraceFile, type ThreadReplayReport } from "../engines/trace_replay.ts";
import { TraceReader } from "../trace/reader.ts";
import { MARKER_PREFIX } from "../trace/strace.ts";
import type { Tier } from "../tiers/types.ts";
import type { FileBackedTier } from "../tiers/file_backed.ts";
import type { RunProgress } from "./runner.ts";
import { type SessionOutcome, withSession } from "./session.ts";
import { type Compiled, directoriesOf, type MapTarget, TraceCompiler } from "./_trace_compile.ts";
import type { TraceThreadMessage, TraceThreadStart } from "./_trace_worker.ts";
import { buildResult, type CpuUsage, type LaidOut } from "./_trace_result.ts";

const WORKER_URL = new URL("./_trace_worker.ts", import.meta.url);

/** One `--map`: a trace path prefix and the tier its files go to. */
export interface TraceMap {
  readonly prefix: string;
  readonly tier: TierSpec;
}

/** Options of {@linkcode replayTrace}. */
export interface TraceReplayOptions {
  readonly trace: string;
  readonly maps: readonly TraceMap[];
  readonly speed: "max" | "1x";
  readonly verify?: boolean;
  /** A call that takes longer than this fails the replay, ms. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: RunProgress) => void;
  readonly runId?: string;
  readonly config?: Record<string, unknown>;
  /** Spans kept per thread for the timeline (default 20 000). */
  readonly timelineCap?: number;
}

/** The tier kinds a trace may be replayed on: those with files. */
const FILE_KINDS = new Set(["memory", "file", "pfs"]);

/**
 * Replays a trace; never throws: a refused trace, a failed call or a
 * timeout ends the document "failed" with its one-line cause.
 *
 * @example
 * ```ts ignore
 * const { doc } = await replayTrace({
 *   trace: "ds.trace.gz",
 *   maps: [{ prefix: "/var/tmp/dsnvme", tier: parseTierSpec("file:/mnt/nvme") }],
 *   speed: "max",
 *   timeoutMs: 30_000,
 * });
 * console.log(doc.trace_replay?.total);
 * ```
 */
export function replayTrace(o: TraceReplayOptions): Promise<SessionOutcome> {
  const config = o.config ?? {
    command: "trace replay",
    trace: o.trace,
    maps: o.maps.map((m) => `${m.prefix}=${formatTierSpec(m.tier)}`),
    speed: o.speed,
  };
  return withSession(
    { kind: "trace-replay", config, runId: o.runId, signal: o.signal },
    async (s) => {
      for (const m of o.maps) {
        if (!FILE_KINDS.has(m.tier.kind)) {
          throw new ConfigError(
            "map",
            `${m.prefix}=${
              formatTierSpec(m.tier)
            }: a trace replays on tiers of files (memory:, file:, pfs:)`,
          );
        }
      }
      const reader = await TraceReader.open(o.trace);
      const tiers: Tier[] = [];
      for (const m of o.maps) {
        try {
          tiers.push(await s.tier(m.tier));
        } catch (e) {
          // the tier's own words, said of the --map pair that named it
          if (!(e instanceof ConfigError)) throw e;
          const what = e.message.replace(/^--[a-z-]+: /, "");
          throw new ConfigError(
            "map",
            `${m.prefix}=${formatTierSpec(m.tier)}: ${what}`,
            undefined,
            { cause: e },
          );
        }
      }
      const targets: MapTarget[] = o.maps.map((m, i) => {
        const tier = tiers[i]!;
        const d = tier.describe();
        return {
          prefix: m.prefix,
          // the scratch directory is made on first use: describe() says "" before that
          root: (tier as FileBackedTier).scratchDir,
          // O_DIRECT where the trace used it, on any tier that takes the flag (tmpfs ignores it)
          direct: d.direct !== "not-applicable",
        };
      });
      const dir = await Deno.makeTempDir({ prefix: "tierbench-replay-" });
      try {
        const progress = (phase: RunProgress["phase"], fraction: number, read = 0, write = 0) =>
          o.onProgress?.({
            name: "trace replay",
            phase,
            elapsedMs: 0,
            totalMs: undefined,
            fraction,
            readBytes: read,
            writeBytes: write,
            bwBytes: 0,
            iops: 0,
          });
        const compiled = await new TraceCompiler(o.trace, targets, dir).compile(
          reader,
          () => progress("layout", 0),
        );
        for (const d of directoriesOf(compiled.files)) {
          await Deno.mkdir(d, { recursive: true });
        }
        const laid = await layOutFiles(compiled, o.verify === true, (f) => progress("layout", f));
        if (o.signal?.aborted) return "interrupted";
        const { reports, cpu } = await runThreads(o, compiled, laid, o.signal, progress);
        s.doc.trace_replay = buildResult(o, compiled, reports, tiers, laid, reader.notes, cpu);
        return o.signal?.aborted ? "interrupted" : "ok";
      } finally {
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    },
  );
}

/** Lays out what the trace reads before writing, reporting the fraction done. */
async function layOutFiles(
  c: Compiled,
  verify: boolean,
  onFraction: (f: number) => void,
): Promise<LaidOut> {
  const out: LaidOut = [...c.layout.entries()];
  const total = out.reduce((t, [, b]) => t + b, 0);
  let done = 0;
  for (const [file, bytes] of out) {
    await layOutTraceFile(c.files[file]!, file, bytes, verify);
    done += bytes;
    onFraction(total > 0 ? done / total : 1);
  }
  return out;
}

/** What the main thread shares with a replay's Workers, and the first failure. */
interface Shared {
  readonly ctrlBuf: SharedArrayBuffer;
  readonly ctrl: Int32Array;
  readonly progBuf: SharedArrayBuffer;
  readonly prog: Float64Array;
  readonly workers: Worker[];
  /** Resolved when every Worker is ready (or one failed). */
  readonly readyAll: PromiseWithResolvers<void>;
  ready: number;
  failure: string | undefined;
  /** Tells every Worker to stop, and opens the start for those still waiting on it. */
  readonly stop: () => void;
}

/** The control words and progress slots of `threads` Workers, none started yet. */
function sharedState(threads: number, traceThreads: number): Shared {
  const ctrlBuf = new SharedArrayBuffer((CTRL.DONE + traceThreads) * 4);
  const ctrl = new Int32Array(ctrlBuf);
  const progBuf = new SharedArrayBuffer(Math.max(1, threads) * PROGRESS_SLOTS * 8);
  const stop = () => {
    Atomics.store(ctrl, CTRL.STOP, 1);
    Atomics.notify(ctrl, CTRL.STOP);
    openGate(ctrl, CTRL.GO);
  };
  return {
    ctrlBuf,
    ctrl,
    progBuf,
    prog: new Float64Array(progBuf),
    workers: [],
    readyAll: Promise.withResolvers<void>(),
    ready: 0,
    failure: undefined,
    stop,
  };
}

/** Starts one Worker per thread, opens the start together, watches, gathers the reports. */
async function runThreads(
  o: TraceReplayOptions,
  c: Compiled,
  laid: LaidOut,
  signal: AbortSignal | undefined,
  progress: (phase: RunProgress["phase"], fraction: number, read?: number, write?: number) => void,
): Promise<{ reports: ThreadReplayReport[]; cpu: CpuUsage }> {
  const sh = sharedState(c.threads.length, c.threadCount);
  signal?.addEventListener("abort", sh.stop);
  /** Resolved when a call outlasts --timeout: the stuck Workers never answer. */
  const timedOut = Promise.withResolvers<undefined[]>();
  const done = c.threads.map((_, slot) => startThread(o, c, laid, sh, slot));
  if (c.threads.length === 0) sh.readyAll.resolve();
  await sh.readyAll.promise;
  // a recording of the replay (trace record -- tierbench trace replay …) starts a phase here
  Deno.writeTextFileSync("/dev/null", `${MARKER_PREFIX}replay`);
  const cpuStart = process.cpuUsage();
  openGate(sh.ctrl, CTRL.GO);
  const watch = watchThreads(o, c, sh, progress, () => timedOut.resolve([]));
  try {
    const reports: (ThreadReplayReport | undefined)[] = await Promise.race([
      Promise.all(done),
      timedOut.promise,
    ]);
    const cpu = process.cpuUsage(cpuStart);
    if (sh.failure !== undefined) throw new Error(sh.failure);
    return { reports: reports.filter((r): r is ThreadReplayReport => r !== undefined), cpu };
  } finally {
    clearInterval(watch);
    signal?.removeEventListener("abort", sh.stop);
    for (const w of sh.workers) w.terminate();
  }
}

/** Starts the Worker of thread `slot`: its report, or undefined when it (or another) failed. */
function startThread(
  o: TraceReplayOptions,
  c: Compiled,
  laid: LaidOut,
  sh: Shared,
  slot: number,
): Promise<ThreadReplayReport | undefined> {
  const th = c.threads[slot]!;
  const w = new Worker(WORKER_URL, { type: "module", name: `trace ${th.name}` });
  sh.workers.push(w);
  return new Promise<ThreadReplayReport | undefined>((resolve) => {
    const fail = (message: string) => {
      sh.failure ??= message;
      sh.stop();
      sh.readyAll.resolve();
      resolve(undefined);
    };
    w.onmessage = (e: MessageEvent<TraceThreadMessage>) => {
      const m = e.data;
      if (m.type === "ready") {
        if (++sh.ready === c.threads.length) sh.readyAll.resolve();
        return;
      }
      if (m.type === "failed") return fail(m.message);
      resolve(m.report);
    };
    w.onerror = (e) => {
      e.preventDefault();
      fail(e.message);
    };
    const start: TraceThreadStart = {
      plan: {
        thread: th.name,
        index: th.index,
        waitedOn: th.waitedOn,
        files: c.files,
        fileTier: c.fileTier,
        tiers: o.maps.length,
        phases: c.phases.length,
        contexts: th.contexts,
        syncBytes: th.syncBytes,
        speed: o.speed,
        verify: o.verify === true,
        timelineCap: o.timelineCap ?? 20_000,
      },
      opsPath: th.path,
      ctrl: sh.ctrlBuf,
      progress: sh.progBuf,
      slot,
      laidOut: o.verify ? laid : [],
    };
    w.postMessage(start);
  });
}

/**
 * Every 200 ms: the threads' progress summed and reported, and the first call
 * busy longer than --timeout made the failure (the Workers given up, `onTimeout` called).
 */
function watchThreads(
  o: TraceReplayOptions,
  c: Compiled,
  sh: Shared,
  progress: (phase: RunProgress["phase"], fraction: number, read?: number, write?: number) => void,
  onTimeout: () => void,
): ReturnType<typeof setInterval> {
  const totalOps = c.threads.reduce((t, th) => t + th.ops, 0);
  const prog = sh.prog;
  return setInterval(() => {
    let ops = 0, read = 0, write = 0;
    const now = monoNow();
    for (let t = 0; t < c.threads.length; t++) {
      const b = t * PROGRESS_SLOTS;
      ops += prog[b + PROGRESS.OPS]!;
      read += prog[b + PROGRESS.READ]!;
      write += prog[b + PROGRESS.WRITE]!;
      const since = prog[b + PROGRESS.BUSY_SINCE]!;
      if (since > 0 && now - since > o.timeoutMs && sh.failure === undefined) {
        const file = c.files[prog[b + PROGRESS.BUSY_FILE]!] ?? "a context";
        const at = prog[b + PROGRESS.BUSY_OFFSET]!;
        sh.failure =
          `a call of thread ${c.threads[t]!.name} on ${file}${at >= 0 ? ` at offset ${at}` : ""} ` +
          `took longer than --timeout ${o.timeoutMs / 1000} s`;
        sh.stop();
        // a call stuck in the kernel does not return: the Workers are given up
        for (const w of sh.workers) w.terminate();
        onTimeout();
      }
    }
    progress("measure", totalOps > 0 ? ops / totalOps : 1, read, write);
  }, 200);
}
