/**
 * `deno task bench:s3`: how close does the s3 tier come to the loopback
 * ceiling? GET and PUT of 1 MiB and 8 MiB objects at depth 8 and of 64 KiB
 * objects at depth 32, each measured against a trivial local server that
 * discards uploads and serves fixed bytes (tools/services/s3_stub.ts, its own
 * process) by:
 *
 * - raw unsigned HTTP through Deno's fetch (tools/bench/_s3_raw.ts): the ceiling
 *   of HTTP on this machine, the figure every other is divided by
 *   (`ratio_to_raw`);
 * - @aws-sdk/client-s3 as it comes (its node:http handler, PUT bodies
 *   hashed for the signature), and the same SDK with its fetch handler: the
 *   candidates for the tier's HTTP path;
 * - tierbench's s3 tier (`runJob`, as `tierbench run` does).
 *
 * Each raw loop runs in a Worker, as tierbench's jobs do. Measurers take
 * turns, the order rotating each round; figures are medians over rounds.
 * Besides bandwidth, each row carries each measurer's CPU per request: the
 * CPU time of this whole process (the stub has its own) over the measured
 * window divided by the requests completed in it, and its ratio to raw
 * HTTP's; on a loaded machine that figure moves less than bandwidth. A
 * progress line on stderr names the point, round and measurer running.
 * Targets: the tier at ≥ 0.8× raw in every row and ≥ 1.5 GB/s at 1 MiB × 8.
 * The SDK and the tier on an S3 server (the local Ceph's RGW) follow, for
 * the record, with the CPU the server's processes (radosgw, ceph-osd) used
 * meanwhile: near the machine's cores, the server is the limit.
 *
 * ```sh
 * eval "$(deno task -q ceph:up)"      # optional: RGW for the last rows
 * deno task bench:s3 [--runtime 3] [--ramp 1] [--rounds 3] [--quick]
 * deno task bench:s3 --endpoint http://127.0.0.1:7480 --bucket tierbench
 * ```
 *
 * Objects go under `BUCKET/tierbench-s3-ceiling-<id>/`, deleted at the end.
 * Raw figures go to `results/s3-ceiling-<time>.json`.
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import { startStubProcess } from "../services/s3_stub.ts";
import Table from "cli-table3";
import { parseJobOptions } from "../../core/config.ts";
import { ConfigError } from "../../core/errors.ts";
import { hostFacts } from "../../core/host.ts";
import { runJob } from "../../bench/runner.ts";
import { redactSecrets } from "../../core/secrets.ts";
import { parseDuration } from "../../core/units.ts";
import { median, medianRatio } from "../../core/stats.ts";
import { S3Tier } from "../../tiers/s3.ts";
import { newRunId } from "../../tiers/scratch.ts";
import { deletePrefix } from "../../tiers/s3_scratch.ts";
import { newS3Client } from "../../tiers/s3_client.ts";
import type { RawClient, RawFigures, RawLoopOptions } from "./_s3_raw.ts";
import { resultsPath, writeResults } from "./_results.ts";

const MiB = 1024 ** 2;
const KiB = 1024;
const RAW_WORKER = new URL("./_s3_raw_worker.ts", import.meta.url);
const REGION = "us-east-1";
/** Objects each GET point reads over (and lays out first). */
const GET_OBJECTS = 8;
/** Least acceptable tier / raw in every row. */
const TARGET_RATIO = 0.8;
/** Least acceptable tier bandwidth at 1 MiB × 8, bytes/s. */
const TARGET_BW = 1.5e9;
const CEPH_HINT = 'start the local Ceph with `eval "$(deno task -q ceph:up)"` ' +
  "(it exports TIERBENCH_S3_ENDPOINT, TIERBENCH_S3_BUCKET and the keys), or pass --endpoint and --bucket";
/** The server's processes whose CPU the RGW rows report. */
const SERVER_PROCESSES = ["radosgw", "ceph-osd"];

/** One measured pattern. */
interface Point {
  readonly op: "GET" | "PUT";
  readonly size: number;
  readonly depth: number;
}

const POINTS: Point[] = (["GET", "PUT"] as const).flatMap((op) => [
  { op, size: MiB, depth: 8 },
  { op, size: 8 * MiB, depth: 8 },
  { op, size: 64 * KiB, depth: 32 },
]);

