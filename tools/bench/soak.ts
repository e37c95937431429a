/**
 * `deno task bench:soak`: mixed work on every tier, round after round, in
 * one process for a chosen time (30 minutes by default), watching what a
 * leak would show — the process's resident memory and open file descriptors
 * must stay flat — and that nothing goes wrong: every run, workload and
 * contention matrix must end ok (with --verify), and no scratch directory or
 * S3 prefix may be left after a round.
 *
 * A round runs: each tier's write and random read (--verify) and the null
 * tier; one training workload (zero-infinity, mlp-offload, ssdtrain and
 * datastates in turn, --verify, every object read back checked); and every
 * fifth round the contention matrix of memory and file. The remote tiers come
 * from --pfs and --s3 (or TIERBENCH_PFS_DIR, TIERBENCH_S3_BUCKET,
 * TIERBENCH_S3_ENDPOINT); without them a directory on the disk stands in for
 * the PFS and the stub server (tools/services/s3_stub.ts, its own process) for S3,
 * and the report says so.
 *
 * ```sh
 * deno task bench:soak                 # 30 minutes
 * deno task bench:soak --minutes 2     # a short one
 * ```
 *
 * Exit status 0 when there were no errors, no leftovers and memory and file
 * descriptors stayed flat; 1 otherwise; 2 for a usage error.
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { join } from "node:path";
import { parseJobOptions, parseTierSpec, type TierSpec } from "../../core/config.ts";
import { writeFileAtomic } from "../../core/output_file.ts";
import { median } from "../../core/stats.ts";
import { formatBytes } from "../../core/units.ts";
import { runSession } from "../../bench/session.ts";
import { removeSettling } from "../../tiers/scratch.ts";
import { runWorkload } from "../../bench/workload.ts";
import { runContentionSession } from "../../bench/contention.ts";
import { workloadByName } from "../../workloads/registry.ts";
import { resolveSetup } from "../../workloads/setup.ts";
import { newS3Client, splitBucketPath } from "../../tiers/s3_client.ts";
import { SCRATCH_PREFIX } from "../../tiers/scratch.ts";
import { startStubProcess } from "../services/s3_stub.ts";

/** The training workloads of the rounds, in turn, and the tiers each takes. */
const WORKLOADS = [
  ["zero-infinity", ["memory", "file"]],
  ["mlp-offload", ["memory", "file", "pfs"]],
  ["ssdtrain", ["memory", "file"]],
  ["datastates", ["memory", "file", "pfs"]],
] as const;

/** Where the soak works. */
interface Places {
  readonly memory: string;
  readonly file: string;
  readonly pfs: string;
  /** `s3://BUCKET/PREFIX`, or undefined with --no-s3. */
  readonly s3: string | undefined;
  readonly endpoint: string | undefined;
  /** What stands in for a real tier, said in the report. */
  readonly standIns: string[];
}

/** One sample of the process. */
interface Sample {
  t_s: number;
  rss_bytes: number;
  heap_bytes: number;
  fds: number;
  rounds: number;
}

/** What went wrong, and how often. */
interface Tally {
  rounds: number;
  runs: number;
  errors: string[];
  leftovers: string[];
}

function openFds(): number {
  let n = 0;
  for (const _ of Deno.readDirSync("/proc/self/fd")) n++;
  return n;
}

/** Scratch directories and S3 scratch objects left in the soak's places. */
async function leftovers(p: Places): Promise<string[]> {
  const left: string[] = [];
  for (const dir of [p.memory, p.file, p.pfs]) {
    for (const e of Deno.readDirSync(dir)) {
      if (e.name.startsWith(SCRATCH_PREFIX)) left.push(join(dir, e.name));
    }
  }
  if (p.s3 === undefined) return left;
  const { bucket, prefix } = splitBucketPath(p.s3.slice("s3://".length));
  const client = newS3Client({ endpoint: p.endpoint, region: "us-east-1" });
  try {
    const r = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
    for (const o of r.Contents ?? []) left.push(`s3://${bucket}/${o.Key}`);
  } finally {
    client.destroy();
  }
  return left;
}

