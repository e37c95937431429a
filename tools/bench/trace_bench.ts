/**
 * `deno task bench:trace`: tierbench's trace replay against fio, on tmpfs.
 * Each case lays a file out, records fio reading it under strace (`trace
 * record`), then takes turns — fio first in odd rounds, the replay first in
 * even ones — running fio's job again and replaying its trace at `--speed
 * max` onto a tmpfs directory, each as its own process. fio's file is
 * written afresh before each of its runs, as the replay lays out its own
 * before each (a page read for the first time since it was written costs the
 * kernel more). It prints, per case, each tool's median bandwidth, the
 * median of the per-round ratios replay/fio (target: within 10 %), the CPU
 * time per request of each while it did I/O (fio's usr + sys, the replay's
 * whole process while its threads ran) and the load average before and
 * after.
 *
 * `--ops N` instead records one fio job of at least N 4 KiB random reads
 * (whole passes over 1 GiB), replays it, and prints the trace's size and
 * the peak RSS of the recording and of the replay — the replay once as is
 * and once with V8's old space held to 64 MiB (what it needs, apart from
 * how far V8 lets its heap grow before collecting) — with a tenth of N
 * beside them, to show memory stays flat.
 *
 * ```sh
 * deno task bench:trace                       # 5 rounds of both cases
 * deno task bench:trace --rounds 3 --cases psync
 * deno task bench:trace --ops 10000000        # flat memory over 10 M ops
 * ```
 *
 * Everything lives in `/dev/shm/tierbench-trace-bench-<random>` (traces in
 * `DIR/…` with `--dir` for the large runs), removed at the end and on
 * failure. Raw figures go to `results/trace-bench-<time>.json`.
 *
 * @module
 */

import { Command } from "@commander-js/extra-typings";
import Table from "cli-table3";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { median } from "../../core/stats.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MAIN = join(ROOT, "main.ts");
const MIB = 1 << 20;

/** One case: a fio job reading a file. */
interface Case {
  readonly name: string;
  readonly fio: readonly string[];
  readonly size: string;
}

const CASES: Record<string, Case> = {
  libaio: {
    name: "libaio 1 MiB × 8 O_DIRECT, sequential reads",
    fio: ["--rw=read", "--bs=1m", "--iodepth=8", "--ioengine=libaio", "--direct=1"],
    size: "2g",
  },
  psync: {
    name: "psync 4 KiB random reads",
    fio: ["--rw=randread", "--bs=4k", "--ioengine=psync"],
    size: "2g",
  },
};

/** A process run under /usr/bin/time: its stdout, CPU seconds and peak RSS. */
interface Ran {
  readonly stdout: string;
  readonly cpuS: number;
  readonly peakRssBytes: number;
}

