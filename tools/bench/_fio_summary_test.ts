import assert from "node:assert/strict";
import type { Figures } from "./_fio.ts";
import { casesOf } from "./_fio_cases.ts";
import { caseRound, head, rows, summarizeCase } from "./_fio_summary.ts";

function figures(iops: number, usr: number, sys: number): Figures {
  return {
    bw_bytes: iops * 4096,
    iops,
    io_bytes: iops * 4096 * 3,
    runtime_ms: 3000,
    lat_mean_ns: 1e9 / iops,
    usr_cpu: 10,
    sys_cpu: 90,
    cpu_per_io_ns: { usr, sys },
  };
}

Deno.test("the bench:fio table shows each round's CPU ratio beside their median", () => {
  const c = casesOf("loop").find((k) => k.metric === "iops")!;
  const rounds = [
    caseRound(c, 1, "tierbench", figures(100, 300, 700), figures(100, 200, 800)), // 1.00
    caseRound(c, 2, "fio", figures(100, 300, 800), figures(100, 200, 800)), // 1.10
    caseRound(c, 3, "tierbench", figures(100, 200, 700), figures(100, 200, 800)), // 0.90
  ];
  const [row] = rows([summarizeCase(c, rounds)], undefined);
  const cell = (name: string) => row![head(false).indexOf(name)];
  assert.equal(cell("CPU ratio"), "1.000");
  assert.equal(cell("CPU per round"), "1.00 1.10 0.90");
  assert.equal(cell("CPU met"), "yes (≤ 1.00)");
  assert.equal(row!.length, head(false).length);
});

Deno.test("the bench:fio table's RSS row fills every column", () => {
  const rss = {
    label: "peak RSS",
    target: 1.2,
    rss_1g_median_bytes: 100,
    rss_8g_median_bytes: 110,
    ratio_median: 1.1,
    met: true,
    rounds: [],
  };
  const table = rows([], rss);
  assert.equal(table.length, 1);
  assert.equal(table[0]!.length, head(false).length);
});
