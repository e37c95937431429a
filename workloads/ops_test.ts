import assert from "node:assert/strict";
import { type OpInput, ProgramBuilder } from "./ops.ts";

const op = (stream: string, extra: Partial<OpInput> = {}): OpInput => ({
  kind: "compute",
  stream,
  iteration: 0,
  phase: "p",
  ms: 1,
  label: stream,
  ...extra,
});

Deno.test("ProgramBuilder.barrier waits for the last held op of every stream, background ops aside", () => {
  const b = new ProgramBuilder(0);
  const first = b.barrier({ iteration: 0, phase: "a" });
  const r = b.add(op("local:read"));
  const c = b.add(op("compute", { after: [r] }));
  const w = b.add(op("local:write", { after: [c] }));
  b.add(op("remote:write", { after: [w], background: true }));
  const next = b.barrier({ iteration: 1, phase: "b" });
  const ops = b.build().ops;
  assert.deepEqual(ops[first]!.after, []);
  // streams in the order they first appeared: compute (the first barrier) first
  assert.deepEqual(ops[next]!.after, [c, r, w]);
  assert.deepEqual(
    [ops[next]!.kind, ops[next]!.stream, ops[next]!.label, ops[next]!.phase],
    ["barrier", "compute", "b", "b"],
  );
  assert.equal(b.lastHeldOn("local:write"), w);
  assert.equal(b.lastHeldOn("remote:write"), undefined);
});

Deno.test("ProgramBuilder.lastHeld('phase') counts from the last barrier, 'program' from the start", () => {
  const b = new ProgramBuilder(0);
  b.barrier({ iteration: 0, phase: "a" });
  const r = b.add(op("local:read"));
  const open = b.barrier({ iteration: 0, phase: "b", after: [r] });
  assert.deepEqual(b.build().ops[open]!.after, [r]);
  const c = b.add(op("compute"));
  const g = b.add(op("gpu"));
  assert.deepEqual(b.lastHeld("phase"), [c, g]);
  assert.deepEqual(b.lastHeld(), [c, r, g]);
});
