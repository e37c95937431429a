/**
 * `deno task bench:s3`: does the s3 tier add anything of its own on top of
 * @aws-sdk/client-s3? GET and PUT of 1 MiB and 64 MiB objects at depth 1 and
 * 8, each measured twice against a trivial local server that discards uploads
 * and serves fixed bytes (tools/s3_stub.ts, its own process): once by a
 * minimal loop of raw SDK calls (the SDK's ceiling on this machine) and once
 * by tierbench's s3 tier (`runJob`, as `tierbench run` does). The ratio
 * tier / raw is the figure; the target is ≥ 0.9. The raw loop also runs in a
 * Worker, as tierbench's jobs do, to tell what the thread costs by itself
 * from what the tier adds. The same requests against an S3 server (the local
 * Ceph's RGW) show what real storage adds. Measurers take turns, the order
 * rotating each round; figures are medians over rounds.
 *
 * ```sh
 * eval "$(deno task -q ceph:up)"      # optional: RGW for the last columns
 * deno task bench:s3 [--runtime 3] [--ramp 1] [--rounds 1] [--quick]
 * deno task bench:s3 --endpoint http://127.0.0.1:7480 --bucket tierbench
 * ```
 *
 * Objects go under `BUCKET/tierbench-s3-ceiling-<id>/`, deleted at the end.
 * Raw figures go to `results/s3-ceiling-<time>.json`.
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { startStubProcess } from "./s3_stub.ts";
import Table from "cli-table3";
import { fileURLToPath } from "node:url";
import { parseJobOptions } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { hostFacts } from "../core/host.ts";
import { runJob } from "../bench/runner.ts";
import { redactSecrets } from "../core/secrets.ts";
import { parseDuration } from "../core/units.ts";
import { median } from "../core/stats.ts";
import { S3Tier } from "../tiers/s3.ts";
import { newRunId } from "../tiers/scratch.ts";
import { deletePrefix } from "../tiers/s3_scratch.ts";
import { newS3Client } from "../tiers/s3_client.ts";
import { rawLoop, type RawLoopOptions } from "./_s3_raw.ts";

const MiB = 1024 ** 2;
const RAW_WORKER = new URL("./_s3_raw_worker.ts", import.meta.url);
const REGION = "us-east-1";
/** Objects each GET point reads over (and lays out first). */
const GET_OBJECTS = 8;
const TARGET = 0.9;
const CEPH_HINT = 'start the local Ceph with `eval "$(deno task -q ceph:up)"` ' +
  "(it exports TIERBENCH_S3_ENDPOINT, TIERBENCH_S3_BUCKET and the keys), or pass --endpoint and --bucket";

/** One measured pattern. */
interface Point {
  readonly op: "GET" | "PUT";
  readonly size: number;
  readonly depth: number;
}

const POINTS: Point[] = (["GET", "PUT"] as const).flatMap((op) =>
  [MiB, 64 * MiB].flatMap((size) => [1, 8].map((depth) => ({ op, size, depth })))
);

/** Where requests go. */
interface Server {
  readonly label: string;
  readonly endpoint: string;
  readonly bucket: string;
}

/** Measurement window. */
interface Timing {
  readonly runtimeMs: number;
  readonly rampMs: number;
}

/** Bytes per second of one point, per measurer, one value per round. */
interface PointResult {
  point: Point;
  server: string;
  /** The raw SDK loop on the main thread: the ceiling. */
  raw_bw_bytes: number[];
  /** The same loop in a Worker (stub only): what the thread alone costs. */
  raw_worker_bw_bytes: number[];
  /** The s3 tier (runJob). */
  tier_bw_bytes: number[];
  tier_retries: number[];
}

/** The raw loop in a Worker of its own, as a tierbench job runs. */
function rawLoopInWorker(o: RawLoopOptions): Promise<number> {
  const w = new Worker(RAW_WORKER, { type: "module", name: "bench:s3 raw" });
  return new Promise<number>((resolve, reject) => {
    w.onmessage = (e: MessageEvent<{ bw?: number; error?: string }>) => {
      w.terminate();
      if (e.data.error !== undefined) reject(new Error(e.data.error));
      else resolve(e.data.bw ?? 0);
    };
    w.onerror = (e) => {
      e.preventDefault();
      w.terminate();
      reject(new Error(e.message));
    };
    w.postMessage(o);
  });
}

