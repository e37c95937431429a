import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, runCli, sh, withTempDir } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";
import { formatLeft, formatProgressLine, ProgressLine, type ProgressStream } from "./progress.ts";
import type { RunProgress } from "../bench/runner.ts";

const GIB = 1024 ** 3;

/** A stream that says it is a terminal and keeps what is written to it. */
function terminal(isTTY = true): ProgressStream & { text: () => string } {
  const chunks: string[] = [];
  return {
    isTTY,
    columns: 300,
    write: (s: string) => chunks.push(s),
    text: () => chunks.join(""),
  };
}

function progress(over: Partial<RunProgress>): RunProgress {
  return {
    name: "read memory+file",
    phase: "measure",
    elapsedMs: 1000,
    totalMs: 3000,
    fraction: 1 / 3,
    readBytes: 0,
    writeBytes: 0,
    bwBytes: GIB,
    iops: 1024,
    ...over,
  };
}

Deno.test("formatProgressLine() shows each tier's rate and IOPS, the time left, and the series' time left", () => {
  const line = formatProgressLine({
    label: "read memory+file",
    phase: "measure",
    fraction: 0.5,
    leftMs: 2500,
    tiers: [
      { tier: "memory read", bwBytes: 8 * GIB, iops: 8192 },
      { tier: "file read", bwBytes: GIB / 2, iops: 512 },
    ],
    step: { what: "point", index: 3, count: 36, leftMs: 185_000 },
  });
  assert.equal(
    line,
    "read memory+file |████████░░░░░░░░| 50% · memory read 8.0 GiB/s 8,192 IOPS, " +
      "file read 512.0 MiB/s 512 IOPS · 3s left · point 3/36, 3m 05s left in all",
  );
  // before measuring: the phase instead of rates
  const layout = formatProgressLine({
    label: "x",
    phase: "layout",
    fraction: 0,
    leftMs: undefined,
    tiers: [{ tier: "", bwBytes: 0, iops: 0 }],
  });
  assert.equal(layout, "x |░░░░░░░░░░░░░░░░| 0% · layout");
});

Deno.test("formatLeft() counts up to whole seconds, then minutes, then hours", () => {
  assert.equal(formatLeft(0), "0s");
  assert.equal(formatLeft(-5), "0s");
  assert.equal(formatLeft(59_001), "1m 00s");
  assert.equal(formatLeft(7_260_000), "2h 01m");
});

Deno.test("ProgressLine puts every tier of a group on one line on a terminal stream", () => {
  const out = terminal();
  const line = new ProgressLine({ stream: out });
  assert.equal(line.enabled, true);
  line.update(progress({ tier: "memory read", bwBytes: 8 * GIB, iops: 8192 }));
  line.update(progress({ tier: "file read", bwBytes: GIB, iops: 1024, fraction: 0.5 }), {
    what: "group",
    index: 2,
    count: 9,
    leftMs: 40_000,
  });
  line.stop();
  const text = out.text();
  assert.ok(
    text.includes(
      "read memory+file |████████░░░░░░░░| 50% · memory read 8.0 GiB/s 8,192 IOPS, " +
        "file read 1.0 GiB/s 1,024 IOPS · 2s left · group 2/9, 40s left in all",
    ),
    JSON.stringify(text),
  );
  // a new run starts a new line with only its own tiers
  const next = terminal();
  const again = new ProgressLine({ stream: next });
  again.update(progress({ tier: "memory read" }));
  again.update(progress({ name: "write memory+file", tier: "file write", bwBytes: 2 * GIB }));
  again.stop();
  const last = next.text().split("write memory+file").at(-1)!;
  assert.ok(last.includes("file write 2.0 GiB/s") && !last.includes("memory read"), last);
});

Deno.test("ProgressLine draws nothing when quiet or when the stream is not a terminal", () => {
  for (const [options, out] of [[{ quiet: true }, terminal()], [{}, terminal(false)]] as const) {
    const line = new ProgressLine({ ...options, stream: out });
    assert.equal(line.enabled, false);
    line.update(progress({ tier: "file read" }));
    line.stop();
    assert.equal(out.text(), "");
  }
});

/** What a progress line leaves on stderr: its bar, its rates, cursor control. */
const PROGRESS_MARKS = ["░", "█", "IOPS", " left", "\x1b"];

Deno.test("run and sweep print no progress line when stderr is not a terminal", async () => {
  await withTempDir(async (dir) => {
    const run = await runCli([
      "run",
      "--tier",
      `file:${dir}`,
      "--bs",
      "64k",
      "--size",
      "4m",
      "--runtime",
      "1",
      "--output",
      join(dir, "run.json"),
    ]);
    const sweep = await runCli([
      "sweep",
      "--tier",
      "null:",
      "--bs",
      "4k",
      "--iodepth",
      "1,2",
      "--numjobs",
      "1",
      "--size",
      "1m",
      "--runtime",
      "1",
      "--ramp",
      "0",
      "--output",
      join(dir, "sweep.json"),
    ]);
    for (const r of [run, sweep]) {
      assert.equal(r.code, 0, r.stderr);
      for (const mark of PROGRESS_MARKS) assert.ok(!r.stderr.includes(mark), r.stderr);
    }
    // the tables still say it all, on stdout
    assert.ok(run.stdout.includes("IOPS") && sweep.stdout.includes("best on null:"));
  });
});

Deno.test(needing(["script"], {
  name: "sweep on a terminal draws the line with the grid's time left, and --quiet does not",
  fn: async () => {
    await withTempDir(async (dir) => {
      const cli = (extra: string[]) =>
        [
          Deno.execPath(),
          "run",
          "-q",
          "--allow-all",
          join(ROOT, "main.ts"),
          "sweep",
          "--tier",
          "null:",
          "--bs",
          "4k",
          "--iodepth",
          "1,2",
          "--numjobs",
          "1",
          "--size",
          "1m",
          "--runtime",
          "1",
          "--ramp",
          "0",
          "--output",
          join(dir, "s.json"),
          ...extra,
        ].map((a) => `'${a}'`).join(" ");
      // script(1) runs the command on a pseudo-terminal and copies what it wrote
      const shown = await sh("script", ["-qec", cli([]), "/dev/null"]);
      assert.equal(shown.code, 0, shown.out);
      assert.ok(shown.out.includes("point 1/2,"), shown.out);
      assert.ok(shown.out.includes("left in all"), shown.out);
      assert.ok(shown.out.includes("IOPS · "), shown.out);
      const quiet = await sh("script", ["-qec", cli(["--quiet"]), "/dev/null"]);
      assert.equal(quiet.code, 0, quiet.out);
      assert.ok(!quiet.out.includes("left in all") && !quiet.out.includes("░"), quiet.out);
      assert.ok(quiet.out.includes("best on null:"), quiet.out);
    });
  },
}));
