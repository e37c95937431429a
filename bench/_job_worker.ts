/**
 * The body of one job Worker: open the engine (which lays out the file), wait
 * at the start barrier, run the I/O loop, send the histograms back (HDR's
 * counts: the main thread makes the HDR histograms, and no Worker loads the
 * HDR library).
 *
 * @module
 */

import { type JobEngine, JobRuntime, SyscallFailure, warmUp } from "../engines/types.ts";
import { errnoName, strerror } from "../core/libc.ts";
import type { JobFailure, JobMessage, JobPlan, JobStart } from "../core/job_protocol.ts";
import { encodeDirection } from "../core/latency_buckets.ts";
import { errorLine, S3Error } from "../core/errors.ts";
import { redactSecrets } from "../core/secrets.ts";
import { loadChecksum, VerifyError } from "../core/verify.ts";
import { readBackWritten } from "../engines/verify_readback.ts";
import { workerScope } from "../core/worker_scope.ts";
import { pinJobThread } from "../core/cpu_affinity.ts";

const scope = workerScope<JobStart, JobMessage>();

/**
 * Opens the job's engine, loading only its module: a Worker that loaded
 * every engine (the S3 one brings the whole AWS SDK) took about 150 ms of
 * CPU to start, which 64 jobs on a few cores pay one after the other.
 */
async function openEngine(plan: JobPlan): Promise<JobEngine> {
  switch (plan.engine) {
    case "noop":
      return new (await import("../engines/noop.ts")).NoopEngine();
    case "psync":
      return (await import("../engines/psync.ts")).PsyncEngine.open(plan);
    case "libaio":
      return (await import("../engines/libaio.ts")).LibaioEngine.open(plan);
    case "io_uring":
      return (await import("../engines/io_uring.ts")).IoUringEngine.open(plan);
    case "s3":
      return await (await import("../engines/s3.ts")).S3Engine.open(plan);
  }
}

function describe(e: unknown): JobFailure {
  if (e instanceof SyscallFailure) {
    const code = e.errno === 0 ? "short transfer" : errnoName(e.errno);
    const detail = e.detail ?? (e.errno === 0 ? undefined : `(${strerror(e.errno)})`);
    return {
      kind: "io",
      syscall: e.syscall,
      errno: e.errno,
      code,
      path: e.path,
      ...(e.offset === undefined ? {} : { offset: e.offset }),
      ...(detail === undefined ? {} : { detail }),
    };
  }
  if (e instanceof S3Error) {
    return {
      kind: "s3",
      operation: e.operation,
      bucket: e.bucket,
      key: e.key,
      code: e.code,
      ...(e.status === undefined ? {} : { status: e.status }),
      attempts: e.attempts,
      message: redactSecrets(e.message),
    };
  }
  if (e instanceof VerifyError) {
    const { tier, key, offset, expected, found } = e;
    return {
      kind: "verify",
      tier,
      key,
      offset,
      expected,
      found,
      message: redactSecrets(e.message),
    };
  }
  const name = e instanceof Error ? e.name : "Error";
  return { kind: "other", name, message: redactSecrets(errorLine(e)) };
}

scope.onmessage = async (event: MessageEvent<JobStart>) => {
  const { plan, ctl, f64 } = event.data;
  // The job's runtime is made after the warm-up: the warm-up's throwaway runtimes settle the
  // class's hidden shape in V8 (a field that held a small integer comes to hold a fraction), and
  // a runtime made before keeps the old one, which throws the loop compiled in the warm-up away
  // at the job's first I/O (then 64 jobs on 2 cores ran much of their window unoptimised).
  let made: JobRuntime | undefined;
  const runtime = () => made ??= new JobRuntime(plan, { ctl, f64 });
  let engine: JobEngine | undefined;
  let failure: JobFailure | undefined;
  try {
    // What only some jobs need is loaded by those alone, as their engine is: the checksum and a
    // job file's layout import `node:` modules, which start Deno's Node layer in the isolate.
    if (plan.verify) await loadChecksum();
    pinJobThread(plan.cpus); // before the engine: its ring and buffers are made on those CPUs
    // a job file's files first (a clone that was told to stop meanwhile opens nothing)
    const ready = !plan.target.fio ||
      (await import("../engines/fio_layout.ts")).layOutFioFiles(plan, ctl);
    engine = ready ? await openEngine(plan) : undefined;
    if (engine) warmUp(plan, engine);
    const rt = runtime();
    scope.postMessage({ type: "ready", job: plan.job } satisfies JobMessage);
    if (engine && rt.waitForStart() && !plan.createOnly) await engine.run(rt);
    if (engine && plan.verify && !rt.stopped) {
      rt.finish(); // the end of the measured I/O: the read-back is not measured
      readBackWritten(plan, () => rt.stopped);
      await engine.readBack?.(() => rt.stopped);
    }
  } catch (e) {
    failure = describe(e);
  } finally {
    runtime().finish();
    try {
      await engine?.close();
    } catch (e) {
      failure ??= describe(e);
    }
    try {
      runtime().writeLogs();
    } catch (e) {
      failure ??= describe(e);
    }
  }
  const rt = runtime();
  const message: JobMessage = {
    type: "result",
    job: plan.job,
    read: encodeDirection(rt.read),
    write: encodeDirection(rt.write),
    ...(plan.rate ? { schedule: rt.schedule()! } : {}),
    ...(rt.intervals() ? { intervals: rt.intervals()! } : {}),
    ...(rt.errors.read + rt.errors.write > 0 ? { errors: { ...rt.errors } } : {}),
    ...(rt.cpu() ? { cpu: rt.cpu()! } : {}),
    ...(failure ? { failure } : {}),
  };
  // the runner ends this Worker, or gives it the session's next job (bench/_worker_pool.ts)
  scope.postMessage(message);
};