/** Who makes the requests: a raw loop's client, or the s3 tier. */
type Measurer = RawClient | "tier";

/** What each measurer is called in the table. */
const NAMES: Record<Measurer, string> = {
  http: "raw HTTP",
  sdk: "SDK (node:http)",
  "sdk-fetch": "SDK (fetch)",
  tier: "s3 tier",
};

/** Where requests go. */
interface Server {
  readonly label: string;
  readonly endpoint: string;
  readonly bucket: string;
  /** The measurers it can serve (a real server refuses unsigned requests). */
  readonly measurers: readonly Measurer[];
}

/** Measurement window. */
interface Timing {
  readonly runtimeMs: number;
  readonly rampMs: number;
}

/** One point on one server: bytes per second of each measurer, one value per round. */
interface PointResult {
  op: Point["op"];
  size_bytes: number;
  depth: number;
  server: string;
  bw_bytes: Partial<Record<Measurer, number[]>>;
  /** Median over rounds of each measurer's bandwidth. */
  bw_median: Partial<Record<Measurer, number>>;
  /**
   * CPU time of the bench's whole process over each round's measured window
   * divided by the requests completed in it, ns, per measurer (the stub runs
   * in a process of its own, so this is the client's alone).
   */
  cpu_ns_per_request: Partial<Record<Measurer, number[]>>;
  /** Median over rounds of each measurer's CPU per request. */
  cpu_median_ns: Partial<Record<Measurer, number>>;
  /** Median over rounds of each measurer's CPU per request over raw HTTP's (stub only). */
  cpu_ratio_to_raw: Partial<Record<Measurer, number>>;
  /**
   * Median over rounds of each measurer's bandwidth over raw HTTP's (stub only); rounds where
   * raw moved nothing are left out, and the ratio is absent when none is left.
   */
  ratio_to_raw: Partial<Record<Measurer, number>>;
  /** Requests the tier retried. */
  tier_retries: number[];
  /** CPU the server's processes used while the tier ran, in cores (RGW only). */
  server_cores?: number[];
}