/** The same requests through the s3 tier, as `tierbench run` makes them. */
async function tierLoop(
  server: Server,
  tier: S3Tier,
  point: Point,
  timing: Timing,
): Promise<{ bw: number; retries: number }> {
  const job = parseJobOptions({
    tier: `s3://${tier.spec.path}`,
    endpoint: server.endpoint,
    rw: point.op === "GET" ? "read" : "write",
    bs: String(point.size),
    size: String(point.size * GET_OBJECTS),
    iodepth: String(point.depth),
    runtime: `${timing.runtimeMs}ms`,
    ramp: `${timing.rampMs}ms`,
    multipartThreshold: "256m",
  });
  const r = await runJob(tier, job);
  if (r.status !== "ok") throw new Error(r.error ?? "the tier's run failed");
  const d = point.op === "GET" ? r.read : r.write;
  return { bw: d.bw_bytes, retries: r.jobs.reduce((n, j) => n + j.retries, 0) };
}

/**
 * Measures every point on one server, the measurers taking turns (the order
 * rotates each round, so drift falls on all alike); deletes what it wrote.
 */
async function measure(
  server: Server,
  timing: Timing,
  rounds: number,
  withWorker: boolean,
  say: (line: string) => void,
): Promise<PointResult[]> {
  const id = newRunId();
  const base = `tierbench-s3-ceiling-${id}`;
  const loc = { endpoint: server.endpoint, region: REGION };
  const cleanup = newS3Client(loc);
  const results: PointResult[] = [];
  const tier = new S3Tier({ kind: "s3", path: `${server.bucket}/${base}` }, id, loc);
  try {
    await tier.setup();
    for (const point of POINTS) {
      const res: PointResult = {
        point,
        server: server.label,
        raw_bw_bytes: [],
        raw_worker_bw_bytes: [],
        tier_bw_bytes: [],
        tier_retries: [],
      };
      const raw: RawLoopOptions = {
        endpoint: server.endpoint,
        region: REGION,
        bucket: server.bucket,
        prefix: `${base}/raw/`,
        op: point.op,
        size: point.size,
        depth: point.depth,
        objects: GET_OBJECTS,
        rampMs: timing.rampMs,
        runtimeMs: timing.runtimeMs,
      };
      const measurers: (() => Promise<void>)[] = [
        async () => void res.raw_bw_bytes.push(await rawLoop(raw)),
        async () => {
          const t = await tierLoop(server, tier, point, timing);
          res.tier_bw_bytes.push(t.bw);
          res.tier_retries.push(t.retries);
        },
        ...(withWorker
          ? [async () => void res.raw_worker_bw_bytes.push(await rawLoopInWorker(raw))]
          : []),
      ];
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < measurers.length; i++) {
          await measurers[(round + i) % measurers.length]!();
          await deletePrefix(cleanup, loc, server.bucket, `${base}/raw/put/`);
        }
      }
      say(
        `${server.label}: ${label(point)}: raw ${mbs(median(res.raw_bw_bytes))} MB/s, ` +
          (withWorker ? `raw in a Worker ${mbs(median(res.raw_worker_bw_bytes))} MB/s, ` : "") +
          `tier ${mbs(median(res.tier_bw_bytes))} MB/s`,
      );
      results.push(res);
    }
  } finally {
    await tier[Symbol.asyncDispose]();
    await deletePrefix(cleanup, loc, server.bucket, `${base}/`).catch(() => {});
    cleanup.destroy();
  }
  return results;
}

function mbs(bytesPerSecond: number): string {
  return (bytesPerSecond / 1e6).toFixed(0);
}

function label(p: Point): string {
  return `${p.op} ${p.size / MiB} MiB ×${p.depth}`;
}

/** The median of per-round ratios of `a` over `b`. */
function ratio(a: readonly number[], b: readonly number[]): number {
  return median(a.map((x, i) => x / (b[i] || 1)));
}

function table(stub: PointResult[], rgw: PointResult[] | undefined): string {
  const head = [
    "op",
    "object",
    "depth",
    "raw SDK MB/s",
    "raw SDK in a Worker",
    "s3 tier MB/s",
    "tier / raw",
    "tier / raw in a Worker",
  ];
  if (rgw) head.push("RGW: raw SDK MB/s", "RGW: s3 tier MB/s", "RGW: tier / raw");
  const t = new Table({ head, style: { head: [], border: [] } });
  for (const [i, s] of stub.entries()) {
    const row = [
      s.point.op,
      `${s.point.size / MiB} MiB`,
      String(s.point.depth),
      mbs(median(s.raw_bw_bytes)),
      mbs(median(s.raw_worker_bw_bytes)),
      mbs(median(s.tier_bw_bytes)),
      ratio(s.tier_bw_bytes, s.raw_bw_bytes).toFixed(2),
      ratio(s.tier_bw_bytes, s.raw_worker_bw_bytes).toFixed(2),
    ];
    const g = rgw?.[i];
    if (g) {
      row.push(
        mbs(median(g.raw_bw_bytes)),
        mbs(median(g.tier_bw_bytes)),
        ratio(g.tier_bw_bytes, g.raw_bw_bytes).toFixed(2),
      );
    }
    t.push(row);
  }
  return t.toString();
}

function positive(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    throw new ConfigError(flag, `"${text}" is not a positive integer`);
  }
  return n;
}