async function run(cmd: string[], quietStdout = false): Promise<Ran> {
  const out = await new Deno.Command("/usr/bin/time", {
    args: ["-f", "TIME %U %S %M", ...cmd],
    stdout: quietStdout ? "null" : "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  const m = /TIME ([\d.]+) ([\d.]+) (\d+)\s*$/.exec(err);
  if (!out.success || !m) {
    throw new Error(`${cmd.slice(0, 4).join(" ")} … failed: ${err.trim().split("\n").at(-1)}`);
  }
  return {
    stdout: quietStdout ? "" : new TextDecoder().decode(out.stdout),
    cpuS: Number(m[1]) + Number(m[2]),
    peakRssBytes: Number(m[3]) * 1024,
  };
}

const tierbench = (args: string[]) => [Deno.execPath(), "run", "--allow-all", MAIN, ...args];
/** `trace record` of fio running `job`, keeping the files under `data`, into `trace`. */
const recordFio = (trace: string, data: string, job: string[]) =>
  tierbench([
    "trace",
    "record",
    "--output",
    trace,
    "--only",
    data,
    "--",
    "fio",
    ...job,
    "--output-format=terse",
  ]);

/** fio's read bandwidth, requests and CPU seconds (its own usr + sys over its runtime) of one job. */
async function fioRun(job: string[]): Promise<{ bw: number; ios: number; cpuS: number }> {
  const r = await run(["fio", ...job, "--output-format=json"]);
  const j = JSON.parse(r.stdout.slice(r.stdout.indexOf("{"))).jobs[0];
  const cpuS = ((j.usr_cpu + j.sys_cpu) / 100) * (j.read.runtime / 1000);
  return { bw: j.read.bw_bytes, ios: j.read.total_ios, cpuS };
}

/** The replay's read bandwidth, requests, CPU seconds while its threads ran, and peak RSS. */
async function replayRun(
  trace: string,
  map: string,
  out: string,
  v8Flags: string[] = [],
): Promise<{ bw: number; ios: number; cpuS: number; peakRssBytes: number }> {
  await Deno.remove(out).catch(() => {});
  const flags = v8Flags.length > 0 ? [`--v8-flags=${v8Flags.join(",")}`] : [];
  const r = await run(
    [
      Deno.execPath(),
      "run",
      "--allow-all",
      ...flags,
      MAIN,
      ...["trace", "replay", trace, "--map", map, "--quiet", "--output", out],
    ],
    true,
  );
  const t = JSON.parse(await Deno.readTextFile(out)).trace_replay;
  const read = t.tiers[0].read;
  const cpuS = ((t.cpu.usr_pct + t.cpu.sys_pct) / 100) * t.total.replayed_s;
  return { bw: read.bw_bytes, ios: read.total_ios, cpuS, peakRssBytes: r.peakRssBytes };
}

/** fio's file written afresh (unmeasured): the replay reads a file it has just laid out too. */
async function layOut(file: string, size: string): Promise<void> {
  await Deno.remove(file).catch(() => {});
  await run([
    "fio",
    "--name=layout",
    `--filename=${file}`,
    `--size=${size}`,
    "--rw=write",
    "--bs=1m",
    "--output-format=terse",
  ], true);
}

/** The load averages (1, 5, 15 min) from /proc/loadavg. */
function loadAvg(): number[] {
  return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).map(Number);
}

/** One case: layout, recording, rounds. */
async function runCase(c: Case, dir: string, rounds: number) {
  const data = join(dir, "data"), target = join(dir, "replay");
  await Deno.mkdir(data, { recursive: true });
  await Deno.mkdir(target, { recursive: true });
  const file = join(data, "f");
  const job = ["--name=j", `--filename=${file}`, `--size=${c.size}`, ...c.fio];
  await layOut(file, c.size);
  const trace = join(dir, "fio.trace.gz");
  await Deno.remove(trace).catch(() => {});
  await run(recordFio(trace, data, job), true);
  const map = `${data}=memory:${target}`;
  const rows: {
    fio: number;
    replay: number;
    ratio: number;
    fioCpuPerIo: number;
    replayCpuPerIo: number;
  }[] = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ["fio", "replay"] : ["replay", "fio"];
    let f = { bw: 0, ios: 1, cpuS: 0 }, p = { bw: 0, ios: 1, cpuS: 0, peakRssBytes: 0 };
    for (const who of order) {
      if (who === "fio") {
        // a file read for the first time since it was written costs the kernel more (its pages
        // go onto the active list): fio reads a fresh one, as the replay reads its fresh layout
        await layOut(file, c.size);
        f = await fioRun(job);
      } else p = await replayRun(trace, map, join(dir, "replay.json"));
    }
    rows.push({
      fio: f.bw,
      replay: p.bw,
      ratio: p.bw / f.bw,
      fioCpuPerIo: f.cpuS / f.ios,
      replayCpuPerIo: p.cpuS / p.ios,
    });
    console.error(
      `  ${c.name}, round ${r + 1}: fio ${(f.bw / MIB).toFixed(0)} MiB/s, replay ${
        (p.bw / MIB).toFixed(0)
      } MiB/s, ratio ${(p.bw / f.bw).toFixed(3)}`,
    );
  }
  return {
    case: c.name,
    rounds: rows,
    fio_mib_s: median(rows.map((x) => x.fio)) / MIB,
    replay_mib_s: median(rows.map((x) => x.replay)) / MIB,
    ratio: median(rows.map((x) => x.ratio)),
  };
}

/** The flat-memory run: N ops recorded and replayed, beside N / 10. */
async function flatMemory(ops: number, dir: string, traceDir: string) {
  const data = join(dir, "data"), target = join(dir, "replay");
  await Deno.mkdir(data, { recursive: true });
  await Deno.mkdir(target, { recursive: true });
  const file = join(data, "f");
  await layOut(file, "1g");
  const out = [];
  for (const n of [Math.round(ops / 10), ops]) {
    const job = [
      "--name=j",
      `--filename=${file}`,
      "--size=1g",
      "--rw=randread",
      "--bs=4k",
      "--ioengine=psync",
      // 1 GiB holds 262,144 blocks: as many whole passes over it as N needs
      `--loops=${Math.ceil(n / 262_144)}`,
    ];
    const trace = join(traceDir, `fio-${n}.trace.gz`);
    await Deno.remove(trace).catch(() => {});
    const t0 = performance.now();
    const rec = await run(recordFio(trace, data, job), true);
    const recS = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    const rep = await replayRun(trace, `${data}=memory:${target}`, join(dir, "replay.json"));
    const repS = (performance.now() - t1) / 1000;
    // the same with V8's old space held to 64 MiB: what the replay needs, not what V8 lets grow
    const capped = await replayRun(trace, `${data}=memory:${target}`, join(dir, "replay.json"), [
      "--max-old-space-size=64",
    ]);
    const row = {
      ops: n,
      replayed_reads: rep.ios,
      trace_bytes: (await Deno.stat(trace)).size,
      record_s: recS,
      record_peak_rss_mib: rec.peakRssBytes / MIB,
      replay_s: repS,
      replay_peak_rss_mib: rep.peakRssBytes / MIB,
      replay_capped_peak_rss_mib: capped.peakRssBytes / MIB,
      replay_capped_reads: capped.ios,
    };
    console.error(`  ${n} ops: ${JSON.stringify(row)}`);
    out.push(row);
    await Deno.remove(trace);
  }
  return out;
}