/** A raw loop in a Worker of its own, as a tierbench job runs. */
function rawLoopInWorker(o: RawLoopOptions): Promise<RawFigures> {
  const w = new Worker(RAW_WORKER, { type: "module", name: `bench:s3 ${o.client}` });
  return new Promise<RawFigures>((resolve, reject) => {
    w.onmessage = (e: MessageEvent<RawFigures | { error: string }>) => {
      w.terminate();
      if ("error" in e.data) reject(new Error(e.data.error));
      else resolve(e.data);
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
): Promise<RawFigures & { retries: number }> {
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
  // the whole process's CPU over the measured window, as the raw loops count theirs
  const cpuNs = ((r.cpu.usr_pct + r.cpu.sys_pct) / 100) * d.runtime * 1e6;
  return {
    bw: d.bw_bytes,
    cpuNsPerRequest: d.total_ios > 0 ? cpuNs / d.total_ios : NaN,
    retries: r.jobs.reduce((n, j) => n + j.retries, 0),
  };
}

/** CPU seconds the processes named `names` have used so far (utime + stime of each). */
async function processCpuSeconds(names: readonly string[]): Promise<number> {
  let ticks = 0;
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${e.name}/stat`);
      const close = stat.lastIndexOf(")");
      if (!names.includes(stat.slice(stat.indexOf("(") + 1, close))) continue;
      const f = stat.slice(close + 2).split(" ");
      ticks += Number(f[11]) + Number(f[12]); // utime, stime (fields 14 and 15)
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks / 100; // USER_HZ
}

/** Runs `point` once with `m`; adds its figure to `res`. */
async function measureOnce(
  m: Measurer,
  res: PointResult,
  raw: Omit<RawLoopOptions, "client">,
  run: { server: Server; tier: S3Tier; point: Point; timing: Timing },
): Promise<void> {
  const figures = (res.bw_bytes[m] ??= []);
  const cpu = (res.cpu_ns_per_request[m] ??= []);
  if (m !== "tier") {
    const f = await rawLoopInWorker({ ...raw, client: m });
    figures.push(f.bw);
    cpu.push(f.cpuNsPerRequest);
    return;
  }
  const cpu0 = res.server_cores ? await processCpuSeconds(SERVER_PROCESSES) : 0;
  const t0 = performance.now();
  const t = await tierLoop(run.server, run.tier, run.point, run.timing);
  if (res.server_cores) {
    const cpu = (await processCpuSeconds(SERVER_PROCESSES)) - cpu0;
    res.server_cores.push(cpu / ((performance.now() - t0) / 1000));
  }
  figures.push(t.bw);
  cpu.push(t.cpuNsPerRequest);
  res.tier_retries.push(t.retries);
}

/** The medians and ratios of a point's rounds. */
function summarize(res: PointResult): void {
  for (const [m, v] of Object.entries(res.bw_bytes) as [Measurer, number[]][]) {
    res.bw_median[m] = median(v);
    const raw = res.bw_bytes.http;
    // A round whose raw loop moved nothing in its window gives no ratio (none at all: absent).
    const ratio = raw === undefined ? NaN : medianRatio(v, raw);
    if (!Number.isNaN(ratio)) res.ratio_to_raw[m] = ratio;
  }
  for (const [m, v] of Object.entries(res.cpu_ns_per_request) as [Measurer, number[]][]) {
    const known = v.filter((x) => !Number.isNaN(x));
    if (known.length > 0) res.cpu_median_ns[m] = median(known);
    const raw = res.cpu_ns_per_request.http ?? [];
    // rounds where either figure is missing (nothing completed) give no ratio
    const both = v.flatMap((x, i) => Number.isNaN(x) || Number.isNaN(raw[i] ?? NaN) ? [] : [i]);
    const ratio = medianRatio(both.map((i) => v[i]!), both.map((i) => raw[i]!));
    if (Number.isFinite(ratio)) res.cpu_ratio_to_raw[m] = ratio;
  }
}

/**
 * Measures every point on one server, the measurers taking turns (the order
 * rotates each round, so drift falls on all alike); deletes what it wrote.
 */
async function measure(
  server: Server,
  timing: Timing,
  rounds: number,
  say: (line: string) => void,
): Promise<PointResult[]> {
  const progress = progressLine(say);
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
        op: point.op,
        size_bytes: point.size,
        depth: point.depth,
        server: server.label,
        bw_bytes: {},
        bw_median: {},
        ratio_to_raw: {},
        cpu_ns_per_request: {},
        cpu_median_ns: {},
        cpu_ratio_to_raw: {},
        tier_retries: [],
        ...(server.label === "stub" ? {} : { server_cores: [] }),
      };
      const raw = {
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
      const ms = server.measurers;
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < ms.length; i++) {
          const m = ms[(round + i) % ms.length]!;
          progress(
            `${server.label}: ${label(point)} (point ${results.length + 1}/${POINTS.length}), ` +
              `round ${round + 1}/${rounds}: ${NAMES[m]}`,
          );
          await measureOnce(m, res, raw, {
            server,
            tier,
            point,
            timing,
          });
          await deletePrefix(cleanup, loc, server.bucket, `${base}/raw/put/`);
        }
      }
      summarize(res);
      progress("");
      say(
        `${server.label}: ${label(point)}: ` + ms.map((m) =>
          `${NAMES[m]} ${mbs(res.bw_median[m]!)}`
        ).join(", ") + " MB/s",
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

/**
 * Where a run is, on stderr: on a terminal one line rewritten in place
 * (`""` clears it), elsewhere a line each through `say`.
 */
function progressLine(say: (line: string) => void): (text: string) => void {
  if (!Deno.stderr.isTerminal()) return (text) => text === "" || say(text);
  const encoder = new TextEncoder();
  return (text) =>
    Deno.stderr.writeSync(encoder.encode(`\r\x1b[K${text === "" ? "" : `bench:s3: ${text}`}`));
}

function mbs(bytesPerSecond: number): string {
  return (bytesPerSecond / 1e6).toFixed(0);
}

/** The measurers whose CPU per request the table shows (the JSON has every one's). */
function cpuMeasurers(measurers: readonly Measurer[]): Measurer[] {
  return measurers.filter((m) => m === "http" || m === "tier");
}

function us(ns: number | undefined): string {
  return ns === undefined ? "–" : (ns / 1000).toFixed(0);
}

function label(p: { op: string; size: number; depth: number }): string {
  const size = p.size >= MiB ? `${p.size / MiB} MiB` : `${p.size / KiB} KiB`;
  return `${p.op} ${size} ×${p.depth}`;
}

/** Whether a stub row meets its targets. */
function met(r: PointResult): boolean {
  const ratio = r.ratio_to_raw.tier ?? 0;
  const bw = r.bw_median.tier ?? 0;
  return ratio >= TARGET_RATIO && (r.size_bytes !== MiB || r.depth !== 8 || bw >= TARGET_BW);
}

function table(rows: PointResult[], measurers: readonly Measurer[]): string {
  const stub = rows[0]?.server === "stub";
  const head = [
    "server",
    "op",
    ...measurers.map((m) => `${NAMES[m]} MB/s`),
    ...(stub ? measurers.filter((m) => m !== "http").map((m) => `${NAMES[m]} / raw`) : []),
    ...cpuMeasurers(measurers).map((m) => `${NAMES[m]} CPU µs/req`),
    ...(stub ? ["s3 tier CPU / raw", "met"] : ["server CPU (cores)", "retries"]),
  ];
  const t = new Table({ head, style: { head: [], border: [] } });
  for (const r of rows) {
    const ratios = measurers.filter((m) => m !== "http").map((m) =>
      r.ratio_to_raw[m]?.toFixed(2) ?? "–"
    );
    t.push([
      r.server,
      label({ op: r.op, size: r.size_bytes, depth: r.depth }),
      ...measurers.map((m) => mbs(r.bw_median[m] ?? 0)),
      ...(stub ? ratios : []),
      ...cpuMeasurers(measurers).map((m) => us(r.cpu_median_ns[m])),
      ...(stub ? [r.cpu_ratio_to_raw.tier?.toFixed(2) ?? "–", met(r) ? "yes" : "NO"] : [
        median(r.server_cores ?? [0]).toFixed(2),
        String(r.tier_retries.reduce((a, b) => a + b, 0)),
      ]),
    ]);
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

const STUB_MEASURERS: readonly Measurer[] = ["http", "sdk", "sdk-fetch", "tier"];
const SERVER_MEASURERS: readonly Measurer[] = ["sdk", "tier"];

/** The stub's rows, the stub started for them and stopped after. */
async function onStub(timing: Timing, rounds: number, say: (l: string) => void) {
  const stub = await startStubProcess();
  try {
    say(`stub server at ${stub.endpoint}; ${POINTS.length} points × ${rounds} round(s)`);
    const server = { label: "stub", endpoint: stub.endpoint, bucket: "bench" };
    return await measure({ ...server, measurers: STUB_MEASURERS }, timing, rounds, say);
  } finally {
    await stub.stop();
  }
}

const program = new Command()
  .name("bench:s3")
  .description(
    "the s3 tier against raw HTTP and raw @aws-sdk/client-s3, on a stub server and on RGW",
  )
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

async function main(args: string[]): Promise<void> {
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
  const stub = await onStub(timing, rounds, say);
  const rgw = endpoint
    ? await measure(
      { label: "RGW", endpoint, bucket, measurers: SERVER_MEASURERS },
      timing,
      rgwRounds,
      say,
    )
    : undefined;
  console.log(table(stub, STUB_MEASURERS));
  if (rgw) console.log(table(rgw, SERVER_MEASURERS));
  const missed = stub.filter((r) => !met(r));
  console.log(
    `s3 tier on the stub: ≥ ${TARGET_RATIO}× raw HTTP in every row, ≥ ${TARGET_BW / 1e9} GB/s ` +
      `at 1 MiB ×8: ${
        missed.length === 0
          ? "met"
          : `NOT met (${
            missed.map((r) => label({ op: r.op, size: r.size_bytes, depth: r.depth })).join(", ")
          })`
      }`,
  );
  const output = resultsPath("s3-ceiling", o.output);
  const doc = {
    schema: "tierbench/s3-ceiling@2",
    host: hostFacts(),
    load_average: Deno.loadavg(),
    timing,
    rounds,
    rgw_rounds: rgwRounds,
    targets: { ratio_to_raw: TARGET_RATIO, bw_bytes_1m_x8: TARGET_BW },
    stub,
    ...(rgw ? { rgw: { endpoint: redactSecrets(endpoint ?? ""), bucket, points: rgw } } : {}),
  };
  await writeResults(output, doc);
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