/** Each tier's write and random read, checked, and the null tier. */
function roundJobs(p: Places, round: number) {
  const common = { runtime: "1", ramp: "0", verify: true, timeout: "30", seed: String(round) };
  const tier = (t: string, extra: Record<string, string | boolean> = {}) =>
    ["write", "randread"].map((rw) =>
      parseJobOptions({
        ...common,
        ...extra,
        tier: t,
        rw,
        name: `${t.slice(0, t.indexOf(":"))} ${rw}`,
      })
    );
  return [
    ...tier(`memory:${p.memory}`, { bs: "64k", size: "16m" }),
    ...tier(`file:${p.file}`, {
      bs: "256k",
      size: "32m",
      direct: true,
      iodepth: "4",
      engine: round % 2 === 0 ? "libaio" : "io_uring",
    }),
    ...tier(`pfs:${p.pfs}`, { bs: "1m", size: "16m" }),
    // objects the stub keeps whole (64 KiB) so that verify holds there too
    ...(p.s3 === undefined ? [] : tier(p.s3, {
      bs: "64k",
      size: "4m",
      iodepth: "4",
      ...(p.endpoint ? { endpoint: p.endpoint } : {}),
    })),
    parseJobOptions({ tier: "null:", rw: "randread", bs: "4k", runtime: "0.5", name: "null" }),
  ];
}

/** One round: the runs, a workload, every fifth round the contention matrix. */
async function round(p: Places, n: number, tally: Tally): Promise<void> {
  const note = (what: string, status: string, error: unknown) => {
    tally.runs++;
    if (status !== "ok") tally.errors.push(`round ${n}: ${what}: ${String(error ?? status)}`);
  };
  const runs = await runSession(roundJobs(p, n), { kind: "run", config: {} });
  note("runs", runs.doc.status, runs.doc.error);
  const [name, kinds] = WORKLOADS[n % WORKLOADS.length]!;
  const specs: TierSpec[] = kinds.map((k) =>
    parseTierSpec(`${k}:${k === "memory" ? p.memory : k === "file" ? p.file : p.pfs}`)
  );
  const setup = resolveSetup({ model: "7b", scale: 0.0005, iterations: 1, warmup: 0 });
  const w = await runWorkload(workloadByName(name), setup, specs, {}, {
    verify: true,
    timeoutMs: 30_000,
  });
  note(`workload ${name}`, w.doc.status, w.doc.error);
  if (n % 5 === 0) {
    const c = await runContentionSession(
      [parseTierSpec(`memory:${p.memory}`), parseTierSpec(`file:${p.file}`)],
      { runtime: "0.5", ramp: "0", size: "16m", mixed: false, verify: true },
      {},
    );
    note("contention", c.doc.status, c.doc.error);
  }
  const left = await leftovers(p);
  tally.leftovers.push(...left.map((l) => `round ${n}: ${l}`));
  tally.rounds++;
}

/**
 * Whether `xs` stayed flat: the last quarter's median against the second
 * quarter's (the first is warm-up: V8 sizes its heaps and glibc its arenas
 * for the Workers, and memory climbs to a plateau there).
 */
function drift(xs: readonly number[]): { before: number; last: number } {
  const q = Math.max(1, Math.floor(xs.length / 4));
  const second = xs.length >= 4 ? xs.slice(q, 2 * q) : xs.slice(0, q);
  return { before: median(second), last: median(xs.slice(-q)) };
}

/**
 * The soak's verdict: peaks over every sample; flatness over the samples
 * taken between rounds (every run's Workers, buffers and files gone, V8's
 * garbage collected): from the second quarter to the last, resident memory
 * within 10 % + 32 MiB, V8's heap within 10 % + 8 MiB, open fds within 4.
 */
function verdict(samples: readonly Sample[], between: readonly Sample[]) {
  const rss = drift(between.map((s) => s.rss_bytes));
  const heap = drift(between.map((s) => s.heap_bytes));
  const fds = drift(between.map((s) => s.fds));
  return {
    rss,
    heap,
    fds,
    peak_rss_bytes: Math.max(...samples.map((s) => s.rss_bytes)),
    peak_fds: Math.max(...samples.map((s) => s.fds)),
    rss_flat: rss.last <= rss.before * 1.1 + 32 * 2 ** 20,
    heap_flat: heap.last <= heap.before * 1.1 + 8 * 2 ** 20,
    fds_flat: fds.last <= fds.before + 4,
  };
}

/**
 * Removes directory `d` though the abandoned round's Workers may still be
 * writing into it (a file made during the removal fails it with ENOTEMPTY, and
 * it is tried again); one that is gone already is fine, and one that cannot
 * be removed is named on stderr, not thrown, so the rest are still removed.
 */
async function removeWhileWritten(d: string): Promise<void> {
  try {
    await removeSettling(d);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      console.error(`soak: could not remove ${d}: ${(e as Error).message}`);
    }
  }
}