function durationMs(text: string, flag: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) throw new ConfigError(flag, `"${text}" is not a duration`);
  return ms;
}

async function main(args: string[]): Promise<void> {
  const program = new Command()
    .name("bench:s3")
    .description("the s3 tier against raw @aws-sdk/client-s3 calls, on a stub server and on RGW")
    .option("--endpoint <url>", "S3 server to measure too (default: $TIERBENCH_S3_ENDPOINT)")
    .option("--bucket <name>", "its bucket (default: $TIERBENCH_S3_BUCKET, else tierbench)")
    .option("--runtime <seconds>", "measured time per run", "3")
    .option("--ramp <seconds>", "warm-up per run, excluded", "1")
    .option("--rounds <n>", "rounds on the stub; each measures every point with each measurer", "3")
    .option("--rgw-rounds <n>", "rounds on the S3 server", "1")
    .option("--quick", "1 s runs after a 0.5 s ramp", false)
    .option("--output <file>", "raw figures as JSON (default results/s3-ceiling-<time>.json)")
    .exitOverride()
    .configureOutput({ outputError: () => {} });
  await program.parseAsync(args, { from: "user" });
  const o = program.opts();
  const timing: Timing = o.quick
    ? { runtimeMs: 1000, rampMs: 500 }
    : { runtimeMs: durationMs(o.runtime, "runtime"), rampMs: durationMs(o.ramp, "ramp") };
  const rounds = positive(o.rounds, "rounds");
  const rgwRounds = positive(o.rgwRounds, "rgw-rounds");
  const endpoint = o.endpoint ?? Deno.env.get("TIERBENCH_S3_ENDPOINT");
  const bucket = o.bucket ?? Deno.env.get("TIERBENCH_S3_BUCKET") ?? "tierbench";
  const say = (line: string) => console.error(`bench:s3: ${line}`);
  if (!endpoint) say(`no S3 server configured, measuring the stub only: ${CEPH_HINT}`);
  if (!Deno.env.get("AWS_ACCESS_KEY_ID")) {
    // The stub ignores signatures, but the SDK signs every request.
    Deno.env.set("AWS_ACCESS_KEY_ID", "TIERBENCHSTUBKEY");
    Deno.env.set("AWS_SECRET_ACCESS_KEY", "tierbench-stub-secret");
  }

  const stub = await startStubProcess();
  let stubResults: PointResult[];
  let rgwResults: PointResult[] | undefined;
  try {
    say(`stub server at ${stub.endpoint}; ${POINTS.length} points × ${rounds} round(s)`);
    stubResults = await measure(
      { label: "stub", endpoint: stub.endpoint, bucket: "bench" },
      timing,
      rounds,
      true,
      say,
    );
  } finally {
    await stub.stop();
  }
  if (endpoint) {
    rgwResults = await measure({ label: "RGW", endpoint, bucket }, timing, rgwRounds, false, say);
  }

  console.log(table(stubResults, rgwResults));
  const summary = (what: string, ratios: number[]) => {
    const worst = Math.min(...ratios);
    console.log(
      `s3 tier / ${what} on the stub server: lowest ${worst.toFixed(2)}, median ` +
        `${median(ratios).toFixed(2)} (target ≥ ${TARGET}: ${worst >= TARGET ? "met" : "NOT met"})`,
    );
  };
  summary("raw SDK", stubResults.map((r) => ratio(r.tier_bw_bytes, r.raw_bw_bytes)));
  summary(
    "raw SDK in a Worker",
    stubResults.map((r) => ratio(r.tier_bw_bytes, r.raw_worker_bw_bytes)),
  );
  const time = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "Z");
  const output = o.output ??
    fileURLToPath(new URL(`../results/s3-ceiling-${time}.json`, import.meta.url));
  const doc = {
    schema: "tierbench/s3-ceiling@1",
    host: hostFacts(),
    timing,
    rounds,
    rgw_rounds: rgwRounds,
    target: TARGET,
    stub: stubResults,
    ...(rgwResults
      ? { rgw: { endpoint: redactSecrets(endpoint ?? ""), bucket, points: rgwResults } }
      : {}),
  };
  await Deno.mkdir(new URL("../results", import.meta.url), { recursive: true });
  await Deno.writeTextFile(output, JSON.stringify(doc, null, 2) + "\n");
  console.log(`results: ${output}`);
}

if (import.meta.main) {
  try {
    await main(Deno.args);
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode !== 0) {
        console.error(`bench:s3: ${e.message.replace(/^error: /, "")}`);
        Deno.exit(2);
      }
      Deno.exit(0);
    }
    console.error(`bench:s3: ${redactSecrets(e instanceof Error ? e.message : String(e))}`);
    Deno.exit(e instanceof ConfigError ? 2 : 1);
  }
}
