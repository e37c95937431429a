import assert from "node:assert/strict";
import { runRawJob as run } from "../tests/_run_job.ts";

Deno.test("a run's time series carries each interval's p50, p99 and max latency per direction, within the run's own", async () => {
  const r = await run({
    tier: "memory:",
    rw: "randrw",
    bs: "64k",
    size: "16m",
    numjobs: "2",
    iodepth: "4",
    engine: "libaio",
    runtime: "1",
    logAvgMsec: "200",
  });
  assert.equal(r.status, "ok");
  const ts = r.timeseries;
  assert.ok(ts.t_ms.length > 0);
  for (const dir of ["read", "write"] as const) {
    const p50 = ts[`${dir}_lat_p50_ns`]!;
    const p99 = ts[`${dir}_lat_p99_ns`]!;
    const max = ts[`${dir}_lat_max_ns`]!;
    for (const a of [p50, p99, max]) assert.equal(a.length, ts.t_ms.length, dir);
    const all = r[dir].lat_ns;
    let drawn = 0;
    ts.t_ms.forEach((_, i) => {
      const [a, b, c] = [p50[i], p99[i], max[i]];
      if (a === null) return assert.ok(b === null && c === null, `${dir} interval ${i}`);
      drawn++;
      // one interval's samples lie within the whole run's
      assert.ok(a! >= all.min * 0.999 && a! <= b! && b! <= c!, `${dir} interval ${i}`);
      assert.ok(c! <= all.max * 1.001, `${dir} interval ${i}: max ${c} > the run's ${all.max}`);
    });
    assert.ok(drawn > 0, `${dir}: no interval has a latency`);
  }
});

Deno.test("a direction that moved nothing has no interval latency", async () => {
  const r = await run({
    tier: "memory:",
    rw: "write",
    bs: "64k",
    size: "8m",
    runtime: "1",
    logAvgMsec: "250",
  });
  assert.equal(r.timeseries.read_lat_p99_ns, undefined);
  assert.equal(r.timeseries.write_lat_p99_ns?.length, r.timeseries.t_ms.length);
});