/** Where the soak works: the options', the environment's, or stand-ins made here. */
async function places(o: {
  memoryDir: string;
  fileDir?: string | undefined;
  pfs?: string | undefined;
  s3?: string | boolean | undefined;
  endpoint?: string | undefined;
}): Promise<{ places: Places; cleanup: () => Promise<void> }> {
  const made: string[] = [];
  const temp = async (prefix: string) => {
    const d = await Deno.makeTempDir({ prefix, ...(o.fileDir ? { dir: o.fileDir } : {}) });
    made.push(d);
    return d;
  };
  const standIns: string[] = [];
  const memory = await Deno.makeTempDir({ dir: o.memoryDir, prefix: "tierbench-soak-" });
  made.push(memory);
  const file = await temp("tierbench-soak-file-");
  let pfs = o.pfs ?? Deno.env.get("TIERBENCH_PFS_DIR");
  if (pfs === undefined) {
    pfs = await temp("tierbench-soak-pfs-");
    standIns.push(`pfs: a directory on the disk (${pfs}), no PFS given`);
  }
  let s3 = typeof o.s3 === "string" ? o.s3 : Deno.env.get("TIERBENCH_S3_BUCKET");
  let endpoint = o.endpoint ?? Deno.env.get("TIERBENCH_S3_ENDPOINT");
  let stub: { stop: () => Promise<void> } | undefined;
  if (o.s3 === false) {
    s3 = undefined;
    standIns.push("s3: none (--no-s3)");
  } else if (s3 === undefined) {
    const started = await startStubProcess();
    stub = started;
    endpoint = started.endpoint;
    s3 = "s3://soak";
    Deno.env.set("AWS_ACCESS_KEY_ID", Deno.env.get("AWS_ACCESS_KEY_ID") ?? "soak-key-id");
    Deno.env.set("AWS_SECRET_ACCESS_KEY", Deno.env.get("AWS_SECRET_ACCESS_KEY") ?? "soak-secret");
    standIns.push(
      `s3: the stub server (tools/services/s3_stub.ts) at ${endpoint}, no bucket given`,
    );
  }
  const bucketUrl = s3 === undefined ? undefined : s3.startsWith("s3://") ? s3 : `s3://${s3}`;
  const s3Url = bucketUrl === undefined
    ? undefined
    : `${bucketUrl.replace(/\/+$/, "")}/tierbench-soak-${crypto.randomUUID().slice(0, 8)}`;
  return {
    places: { memory, file, pfs, s3: s3Url, endpoint, standIns },
    cleanup: async () => {
      for (const d of made) await removeWhileWritten(d);
      await stub?.stop();
    },
  };
}

/**
 * On SIGINT or SIGTERM: the sampling stopped, the stand-in directories and
 * the stub removed, then one line saying so and what was seen (the last line
 * printed), exit 1 (the round in flight is abandoned:
 * its Workers end with the process). Returns what stops listening.
 */
function interruptible(cleanup: () => Promise<void>, tally: Tally): () => void {
  const signals = ["SIGINT", "SIGTERM"] as const;
  const handlers = signals.map((signal) => {
    const handler = async () => {
      await cleanup();
      console.error(
        `soak: interrupted by ${signal} after ${tally.rounds} rounds (${tally.errors.length} ` +
          `errors, ${tally.leftovers.length} left); its scratch removed, no report written`,
      );
      Deno.exit(1);
    };
    Deno.addSignalListener(signal, handler);
    return handler;
  });
  return () => signals.forEach((signal, i) => Deno.removeSignalListener(signal, handlers[i]!));
}

/** Runs the soak; resolves with its exit status. */
async function soak(o: {
  minutes: string;
  sample: string;
  memoryDir: string;
  fileDir?: string | undefined;
  pfs?: string | undefined;
  s3?: string | boolean | undefined;
  endpoint?: string | undefined;
  output?: string | undefined;
}): Promise<number> {
  const minutes = Number(o.minutes);
  const sampleS = Number(o.sample);
  if (!(minutes > 0)) throw new CommanderError(2, "usage", `--minutes: "${o.minutes}" is not > 0`);
  if (!(sampleS > 0)) throw new CommanderError(2, "usage", `--sample: "${o.sample}" is not > 0`);
  const { places: p, cleanup } = await places(o);
  const tally: Tally = { rounds: 0, runs: 0, errors: [], leftovers: [] };
  const samples: Sample[] = [];
  const between: Sample[] = [];
  const t0 = performance.now();
  const sample = (): Sample => {
    const m = Deno.memoryUsage();
    return {
      t_s: Math.round((performance.now() - t0) / 100) / 10,
      rss_bytes: m.rss,
      heap_bytes: m.heapUsed,
      fds: openFds(),
      rounds: tally.rounds,
    };
  };
  const take = () => {
    samples.push(sample());
    const s = samples.at(-1)!;
    console.error(
      `soak: ${s.t_s} s, round ${tally.rounds}, RSS ${formatBytes(s.rss_bytes)}, ${s.fds} fds, ` +
        `${tally.errors.length} errors, ${tally.leftovers.length} left`,
    );
  };
  for (const line of p.standIns) console.error(`soak: ${line}`);
  take();
  const timer = setInterval(take, sampleS * 1000);
  const stopOnSignal = interruptible(() => {
    clearInterval(timer);
    return cleanup();
  }, tally);
  try {
    while (performance.now() - t0 < minutes * 60_000) {
      await round(p, tally.rounds, tally);
      // between rounds, with garbage collected where V8 lets us (the task passes --expose-gc)
      (globalThis as { gc?: () => void }).gc?.();
      between.push(sample());
    }
  } finally {
    clearInterval(timer);
    stopOnSignal();
    take();
    await cleanup();
  }
  return await report(o.output, p, minutes, { samples, between }, tally);
}

