import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, withTempDir } from "../tests/_helpers.ts";
import {
  benchAcrossRun,
  cliOk,
  contentionRun,
  planRun,
  randrwRun,
  readDoc,
  replayRun,
  sweepDoc,
  workloadRun,
} from "../tests/_report_fixtures.ts";
import type { PlanDocument } from "../schema/plan.ts";
import type { ReportDocument } from "./document.ts";
import { type ChartSource, latencyTimeChart, reportCharts, sweepLatencyChart } from "./_charts.ts";
import { renderSvg } from "./_svg.ts";
import { reportTables } from "./tables.ts";

const MIB = 1024 * 1024;
const SCALING = join(ROOT, "tests", "testdata", "profiles", "scaling-pfs.json");

/** The leaf elements vega draws data marks as (axes and legends are `<g>` groups). */
const MARK = /<(?:path|rect|text|line|circle|image)\s[^>]*\brole="graphics-symbol"[^>]*>/g;

/** Every `<title>` directly after a data mark's opening tag, unescaped. */
function markTitles(svg: string): string[] {
  const out: string[] = [];
  for (const m of svg.matchAll(MARK)) {
    const after = svg.slice(m.index! + m[0].length);
    const t = /^<title>([^<]*)<\/title>/.exec(after);
    assert.ok(t, `a mark without a title: ${m[0].slice(0, 160)}`);
    out.push(
      t[1]!.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"')
        .replaceAll("&amp;", "&"),
    );
  }
  return out;
}

function rowsOf(spec: Record<string, unknown>): Record<string, unknown>[] {
  return (spec.data as { values: Record<string, unknown>[] }).values;
}

/** mean MiB/s as a tip writes it. */
function mib(bytes: number): string {
  return (Math.round(bytes / MIB * 10) / 10).toLocaleString("en-US", {
    maximumFractionDigits: 1,
  });
}

Deno.test("every data mark of every chart kind carries a <title> with its series and values", async () => {
  await withTempDir(async (dir) => {
    const disk = join(dir, "disk");
    await Deno.mkdir(disk);
    const [run, contention, workload, plan, replay, nodes, bench] = [
      "run",
      "contention",
      "workload",
      "plan",
      "replay",
      "nodes",
      "bench",
    ].map((n) => join(dir, `${n}.json`)) as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    await randrwRun("memory:/dev/shm", run);
    await contentionRun(disk, contention);
    await workloadRun(disk, workload);
    await planRun(plan);
    await replayRun(dir, plan, replay);
    await cliOk(["plan", "--profile", SCALING, "--nodes", "1,2,4", "--output", nodes]);
    await benchAcrossRun(disk, bench);
    const runDoc = await readDoc(run);
    const sweep = await sweepDoc(runDoc);
    const planDoc = JSON.parse(await Deno.readTextFile(plan)) as PlanDocument;
    const nodesDoc = JSON.parse(await Deno.readTextFile(nodes)) as PlanDocument;
    const inputs: ChartSource[][] = [
      [{ label: "run.json", doc: runDoc, plan: planDoc }],
      [{ label: "contention.json", doc: await readDoc(contention) }],
      [{ label: "workload.json", doc: await readDoc(workload) }],
      [{ label: "replay.json", doc: await readDoc(replay) }],
      [{ label: "sweep", doc: sweep }],
      [{ label: "nodes.json", plan: nodesDoc }],
      [{ label: "bench.json", doc: await readDoc(bench) }],
      // a comparison: two files on the same axes
      [{ label: "A", doc: runDoc }, { label: "B", doc: sweep }],
    ];
    const kinds = new Set<string>();
    for (const sources of inputs) {
      for (const chart of reportCharts(sources)) {
        kinds.add(chart.id);
        const svg = await renderSvg(chart.spec, chart.id);
        const titles = markTitles(svg);
        const rows = rowsOf(chart.spec);
        const tips = new Set(rows.map((r) => String(r.tip)));
        const series = new Set(rows.map((r) => String(r.series)));
        const where = `${sources.map((s) => s.label).join(" + ")}: ${chart.id}`;
        assert.equal(titles.length, [...svg.matchAll(MARK)].length, where);
        assert.equal(svg.match(/<title>/g)?.length, titles.length, `${where}: titles off marks`);
        // a vertex, bar or cell shows its row; a line shows its series
        for (const t of titles) assert.ok(tips.has(t) || series.has(t), `${where}: "${t}"`);
        for (const t of tips) assert.ok(titles.includes(t), `${where}: no mark titled "${t}"`);
      }
    }
    assert.deepEqual([...kinds].sort(), [
      "bandwidth",
      "concurrency",
      "contention",
      "gantt",
      "latency",
      "latency-time",
      "nodes",
      "placement",
      "predictions",
      "replay",
      "scaling",
      "sweep",
      "sweep-latency",
      "timeseries",
      "workload",
    ]);

    // the values are the document's: bandwidth per direction, a sweep point's MiB/s and p99
    const [bw] = reportCharts([{ label: "run.json", doc: runDoc }]);
    const bwTitles = markTitles(await renderSvg(bw!.spec, "bw"));
    const r = runDoc.runs[0]!;
    for (const d of ["read", "write"] as const) {
      const want = ` ${d}: ${mib(r[d].bw_bytes)} MiB/s`;
      assert.equal(bwTitles.filter((t) => t.endsWith(want)).length, 1, bwTitles.join(" | "));
    }
    const sl = sweepLatencyChart([{ label: "sweep", doc: sweep }])!;
    const slTitles = markTitles(await renderSvg(sl.spec, "sl"));
    for (const pt of sweep.sweep!.tiers[0]!.points) {
      const p99 = (Math.round(pt.lat_p99_ns) / 1000).toLocaleString("en-US", {
        maximumFractionDigits: 3,
      });
      const want = `iodepth ${pt.iodepth}, numjobs ${pt.numjobs}: ${mib(pt.bw_bytes)} MiB/s ` +
        `at p99 ${p99} µs`;
      assert.ok(slTitles.some((t) => t.includes(want)), `${want} not in ${slTitles.join(" | ")}`);
    }
  });
});

