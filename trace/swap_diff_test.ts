import assert from "node:assert/strict";
import type { TraceEvent } from "./events.ts";
import { diffSteps, SwapDigest, swapFileOf } from "./swap_diff.ts";

const DIR = "/var/tmp/dsnvme/zero_stage_3/optimizer/rank0";

Deno.test("swapFileOf names DeepSpeed's swap files by their state", () => {
  assert.deepEqual(swapFileOf(`${DIR}/0_51.tensor.swp`), {
    rel: "optimizer/rank0/0_51.tensor.swp",
    state: "fp32",
  });
  assert.equal(swapFileOf(`${DIR}/exp_avg-0_51.tensor.swp`)!.state, "exp_avg");
  assert.equal(swapFileOf(`${DIR}/exp_avg_sq-0_51.tensor.swp`)!.state, "exp_avg_sq");
  assert.equal(swapFileOf(`${DIR}/0_51_gradient_0_1048576.tensor.swp`)!.state, "gradient");
  assert.equal(
    swapFileOf("/n/zero_stage_3/float16params/rank3/12_param.tensor.swp")!.state,
    "param",
  );
  assert.equal(swapFileOf("/usr/lib/libc.so.6"), undefined);
});

const io = (
  t: number,
  ctx: number,
  op: "read" | "write",
  file: string,
  length: number,
): TraceEvent => ({
  kind: "submit",
  t,
  thread: `aio${ctx}`,
  dur: 0,
  ctx,
  asked: 1,
  res: 1,
  iocbs: [{ op, file, offset: 0, length }],
});
const open = (t: number, file: string): TraceEvent => ({
  kind: "open",
  t,
  thread: "main",
  dur: 0,
  file,
  flags: "O_WRONLY",
  res: 5,
});
const phase = (t: number, name: string): TraceEvent => ({
  kind: "phase",
  t,
  name,
  marker: `TBMARK ${name}`,
});

Deno.test("a request counts in the phase its file was opened in, though its aio thread submits it after the next marker", () => {
  const d = new SwapDigest();
  const g = `${DIR}/0_10_gradient_0_1048576.tensor.swp`;
  for (
    const e of [
      phase(0, "STEP 1 backward"),
      open(10, g),
      phase(20, "STEP 1 optimizer-step"),
      io(30, 0, "write", g, 1 << 20),
      open(40, `${DIR}/0_10.tensor.swp`),
      io(50, 0, "read", `${DIR}/0_10.tensor.swp`, 4096),
    ]
  ) d.add(e);
  const s = d.steps.get(1)!;
  assert.equal(s.phaseBytes.get("backward|gradient write"), 1 << 20);
  assert.equal(s.phaseBytes.get("optimizer-step|fp32 read"), 4096);
  assert.deepEqual(s.streams.get(0), [
    "w:optimizer/rank0/0_10_gradient_0_1048576.tensor.swp",
    "r:optimizer/rank0/0_10.tensor.swp",
  ]);
  assert.equal(d.markers, 2);
});

function digest(events: TraceEvent[]): SwapDigest {
  const d = new SwapDigest();
  for (const e of events) d.add(e);
  return d;
}

Deno.test("diffSteps judges bytes within the tolerance, counts, sizes, files and order exactly, and shows the rest", () => {
  const f = `${DIR}/0_10.tensor.swp`, m = `${DIR}/exp_avg-0_10.tensor.swp`;
  const rec = digest([
    phase(0, "STEP 1 optimizer-step"),
    open(1, f),
    io(2, 0, "read", f, 1000),
    open(3, m),
    io(4, 0, "read", m, 1000),
  ]);
  const near = digest([
    phase(0, "STEP 1 optimizer-step"),
    open(1, f),
    io(2, 5, "read", f, 1000),
    open(3, m),
    io(4, 5, "read", m, 1000),
  ]);
  const rows = diffSteps(rec.steps, near.steps, { bytesTolerance: 0.01, steps: [1] });
  assert.ok(rows.every((r) => r.ok !== false), "context numbers do not matter");
  assert.ok(rows.some((r) => r.ok === undefined && r.group === "iocbs per io_submit"));
  // 1.5 % more bytes, and the files the other way round
  const off = digest([
    phase(0, "STEP 1 optimizer-step"),
    open(1, m),
    io(2, 0, "read", m, 1000),
    open(3, f),
    io(4, 0, "read", f, 1015),
  ]);
  const bad = diffSteps(rec.steps, off.steps, { bytesTolerance: 0.01, steps: [1] }).filter((r) =>
    r.ok === false
  );
  assert.deepEqual(
    bad.map((r) => `${r.group} ${r.aspect}`).sort(),
    [
      "fp32 read bytes",
      "fp32 read request sizes",
      "optimizer-step: fp32 read bytes",
      "order of files on each aio context ",
    ].sort(),
  );
  const loose = diffSteps(rec.steps, off.steps, { bytesTolerance: 0.02, steps: [1] }).filter((r) =>
    r.ok === false
  );
  assert.ok(!loose.some((r) => r.aspect === "bytes"));
});

Deno.test("the digest counts how many aio contexts had requests in flight at each submit: the streams' interleaving", () => {
  const a = `${DIR}/0_10.tensor.swp`, b = `${DIR}/exp_avg-0_10.tensor.swp`;
  const reap = (t: number, ctx: number): TraceEvent => ({
    kind: "reap",
    t,
    thread: `aio${ctx}`,
    dur: 0,
    ctx,
    min: 1,
    max: 8,
    res: 1,
    results: [4096],
  });
  const d = digest([
    phase(0, "STEP 1 optimizer-step"),
    open(1, a),
    open(2, b),
    io(3, 0, "read", a, 4096),
    io(4, 1, "write", b, 4096), // while context 0's read is in flight
    reap(5, 0),
    reap(6, 1),
    io(7, 0, "read", a, 4096), // alone
  ]);
  assert.deepEqual(d.steps.get(1)!.busyContexts, { "1": 2, "2": 1 });
});
