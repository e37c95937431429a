import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, withTempDir } from "../tests/_helpers.ts";
import { formatWorkloadLine } from "./workload_progress.ts";
import { ProgressLine } from "./progress.ts";

const MIB = 1024 ** 2;

Deno.test("formatWorkloadLine() shows each path's read and write rate, bytes moved and time left", () => {
  const line = formatWorkloadLine({
    name: "mlp-offload",
    iteration: 3,
    iterations: 4,
    moved: 1536 * MIB,
    leftMs: 65_000,
    paths: [
      { name: "local", readBw: 1024 * MIB, writeBw: 812 * MIB },
      { name: "remote", readBw: 24 * MIB, writeBw: 0 },
    ],
  });
  assert.equal(
    line,
    "mlp-offload |████████░░░░░░░░| iteration 3/4 · local read 1.0 GiB/s write 812.0 MiB/s, " +
      "remote read 24.0 MiB/s write 0 B/s · 1.5 GiB moved · about 1m 05s left",
  );
});

Deno.test("ProgressLine rates each path of a workload over the last interval and paces the time left", () => {
  const chunks: string[] = [];
  const line = new ProgressLine({
    stream: { isTTY: true, columns: 300, write: (s: string) => chunks.push(s) },
  });
  const paths = (r: number, w: number) => [{ name: "local", bytesRead: r, bytesWritten: w }];
  const base = { iterations: 3, bytesRead: 0, bytesWritten: 0 };
  line.updateWorkload("zero-infinity", {
    ...base,
    iteration: 0,
    elapsedMs: 1000,
    paths: paths(100 * MIB, 50 * MIB),
  });
  // one of three iterations done in 2 s: 4 s left; 200 MiB read and 100 MiB written in the last second
  line.updateWorkload("zero-infinity", {
    ...base,
    iteration: 1,
    elapsedMs: 2000,
    bytesRead: 300 * MIB,
    bytesWritten: 150 * MIB,
    paths: paths(300 * MIB, 150 * MIB),
  });
  line.stop();
  const text = chunks.join("");
  assert.ok(
    text.includes(
      "iteration 2/3 · local read 200.0 MiB/s write 100.0 MiB/s · 450.0 MiB moved · about 4s left",
    ),
    JSON.stringify(text),
  );
  const quiet = new ProgressLine({
    quiet: true,
    stream: { isTTY: true, write: () => assert.fail() },
  });
  quiet.updateWorkload("x", { ...base, iteration: 0, elapsedMs: 1 });
  assert.equal(quiet.enabled, false);
});

Deno.test("workload prints no progress line when stderr is not a terminal", async () => {
  await withTempDir(async (dir) => {
    const r = await runCli([
      "workload",
      "zero-infinity",
      "--model",
      "7b",
      "--scale",
      "0.0002",
      "--ranks-per-node",
      "2",
      "--iterations",
      "1",
      "--warmup",
      "0",
      "--tiers",
      `memory:/dev/shm,file:${dir}`,
      "--output",
      join(dir, "w.json"),
    ]);
    assert.equal(r.code, 0, r.stderr);
    for (const mark of ["░", "█", " moved", " left", "\x1b"]) {
      assert.ok(!r.stderr.includes(mark), r.stderr);
    }
  });
});