/** Writes the soak's document and prints its verdict; the exit status. */
async function report(
  output: string | undefined,
  p: Places,
  minutes: number,
  { samples, between }: { samples: Sample[]; between: Sample[] },
  tally: Tally,
): Promise<number> {
  const v = verdict(samples, between);
  const doc = {
    schema: "tierbench/soak@1",
    host: Deno.hostname(),
    finished: new Date().toISOString(),
    minutes,
    tiers: { memory: p.memory, file: p.file, pfs: p.pfs, s3: p.s3 },
    stand_ins: p.standIns,
    rounds: tally.rounds,
    sessions: tally.runs,
    errors: tally.errors,
    leftovers: tally.leftovers,
    verdict: v,
    samples,
    between_rounds: between,
  };
  const path = output ?? join(
    new URL("../../results/", import.meta.url).pathname,
    `soak-${Deno.hostname()}-${doc.finished.replace(/[:.]/g, "")}.json`,
  );
  await writeFileAtomic(path, JSON.stringify(doc, null, 2) + "\n");
  console.log(
    `soak: ${tally.rounds} rounds (${tally.runs} sessions) in ${minutes} min; peak RSS ` +
      `${formatBytes(v.peak_rss_bytes)}; between rounds ${formatBytes(v.rss.before)} in the ` +
      `second quarter, ${formatBytes(v.rss.last)} in the last: ${
        v.rss_flat ? "flat" : "GROWING"
      }; ` +
      `heap ${formatBytes(v.heap.before)} → ${formatBytes(v.heap.last)}: ` +
      `${v.heap_flat ? "flat" : "GROWING"}; ` +
      `fds peak ${v.peak_fds} ` +
      `(${v.fds.before} → ${v.fds.last}: ${v.fds_flat ? "flat" : "GROWING"}); ` +
      `${tally.errors.length} errors; ${tally.leftovers.length} leftovers`,
  );
  for (const e of [...tally.errors, ...tally.leftovers].slice(0, 5)) console.log(`  ${e}`);
  console.log(`soak: ${path}`);
  const flat = v.rss_flat && v.heap_flat && v.fds_flat;
  return tally.errors.length === 0 && tally.leftovers.length === 0 && flat ? 0 : 1;
}

if (import.meta.main) {
  const program = new Command()
    .name("deno task bench:soak")
    .description("mixed work on every tier for a while, watching memory, fds, errors, leftovers")
    .option("--minutes <n>", "how long", "30")
    .option("--sample <seconds>", "how often RSS and fds are sampled", "10")
    .option("--memory-dir <dir>", "tmpfs for the memory tier", "/dev/shm")
    .option("--file-dir <dir>", "a directory on the disk (default: the system's temp directory)")
    .option("--pfs <dir>", "a directory on a shared mount (default: $TIERBENCH_PFS_DIR)")
    .option("--s3 <url>", "s3://BUCKET[/PREFIX] (default: $TIERBENCH_S3_BUCKET, else the stub)")
    .option("--no-s3", "no s3 tier")
    .option("--endpoint <url>", "S3 endpoint (default: $TIERBENCH_S3_ENDPOINT)")
    .option("--output <file>", "the soak's JSON (default results/soak-<host>-<time>.json)")
    .exitOverride()
    .configureOutput({ outputError: () => {} });
  try {
    await program.parseAsync(Deno.args, { from: "user" });
    Deno.exit(await soak(program.opts()));
  } catch (e) {
    if (e instanceof CommanderError && e.exitCode === 0) Deno.exit(0);
    console.error(`soak: ${e instanceof Error ? e.message.replace(/^error: /, "") : e}`);
    Deno.exit(e instanceof CommanderError ? 2 : 1);
  }
}
