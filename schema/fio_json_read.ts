/**
 * fio's JSON read back (`--output-format=json` and `json+`, fio's own and
 * tierbench's `fio-json`): each job as a run of a
 * {@linkcode ResultDocument}, so `compare`, `report` and `plan --profile`
 * put a fio result beside a tierbench one.
 *
 * What fio's document says is carried over: the options (its `global
 * options` and each job's `job options` over fio's defaults), bytes, I/Os,
 * bandwidth, IOPS, runtime, the latency summaries with clat's percentiles,
 * CPU, and with json+ the clat histogram (its bins into an HDR histogram).
 * For a synchronous engine (psync, sync, null) fio's lat is its clat, so the
 * percentiles count as lat's too; an asynchronous engine's lat has none
 * unless fio wrote them (lat_percentiles). A document from `fio --client`
 * gives its "All clients" entries. fio names no tier: a job on
 * `ioengine=null` is on the null tier, every other on a file tier (its
 * `directory`, or the current one); a job file's `tier` key, if tierbench
 * wrote one, says which. fio names no host either: the host is this one's,
 * marked so in `read_from`.
 *
 * @module
 */

import { FIO_OPTION_FACTS } from "../core/fio_option_table.ts";
import { readFioValue } from "../core/fio_values.ts";
import { hostFacts } from "../core/host.ts";
import {
  type EncodedLatency,
  encodeHistogram,
  LATENCY_KINDS,
  type LatencyStats,
  newHistogram,
} from "../core/recorder.ts";
import type { DirectionResult, ResultDocument, RunResult } from "./result.ts";
import { RESULT_SCHEMA } from "./result.ts";

type Obj = Record<string, unknown>;

/** Whether `json` is a fio JSON document (fio's own or tierbench's fio-json). */
export function isFioJson(json: unknown): boolean {
  const d = json as Obj | null;
  return d !== null && typeof d === "object" && typeof d["fio version"] === "string" &&
    (Array.isArray(d.jobs) || Array.isArray(d.client_stats));
}

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** fio's value of option `name` among `opts` (or its default), read as fio reads it. */
function option(opts: Record<string, string>, name: string, slot = 0): number {
  const facts = FIO_OPTION_FACTS.find((o) => o.name === name && !o.engine)!;
  const text = opts[name] ?? (facts.alias ? opts[facts.alias] : undefined) ?? facts.def;
  if (text === undefined) return 0;
  try {
    const v = readFioValue(facts, text, opts.kb_base === "1000" ? 1000 : 1024);
    if (v.kind === "numbers") return v.slots[slot] ?? v.slots[0] ?? 0;
    if (v.kind === "flag") return v.value;
    return 0;
  } catch {
    return 0;
  }
}

function word(opts: Record<string, string>, name: string, def: string): string {
  const v = opts[name] ?? (name === "rw" ? opts.readwrite : undefined);
  return (v ?? def).split(":")[0]!.trim();
}

const SYNC_ENGINES = ["psync", "sync", "vsync", "pvsync", "pvsync2", "null", "mmap"];

function stats(l: Obj | undefined): LatencyStats {
  const p = l?.percentile;
  return {
    min: num(l?.min),
    max: num(l?.max),
    mean: num(l?.mean),
    stddev: num(l?.stddev),
    N: num(l?.N),
    percentile: p && typeof p === "object" ? p as Record<string, number> : {},
  };
}

/** An HDR histogram of json+ `bins` ({"<ns>": count}), encoded as the results keep them. */
function binsHistogram(bins: unknown): string | undefined {
  if (!bins || typeof bins !== "object") return undefined;
  const h = newHistogram();
  for (const [k, c] of Object.entries(bins as Record<string, number>)) {
    const v = Number(k);
    if (Number.isFinite(v) && v >= 1 && num(c) > 0) h.recordValueWithCount(Math.round(v), num(c));
  }
  return h.totalCount > 0 ? encodeHistogram(h) : undefined;
}

function direction(d: Obj | undefined, sync: boolean): DirectionResult {
  const clat = stats(d?.clat_ns as Obj);
  const lat = stats(d?.lat_ns as Obj);
  if (sync && Object.keys(lat.percentile).length === 0) lat.percentile = clat.percentile;
  const runtime = num(d?.runtime);
  const io = num(d?.io_bytes);
  const span = { runtime, io_bytes: io, bw_bytes: num(d?.bw_bytes), iops: num(d?.iops) };
  const out: DirectionResult = {
    io_bytes: io,
    bw_bytes: num(d?.bw_bytes),
    iops: num(d?.iops),
    runtime,
    total_ios: num(d?.total_ios),
    lat_ns: lat,
    clat_ns: clat,
    slat_ns: stats(d?.slat_ns as Obj),
    first_done: span,
    last_done: span,
  };
  const hist = binsHistogram((d?.clat_ns as Obj | undefined)?.bins);
  if (hist) {
    const empty = encodeHistogram(newHistogram());
    const h = Object.fromEntries(LATENCY_KINDS.map((k) => [k, empty])) as EncodedLatency;
    h.clat = hist;
    if (sync) h.lat = hist;
    out.hist = h;
  }
  return out;
}

