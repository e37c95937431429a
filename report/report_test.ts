import assert from "node:assert/strict";
import { join } from "node:path";
import { withTempDir } from "../tests/_helpers.ts";
import { cliOk, planRun, randrwRun, readDoc, traceReplayRun } from "../tests/_report_fixtures.ts";

Deno.test("report writes a page with no external reference, a summary and CSVs of a real run and plan", async () => {
  await withTempDir(async (dir) => {
    const run = join(dir, "run.json");
    const plan = join(dir, "plan.json");
    await randrwRun("memory:/dev/shm", run);
    await planRun(plan);
    const out = join(dir, "rep");
    const stdout = await cliOk(["report", run, plan, "--output", out]);
    // the last line: the page, and (a run is no profile) a comparison with another result
    const last = stdout.trim().split("\n").at(-1)!;
    assert.match(
      last,
      /^report: (\S+report\.html); next: .*tierbench compare \S+run\.json OTHER\.json$/,
    );
    assert.ok(join(out, "report.html").endsWith(last.split(";")[0]!.slice("report: ".length)));
    const html = await Deno.readTextFile(join(out, "report.html"));
    for (const id of ["bandwidth", "latency", "timeseries", "placement", "predictions"]) {
      assert.ok(html.includes(`data-chart="${id}"`), id);
    }
    // self-contained: no script, no link, no src, nothing with a scheme but the SVG namespaces
    assert.ok(!/<script|<link|\bsrc=|@import/i.test(html));
    const urls = [...html.matchAll(/https?:\/\/[^\s"')]+/g)].map((m) => m[0]);
    assert.ok(urls.every((u) => u.startsWith("http://www.w3.org/")), urls.join(" "));

    const doc = await readDoc(run);
    const r = doc.runs[0]!;
    const csv = (await Deno.readTextFile(join(out, "runs.csv"))).trim().split("\n");
    assert.equal(csv.length, 3); // header, read, write
    const col = csv[0]!.split(",");
    for (const [i, dir] of (["read", "write"] as const).entries()) {
      const row = csv[i + 1]!.split(",");
      assert.equal(row[col.indexOf("direction")], dir);
      assert.equal(
        Number(row[col.indexOf("bw_MiB_s")]),
        Math.round(r[dir].bw_bytes / 1024 / 1024 * 10) / 10,
      );
      assert.equal(Number(row[col.indexOf("iops")]), Math.round(r[dir].iops));
    }
    const p = JSON.parse(await Deno.readTextFile(plan));
    const pred = (await Deno.readTextFile(join(out, "predictions.csv"))).trim().split("\n");
    const planRow = pred.find((l) => l.startsWith("plan,"))!.split(",");
    assert.equal(Number(planRow[1]), Math.round(p.predictions.plan.update_s * 100) / 100);
    const md = await Deno.readTextFile(join(out, "report.md"));
    assert.ok(md.includes(`host: ${doc.host.hostname}`));
    assert.ok(md.includes("## Runs") && md.includes("## Plan: placement (per rank)"));
    assert.ok(md.includes(`| ${r.name} | memory |`));
  });
});

Deno.test("report of a trace replay: its timeline, per tier and direction, and recorded beside replayed", async () => {
  await withTempDir(async (dir) => {
    const doc = join(dir, "replay.json");
    await traceReplayRun(dir, doc);
    const out = join(dir, "rep");
    await cliOk(["report", doc, "--output", out]);
    const html = await Deno.readTextFile(join(out, "report.html"));
    assert.ok(html.includes('data-chart="gantt"'));
    const t = (await readDoc(doc)).trace_replay!;
    const csv = (await Deno.readTextFile(join(out, "trace-replay.csv"))).trim().split("\n");
    const col = csv[0]!.split(",");
    const rows = csv.slice(1).map((l) => l.split(","));
    assert.deepEqual(rows.map((r) => r[col.indexOf("direction")]), ["read", "write"]);
    const total = rows.reduce((n, r) => n + Number(r[col.indexOf("requests")]), 0);
    assert.equal(total, 1024); // fio's 4 KiB random reads and writes, each block once
    const times = (await Deno.readTextFile(join(out, "trace-replay-times.csv"))).split("\n");
    assert.equal(times[1], `whole trace,,${t.total.recorded_s},${t.total.replayed_s}`);
  });
});
