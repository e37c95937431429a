import assert from "node:assert/strict";
import type { SubmitEvent, TraceEvent } from "../trace/mod.ts";
import { parseDeepSpeedConfig } from "./deepspeed_config.ts";
import { resolveSetup } from "./setup.ts";
import { zero3Layout } from "./zero3.ts";
import { zeroInfinity, zeroInfinitySettings } from "./zero_infinity.ts";
import { zeroInfinityTrace } from "./zero_infinity_trace.ts";

/** The trace of a one-tensor model of `numel` elements under `aio`. */
function traceOf(numel: number, aio: Record<string, unknown> = {}): TraceEvent[] {
  const deepspeed = parseDeepSpeedConfig({
    zero_optimization: { stage: 3, offload_optimizer: { device: "nvme", nvme_path: "/nvme" } },
    aio,
  }, "ds.json");
  const setup = resolveSetup({
    tensors: { label: "x", list: [{ name: "w", numel }] },
    ranksPerNode: 1,
    scale: 1,
    iterations: 2,
    warmup: 0,
  });
  const options = { deepspeed };
  const settings = zeroInfinitySettings(options);
  const program = zeroInfinity.build(setup, { local: ["local"] }, options);
  return [...zeroInfinityTrace({
    program,
    setup,
    settings,
    layout: zero3Layout(setup, settings),
    nvme: { optimizer: "/nvme", param: "/nvme" },
    local: "local",
  })];
}

const submits = (events: TraceEvent[]) =>
  events.filter((e): e is SubmitEvent => e.kind === "submit");

Deno.test("the exported trace cuts each transfer into block_size iocbs, queue_depth at first, one per completion after", () => {
  const events = traceOf(3 << 20); // 12 MiB per state
  const first = submits(events).filter((s) => s.iocbs[0]!.file.endsWith("/0_0.tensor.swp"));
  assert.equal(first[0]!.iocbs.length, 8);
  assert.ok(first.slice(1, 5).every((s) => s.iocbs.length === 1));
  assert.ok(
    submits(events).flatMap((s) => s.iocbs).every((c) =>
      c.length === 1 << 20 && c.offset % (1 << 20) === 0
    ),
  );
  // files under nvme_path/zero_stage_3/optimizer/rank0, opened on the rank's main thread
  const opens = events.filter((e) => e.kind === "open");
  assert.ok(
    opens.every((e) =>
      e.kind === "open" && e.thread === "rank0/main" &&
      e.file.startsWith("/nvme/zero_stage_3/optimizer/rank0/")
    ),
  );
});

Deno.test("the exported trace follows single_submit, overlap_events and thread_count", () => {
  const single = submits(traceOf(3 << 20, { single_submit: true }));
  assert.ok(single.every((s) => s.iocbs.length === 1));
  const sequential = submits(traceOf(3 << 20, { overlap_events: false }));
  assert.ok(
    sequential.filter((s) => s.iocbs[0]!.file.endsWith("/0_0.tensor.swp")).every((s) =>
      s.iocbs.length === 8 || s.iocbs.length === 4
    ),
  );
  const two = submits(traceOf(3 << 20, { thread_count: 2 }));
  const threads = new Set(two.map((s) => s.thread));
  assert.deepEqual(threads, new Set(["rank0/local:optimizer#0", "rank0/local:optimizer#1"]));
  // thread 1 moves the second half of each file
  const half = two.filter((s) => s.thread.endsWith("#1"))[0]!.iocbs[0]!;
  assert.equal(half.offset, (12 << 20) / 2);
});

Deno.test("the serial swapper's unpadded write of a size O_DIRECT refuses completes with EINVAL, unchecked", () => {
  // 262,147 fp32 elements: 1,048,588 bytes unpadded, padded to 1,049,600
  const events = traceOf(262147);
  const step2 = events.slice(
    events.findIndex((e) => e.kind === "phase" && e.name === "STEP 2 optimizer-step"),
  );
  const writes = submits(step2).flatMap((s) => s.iocbs).filter((c) =>
    c.op === "write" && c.file.endsWith("/0_0.tensor.swp")
  );
  assert.deepEqual(writes.map((c) => c.length), [1 << 20, 12]);
  const reaps = step2.filter((e) => e.kind === "reap").flatMap((e) =>
    e.kind === "reap" ? e.results : []
  );
  assert.ok(reaps.includes(-22));
  // reads are padded
  const reads = submits(step2).flatMap((s) => s.iocbs).filter((c) =>
    c.op === "read" && c.file.endsWith("/0_0.tensor.swp")
  );
  assert.deepEqual(reads.map((c) => c.length), [1 << 20, 1024]);
});

Deno.test("the exported trace fails every request of a gradient read into a view off the 512-byte grid", () => {
  // two tensors: the second's gradient starts at element 262,147 of the subgroup, byte 1,048,588
  const deepspeed = parseDeepSpeedConfig({
    zero_optimization: { stage: 3, offload_optimizer: { device: "nvme", nvme_path: "/nvme" } },
  }, "ds.json");
  const setup = resolveSetup({
    tensors: { label: "x", list: [{ name: "a", numel: 262147 }, { name: "b", numel: 1 << 20 }] },
    ranksPerNode: 1,
    scale: 1,
    iterations: 1,
    warmup: 0,
  });
  const settings = zeroInfinitySettings({ deepspeed });
  const program = zeroInfinity.build(setup, { local: ["local"] }, { deepspeed });
  const events = [...zeroInfinityTrace({
    program,
    setup,
    settings,
    layout: zero3Layout(setup, settings),
    nvme: { optimizer: "/nvme", param: "/nvme" },
    local: "local",
  })];
  let reading = "";
  const results = new Map<string, number[]>();
  for (const e of events) {
    if (e.kind === "submit") reading = `${e.iocbs[0]!.op} ${e.iocbs[0]!.file.split("/").at(-1)}`;
    if (e.kind === "reap") results.set(reading, [...(results.get(reading) ?? []), ...e.results]);
  }
  assert.ok(results.get("read 0_1_gradient_262147_1048576.tensor.swp")!.every((r) => r === -22));
  assert.ok(results.get("write 0_1_gradient_262147_1048576.tensor.swp")!.every((r) => r > 0));
  assert.ok(
    results.get("read 0_1_gradient_0_261888.tensor.swp") === undefined,
    "under 1 MiB: not swapped",
  );
});
