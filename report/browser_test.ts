import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, withTempDir } from "../tests/_helpers.ts";
import { checkPages, chromiumTest } from "../tests/_chromium.ts";
import {
  benchAcrossRun,
  cliOk,
  contentionRun,
  planRun,
  randrwRun,
  readDoc,
  replayRun,
  sweepDoc,
  traceReplayRun,
  workloadRun,
} from "../tests/_report_fixtures.ts";
import { buildReport } from "./report.ts";

/** Where the screenshots go (results/ is gitignored): look at them. */
const SHOTS = join(ROOT, "results");

chromiumTest(
  "report and compare pages draw every chart with data in Chromium, offline, without errors",
  async () => {
    await withTempDir(async (dir) => {
      const disk = join(dir, "disk");
      await Deno.mkdir(disk);
      const contention = join(dir, "contention.json");
      const workload = join(dir, "workload.json");
      const plan = join(dir, "plan.json");
      const a = join(dir, "a.json");
      const b = join(dir, "b.json");
      await contentionRun(disk, contention);
      await workloadRun(disk, workload);
      await planRun(plan);
      const replay = join(dir, "replay.json");
      await replayRun(dir, plan, replay);
      await randrwRun("file:/dev/shm", a); // tmpfs against the disk, as compare is used
      await randrwRun(`file:${disk}`, b, true);
      const sweep = await sweepDoc(await readDoc(a));
      const bench = join(dir, "bench.json");
      await benchAcrossRun(disk, bench);

      // every chart family: runs and contention with a plan; a workload; a replay; a sweep; a
      // comparison
      const expected: [string, string[]][] = [];
      const cOut = join(dir, "report-contention");
      await cliOk(["report", contention, plan, "--output", cOut]);
      expected.push([
        join(cOut, "report.html"),
        [
          "bandwidth",
          "concurrency",
          "latency",
          "timeseries",
          "latency-time",
          "contention",
          "gantt",
          "placement",
          "predictions",
        ],
      ]);
      const wOut = join(dir, "report-workload");
      await cliOk(["report", workload, "--output", wOut]);
      expected.push([join(wOut, "report.html"), ["workload", "gantt"]]);
      const rOut = join(dir, "report-replay");
      await cliOk(["report", replay, "--output", rOut]);
      expected.push([join(rOut, "report.html"), ["workload", "gantt", "replay"]]);
      // a trace replay: its threads' ops on one track each
      const traceReplay = join(dir, "trace-replay.json");
      await traceReplayRun(disk, traceReplay);
      const tOut = join(dir, "report-trace-replay");
      await cliOk(["report", traceReplay, "--output", tOut]);
      expected.push([join(tOut, "report.html"), ["gantt"]]);
      const sOut = join(dir, "report-sweep");
      const files = await buildReport(sOut, { doc: sweep, label: "sweep" });
      // 8 MiB points end before the first time-series interval: no chart over time
      expected.push([files.html, ["bandwidth", "latency", "sweep", "sweep-latency"]]);
      // a profile across two nodes: each tier's panel (the null tier's ceiling in its own), the
      // curves against processes, the shared tier against nodes, latency per tier
      const bOut = join(dir, "report-bench");
      await cliOk(["report", bench, "--output", bOut]);
      expected.push([
        join(bOut, "report.html"),
        [
          "bandwidth",
          "concurrency",
          "scaling",
          "latency",
          "timeseries",
          "latency-time",
          "contention",
        ],
      ]);
      const cmp = join(dir, "compare.html");
      await cliOk(["compare", a, b, "--html", cmp]);
      expected.push([cmp, ["bandwidth", "latency", "timeseries", "latency-time"]]);

      const shots = [
        "report-screenshot.png",
        "report-screenshot-workload.png",
        "report-screenshot-replay.png",
        "report-screenshot-trace-replay.png",
        "report-screenshot-sweep.png",
        "report-screenshot-bench.png",
        "compare-screenshot.png",
      ].map((n) => join(SHOTS, n));
      const checks = await checkPages(expected.map(([html], i) => [html, shots[i]!]));
      checks.forEach((c, i) => {
        const [html, ids] = expected[i]!;
        assert.deepEqual(c.requests, [], `${html} asked for ${c.requests.join(", ")}`);
        assert.deepEqual(c.errors, [], `${html}: console errors`);
        assert.deepEqual(c.charts.map((x) => x.id), ids, `${html}: charts`);
        for (const chart of c.charts) {
          assert.ok(chart.svg, `${html}: ${chart.id} has no svg`);
          assert.ok(chart.sized > 0, `${html}: ${chart.id} drew no data marks (${chart.marks})`);
          // the browser finds each mark's hover text in its <title> child
          const bare = chart.titles.filter((t) => t === "").length;
          assert.equal(bare, 0, `${html}: ${chart.id} has ${bare} marks without a title`);
        }
      });
      for (const s of shots) assert.ok((await Deno.stat(s)).size > 10_000, `${s} is empty`);
      // the sweep's points, as the browser shows them on hover
      const hover = checks[4]!.charts.find((c) => c.id === "sweep-latency")!.titles;
      // the curves and the scaling curve as the browser shows them on hover
      const benchTitles = checks[5]!.charts.flatMap((c) => c.titles);
      assert.ok(
        benchTitles.some((t) =>
          /^memory both, 2 MiB, 2 procs × 8 deep: [\d,.]+ MiB\/s in all$/.test(t)
        ),
      );
      assert.ok(
        benchTitles.some((t) => /^pfs reading, per node at 2 nodes: [\d,.]+ MiB\/s$/.test(t)),
      );
      for (const pt of sweep.sweep!.tiers[0]!.points) {
        const mib = (Math.round(pt.bw_bytes / 1024 / 1024 * 10) / 10).toLocaleString("en-US");
        const want = `iodepth ${pt.iodepth}, numjobs ${pt.numjobs}: ${mib} MiB/s at p99`;
        assert.ok(hover.some((t) => t.includes(want)), `${want} not in ${hover.join(" | ")}`);
      }
    });
  },
);