Deno.test("the sweep chart draws one line per iodepth through the block sizes, ordered by bs", async () => {
  await withTempDir(async (dir) => {
    const run = join(dir, "run.json");
    await randrwRun("memory:/dev/shm", run);
    const sweep = await sweepDoc(await readDoc(run));
    const chart = sweepLatencyChart([{ label: "sweep", doc: sweep }])!;
    const rows = rowsOf(chart.spec);
    const points = sweep.sweep!.tiers[0]!.points;
    assert.equal(rows.length, points.length);
    assert.deepEqual([...new Set(rows.map((r) => r.line))].sort(), ["iodepth 1", "iodepth 4"]);
    for (const [i, pt] of points.entries()) {
      assert.equal(rows[i]!.order, pt.bs);
      assert.equal(rows[i]!.bw, Math.round(pt.bw_bytes / MIB * 10) / 10);
      assert.equal(rows[i]!.p99_us, Math.round(pt.lat_p99_ns) / 1000);
    }
  });
});

Deno.test("latency over time is drawn from the intervals' p50 and p99, and not for results written before them", async () => {
  await withTempDir(async (dir) => {
    const run = join(dir, "run.json");
    await randrwRun("memory:/dev/shm", run);
    const doc = await readDoc(run);
    const ts = doc.runs[0]!.timeseries;
    const chart = latencyTimeChart([{ label: "run.json", doc }])!;
    const rows = rowsOf(chart.spec);
    const drawn = (a: (number | null)[] | undefined) => (a ?? []).filter((v) => v !== null).length;
    assert.equal(
      rows.length,
      drawn(ts.read_lat_p50_ns) + drawn(ts.read_lat_p99_ns) + drawn(ts.write_lat_p50_ns) +
        drawn(ts.write_lat_p99_ns),
    );
    const p99 = rows.filter((r) => String(r.series).endsWith("read p99"));
    p99.forEach((r) => {
      const i = ts.t_ms.indexOf(Number(r.t_s) * 1000);
      assert.equal(r.lat_us, Math.round(ts.read_lat_p99_ns![i]!) / 1000);
    });
    // an older result: the same document without the interval latencies
    const old = structuredClone(doc) as ReportDocument;
    for (const r of old.runs) {
      for (const d of ["read", "write"] as const) {
        for (const p of ["p50", "p99", "max"] as const) delete r.timeseries[`${d}_lat_${p}_ns`];
      }
    }
    assert.equal(latencyTimeChart([{ label: "old.json", doc: old }]), undefined);
    const ids = reportCharts([{ label: "old.json", doc: old }]).map((c) => c.id);
    assert.deepEqual(ids, ["bandwidth", "latency", "timeseries"]);
  });
});

