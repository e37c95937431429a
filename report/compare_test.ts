import assert from "node:assert/strict";
import { join } from "node:path";
import { formatRate } from "../core/units.ts";
import { runCli, withTempDir } from "../tests/_helpers.ts";
import { randrwRun, readDoc } from "../tests/_report_fixtures.ts";
import { compareDocuments, type CompareFigure, verdict } from "./compare.ts";

Deno.test("compare sets a tmpfs run beside a disk run: figures, ratios and marks from the files", async () => {
  await withTempDir(async (dir) => {
    const disk = join(dir, "disk");
    await Deno.mkdir(disk);
    const a = join(dir, "shm.json");
    const b = join(dir, "disk.json");
    await randrwRun("file:/dev/shm", a);
    await randrwRun(`file:${disk}`, b, true);
    const r = await runCli(["compare", a, b]);
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout;
    const [da, db] = [await readDoc(a), await readDoc(b)];
    // the legend names each file, its host and what lies under its tier
    assert.ok(out.includes(`A = ${a}`) && out.includes(`B = ${b}`));
    assert.ok(out.includes("file:/dev/shm (tmpfs)"));
    assert.ok(out.includes(`A: ${da.host.hostname}`));
    assert.ok(out.includes("noise = the two files' spreads overlap"));
    const lines = out.split("\n");
    for (const dir of ["read", "write"] as const) {
      const ra = da.runs[0]![dir];
      const rb = db.runs[0]![dir];
      const row = lines.find((l) => l.includes(`│ ${dir} `) && l.includes("bandwidth"));
      assert.ok(row, `no ${dir} bandwidth row in\n${out}`);
      const cells = row.split("│").map((c) => c.trim());
      assert.equal(cells[1], "file randrw 1m, 1 proc × 8 deep");
      assert.ok(cells[4]!.startsWith(formatRate(ra.bw_bytes)), cells[4]);
      assert.ok(cells[5]!.startsWith(formatRate(rb.bw_bytes)), cells[5]);
      assert.equal(cells[6], (rb.bw_bytes / ra.bw_bytes).toFixed(2));
      // the mark follows from the time-series spreads of the two runs
      const tsA = da.runs[0]!.timeseries[`${dir}_bw_bytes`];
      const tsB = db.runs[0]!.timeseries[`${dir}_bw_bytes`];
      const overlap = Math.min(...tsA) <= Math.max(...tsB) && Math.min(...tsB) <= Math.max(...tsA);
      const expected = overlap ? "≈ noise" : rb.bw_bytes > ra.bw_bytes ? "▲ better" : "▼ worse";
      assert.equal(cells[7], expected, row);
      const p99 = lines.find((l) => l.includes(`│ ${dir} `) && l.includes("lat p99"));
      assert.ok(p99);
      const lat = p99.split("│").map((c) => c.trim());
      const la = ra.lat_ns.percentile["99.000000"]!;
      const lb = rb.lat_ns.percentile["99.000000"]!;
      assert.equal(lat[6], (lb / la).toFixed(2));
      // one round each and no latency time series: no spread, so better or worse, lower is better
      assert.equal(lat[7], lb < la ? "▲ better" : lb > la ? "▼ worse" : "= same");
    }
  });
});

Deno.test("compareDocuments() treats runs of one pattern in a file as rounds and marks overlap as noise", async () => {
  await withTempDir(async (dir) => {
    const paths = [0, 1, 2].map((i) => join(dir, `r${i}.json`));
    for (const p of paths) await randrwRun("file:/dev/shm", p);
    const docs = await Promise.all(paths.map(readDoc));
    const rounds = { ...docs[0]!, runs: [docs[0]!.runs[0]!, docs[1]!.runs[0]!] };
    const c = compareDocuments([
      { label: "A", path: "rounds", doc: rounds },
      { label: "B", path: paths[2]!, doc: docs[2]! },
    ]);
    const row = c.rows.find((r) => r.direction === "read" && r.metric === "bandwidth")!;
    const a = row.figures[0]!;
    const bws = rounds.runs.map((r) => r.read.bw_bytes);
    assert.equal(a.rounds, 2);
    assert.equal(a.value, (bws[0]! + bws[1]!) / 2);
    assert.deepEqual(a.spread, { min: Math.min(...bws), max: Math.max(...bws), source: "rounds" });
    assert.equal(row.figures[1]!.spread?.source, "timeseries");
    assert.equal(row.verdicts[1], verdict(a, row.figures[1]!, true));
    // the same rounds against themselves: the spreads overlap
    const self = compareDocuments([
      { label: "A", path: "x", doc: rounds },
      { label: "B", path: "y", doc: rounds },
    ]);
    assert.ok(self.rows.every((r) => r.verdicts[1] === "noise"));
    assert.ok(self.rows.every((r) => r.ratios[1] === 1));
  });
});

Deno.test("verdict() is better for more bandwidth and for less latency, noise inside the spread", () => {
  const f = (value: number, min?: number, max?: number): CompareFigure =>
    min === undefined
      ? { value, rounds: 1 }
      : { value, rounds: 3, spread: { min, max: max!, source: "rounds" } };
  assert.equal(verdict(f(100), f(150), true), "better");
  assert.equal(verdict(f(100), f(150), false), "worse");
  assert.equal(verdict(f(100), f(100), true), "same");
  assert.equal(verdict(f(100, 90, 120), f(115), true), "noise");
  assert.equal(verdict(f(100, 90, 110), f(130, 125, 140), true), "better");
  assert.equal(verdict(f(100, 90, 110), f(130, 105, 140), false), "noise");
});

Deno.test("compare refuses bad input with exit 2 and one line naming the argument", async () => {
  await withTempDir(async (dir) => {
    const notJson = join(dir, "x.json");
    await Deno.writeTextFile(notJson, "{ not json");
    const other = join(dir, "other.json");
    await Deno.writeTextFile(other, JSON.stringify({ schema: "something/else" }));
    const cases: [string[], RegExp][] = [
      [["compare", notJson], /^tierbench: compare: 1 file given/],
      [
        ["compare", notJson, notJson],
        /^tierbench: \S*x\.json: not JSON \(a syntax error at line 1, column 3\)$/,
      ],
      [["compare", other, other], /^tierbench: \S*other\.json: neither a tierbench\/result@1 nor/],
      [["compare", join(dir, "absent.json"), other], /^tierbench: \S*absent\.json: no such file$/],
      [["compare", other, other, "--match", "bogus"], /--match: "bogus" .*allowed: pattern, name/],
      [["report", join(dir, "absent.json")], /^tierbench: \S*absent\.json: no such file$/],
      [["report", other], /^tierbench: \S*other\.json: neither/],
    ];
    for (const [args, re] of cases) {
      const r = await runCli(args);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(r.stderr.trim(), re);
    }
  });
});