if (import.meta.main) {
  const cmd = new Command("bench:trace")
    .option("--rounds <n>", "rounds per case", "5")
    .option(
      "--cases <list>",
      `cases: ${Object.keys(CASES).join(", ")}`,
      Object.keys(CASES).join(","),
    )
    .option("--ops <n>", "instead: record and replay N 4 KiB reads, beside N/10, for peak RSS")
    .option("--dir <dir>", "where the --ops traces go (default: the scratch on /dev/shm)")
    .parse(Deno.args, { from: "user" });
  const o = cmd.opts();
  const dir = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "tierbench-trace-bench-" });
  const stop = () => Deno.removeSync(dir, { recursive: true });
  Deno.addSignalListener("SIGINT", () => {
    stop();
    Deno.exit(1);
  });
  try {
    let doc: Record<string, unknown>;
    if (o.ops !== undefined) {
      const traceDir = o.dir === undefined
        ? dir
        : await Deno.makeTempDir({ dir: o.dir, prefix: "tierbench-trace-bench-" });
      try {
        const rows = await flatMemory(Number(o.ops), dir, traceDir);
        const t = new Table({
          head: [
            "ops",
            "replayed reads",
            "trace",
            "record s",
            "record peak RSS",
            "replay s",
            "replay peak RSS",
            "… old space ≤ 64 MiB",
          ],
        });
        for (const r of rows) {
          t.push([
            r.ops.toLocaleString("en-US"),
            r.replayed_reads.toLocaleString("en-US"),
            `${(r.trace_bytes / MIB).toFixed(1)} MiB`,
            r.record_s.toFixed(1),
            `${r.record_peak_rss_mib.toFixed(0)} MiB`,
            r.replay_s.toFixed(1),
            `${r.replay_peak_rss_mib.toFixed(0)} MiB`,
            `${r.replay_capped_peak_rss_mib.toFixed(0)} MiB`,
          ]);
        }
        console.log(t.toString());
        const [small, large] = rows;
        console.log(
          `peak RSS at ${large!.ops} ops / at ${small!.ops}: record ${
            (large!.record_peak_rss_mib / small!.record_peak_rss_mib).toFixed(2)
          }, replay ${(large!.replay_peak_rss_mib / small!.replay_peak_rss_mib).toFixed(2)}, ` +
            `replay with V8's old space ≤ 64 MiB ${
              (large!.replay_capped_peak_rss_mib / small!.replay_capped_peak_rss_mib).toFixed(2)
            }`,
        );
        doc = { kind: "flat-memory", rows };
      } finally {
        if (traceDir !== dir) await Deno.remove(traceDir, { recursive: true });
      }
    } else {
      const loadBefore = loadAvg();
      const results = [];
      for (const name of o.cases.split(",")) {
        const c = CASES[name.trim()];
        if (!c) throw new Error(`--cases: no case "${name}" (${Object.keys(CASES).join(", ")})`);
        results.push(await runCase(c, join(dir, name), Number(o.rounds)));
        await Deno.remove(join(dir, name), { recursive: true });
      }
      const t = new Table({
        head: [
          "case (tmpfs)",
          "fio MiB/s",
          "replay MiB/s",
          "replay/fio",
          "≥ 0.9 × fio",
          "CPU µs/req fio",
          "replay",
        ],
      });
      for (const r of results) {
        t.push([
          r.case,
          r.fio_mib_s.toFixed(0),
          r.replay_mib_s.toFixed(0),
          r.ratio.toFixed(3),
          r.ratio >= 0.9 ? "yes" : "no",
          (median(r.rounds.map((x) => x.fioCpuPerIo)) * 1e6).toFixed(2),
          (median(r.rounds.map((x) => x.replayCpuPerIo)) * 1e6).toFixed(2),
        ]);
      }
      console.log(t.toString());
      const loadAfter = loadAvg();
      console.log(
        `load average (1, 5, 15 min): ${loadBefore.join(" ")} before, ${
          loadAfter.join(" ")
        } after; ` +
          `${navigator.hardwareConcurrency} CPUs`,
      );
      doc = { kind: "replay-vs-fio", load_before: loadBefore, load_after: loadAfter, results };
    }
    const out = join(
      ROOT,
      "results",
      `trace-bench-${new Date().toISOString().replace(/[:.]/g, "-")}.json`,
    );
    await Deno.mkdir(join(ROOT, "results"), { recursive: true });
    await Deno.writeTextFile(out, JSON.stringify(doc, null, 2) + "\n");
    console.log(`figures: ${out}`);
  } catch (e) {
    console.error(`bench:trace: ${e instanceof Error ? e.message : e}`);
    Deno.exitCode = 1;
  } finally {
    stop();
  }
}