/** The tier a fio job ran on, as tierbench names tiers. */
function tierOf(opts: Record<string, string>): string {
  const own = opts.tier?.trim();
  if (own && (own.includes(":") || own.startsWith("s3"))) return own;
  if (word(opts, "ioengine", "psync") === "null") return "null:";
  const dir = opts.directory?.split(":")[0]?.trim();
  const file = opts.filename?.split(":")[0]?.trim();
  const path = dir || (file?.startsWith("/") ? file.slice(0, file.lastIndexOf("/")) || "/" : ".");
  return `${own === "memory" || own === "pfs" ? own : "file"}:${path}`;
}

/** One fio job entry as a run. */
function runOf(job: Obj, global: Record<string, string>): RunResult {
  const opts = { ...global, ...(job["job options"] as Record<string, string> ?? {}) };
  const engine = word(opts, "ioengine", "psync");
  const sync = SYNC_ENGINES.includes(engine);
  const rw = word(opts, "rw", "read");
  const tier = tierOf(opts);
  const read = direction(job.read as Obj, sync);
  const write = direction(job.write as Obj, sync);
  const runtimeUs = option(opts, "runtime");
  const timeBased = "time_based" in opts && opts.time_based !== "0" && runtimeUs > 0;
  const size = option(opts, "size");
  const kind = tier.startsWith("s3") ? "s3" : tier.slice(0, tier.indexOf(":"));
  return {
    name: String(job.jobname ?? ""),
    status: num(job.error) === 0 ? "ok" : "failed",
    ...(num(job.error) !== 0 ? { error: `fio error ${num(job.error)}` } : {}),
    tier: {
      kind: kind as RunResult["tier"]["kind"],
      path: tier.slice(tier.indexOf(":") + 1),
      scratch_dir: "",
      direct: "not-applicable",
      alignment: 0,
    },
    options: {
      tier,
      rw: rw === "readwrite" ? "rw" : rw,
      rwmixread: option(opts, "rwmixread"),
      bs: option(opts, "bs", rw.includes("write") && !rw.includes("rw") ? 1 : 0),
      size: size > 0 ? size : read.io_bytes + write.io_bytes,
      io_size: option(opts, "io_size") || read.io_bytes + write.io_bytes,
      time_based: timeBased,
      runtime_ms: timeBased ? Math.round(runtimeUs / 1000) : null,
      ramp_ms: Math.round(option(opts, "ramp_time") / 1000),
      iodepth: sync ? 1 : Math.max(1, option(opts, "iodepth")),
      numjobs: Math.max(1, option(opts, "numjobs")),
      direct: option(opts, "direct") !== 0,
      engine: engine === "null" ? "noop" : engine,
      engine_impl: "fio",
      seed: option(opts, "randseed"),
      log_avg_msec: option(opts, "log_avg_msec"),
      nrfiles: Math.max(1, option(opts, "nrfiles")),
      file_layout: "files",
      end_fsync: option(opts, "end_fsync") !== 0,
      fio: opts,
    },
    ramp: { ms: Math.round(option(opts, "ramp_time") / 1000), excluded: true },
    read,
    write,
    timeseries: {
      interval_ms: 0,
      t_ms: [],
      read_bw_bytes: [],
      write_bw_bytes: [],
      read_iops: [],
      write_iops: [],
    },
    cpu: { usr_pct: num(job.usr_cpu), sys_pct: num(job.sys_cpu) },
    jobs: [{
      job: 0,
      read_bytes: read.io_bytes,
      write_bytes: write.io_bytes,
      end_ms: num(job.job_runtime),
      fsync_ms: 0,
      retries: 0,
    }],
  };
}

/**
 * fio's JSON document as a tierbench result document: each job a run (a
 * `fio --client` document: each "All clients" entry).
 *
 * @example
 * ```ts
 * import { fromFioJson } from "./fio_json_read.ts";
 * const doc = fromFioJson({
 *   "fio version": "fio-3.33", timestamp: 0, time: "", "global options": { bs: "4k" },
 *   jobs: [{ jobname: "r", error: 0, "job options": { rw: "randread", ioengine: "null" },
 *     read: { io_bytes: 4096, bw_bytes: 4096, iops: 1, runtime: 1000, total_ios: 1 },
 *     write: {} }],
 * }, "fio.json");
 * console.assert(doc.runs[0]!.options.bs === 4096 && doc.runs[0]!.tier.kind === "null");
 * ```
 */
export function fromFioJson(json: unknown, path: string): ResultDocument {
  const d = json as Obj;
  const global = (d["global options"] as Record<string, string>) ?? {};
  const clients = Array.isArray(d.client_stats) ? d.client_stats as Obj[] : [];
  const all = clients.filter((c) => c.jobname === "All clients");
  const entries = Array.isArray(d.jobs) ? d.jobs as Obj[] : all.length ? all : clients;
  const runs = entries.map((j) => runOf(j, global));
  const time = num(d.timestamp_ms) || num(d.timestamp) * 1000;
  const when = new Date(time || 0).toISOString();
  const version = String(d["fio version"]);
  const plus = entries.some((j) => ((j.read as Obj)?.clat_ns as Obj)?.bins !== undefined);
  return {
    schema: RESULT_SCHEMA,
    tool: { name: "tierbench", version: "", deno: "", peak_rss_bytes: 0 },
    run_id: `${version}-${time}`,
    kind: "run",
    started: when,
    finished: when,
    status: runs.some((r) => r.status !== "ok") ? "failed" : "ok",
    host: hostFacts(),
    config: { read_from: path },
    runs,
    read_from: {
      format: plus ? "fio-json+" : "fio-json",
      fio_version: version,
      host: "this machine's (fio's JSON names no host)",
    },
  };
}