Deno.test("a profile's charts: a panel per tier with the null tier's ceiling apart, the curves and the scaling curve as measured", async () => {
  await withTempDir(async (dir) => {
    const path = join(dir, "bench.json");
    await benchAcrossRun(dir, path);
    const doc = await readDoc(path);
    const source = [{ label: "bench.json", doc }];
    const charts = new Map(reportCharts(source).map((c) => [c.id, c]));
    // bandwidth: the pattern runs only (no curve run), a panel per tier, the ceiling last
    const bw = rowsOf(charts.get("bandwidth")!.spec);
    const panels = (charts.get("bandwidth")!.spec.facet as { sort: string[] }).sort;
    assert.deepEqual(panels, ["memory", "pfs", "null (harness ceiling)"], "the ceiling comes last");
    assert.deepEqual([...new Set(bw.map((r) => r.panel))].sort(), [...panels].sort());
    assert.equal(bw.filter((r) => r.panel === "null (harness ceiling)").length, 1);
    assert.equal(bw.length, 1 + 2 * 8, "null once; 7 patterns a tier, randrw both ways");
    assert.ok(
      (charts.get("bandwidth")!.spec.resolve as { scale: { y: string } }).scale.y ===
        "independent",
    );
    // latency: a panel per tier too
    const lat = rowsOf(charts.get("latency")!.spec);
    assert.deepEqual([...new Set(lat.map((r) => r.panel))].sort(), [
      "memory",
      "null (harness ceiling)",
      "pfs",
    ]);
    // the curves: every measured point, reading, writing and both (the mixed total)
    const curves = rowsOf(charts.get("concurrency")!.spec);
    let n = 0;
    for (const t of doc.concurrency!.tiers) {
      for (const c of t.curves) {
        for (const p of c.points) {
          const at = (io: string) =>
            curves.find((r) =>
              r.panel === t.label && r.io === io && r.processes === p.processes &&
              r.size === (c.bs === MIB ? "1 MiB" : "2 MiB")
            )?.bw;
          assert.equal(at("reading"), Math.round(p.read_bw_bytes / MIB * 10) / 10);
          assert.equal(at("writing"), Math.round(p.write_bw_bytes / MIB * 10) / 10);
          const both = p.mixed_read_bw_bytes! + p.mixed_write_bw_bytes!;
          assert.equal(at("both"), Math.round(both / MIB * 10) / 10);
          n += 3;
        }
      }
    }
    assert.equal(curves.length, n);
    // …and the same figures as a table (a CSV beside the page)
    const table = reportTables(doc).find((t) => t.name === "concurrency")!;
    assert.equal(table.rows.filter((r) => r[5] === "measured").length, n);
    assert.deepEqual([...new Set(curves.map((r) => r.processes))].sort(), [1, 2]);
    // the shared tier against nodes: all of them and each one's share
    const scaling = rowsOf(charts.get("scaling")!.spec);
    const [pfs] = doc.scaling!.tiers;
    for (const p of pfs!.points) {
      for (const d of ["read", "write"] as const) {
        const row = (what: string) =>
          scaling.find((r) =>
            r.nodes === p.nodes && r.what === what &&
            r.io === (d === "read" ? "reading" : "writing")
          )!.bw;
        assert.equal(row("all nodes"), Math.round(p[d].bw_bytes / MIB * 10) / 10);
        assert.equal(row("per node"), Math.round(p[d].bw_bytes_per_node / MIB * 10) / 10);
      }
    }
    assert.deepEqual([...new Set(scaling.map((r) => r.nodes))], [1, 2]);
  });
});
