/**
 * What a rank's streams rely on under --verify: no two ops of a program
 * that may run at once touch overlapping bytes of one object with one of
 * them a write. A stream keeps its own requests apart (engines/_stream.ts
 * cuts an object into disjoint requests and finishes one op before the
 * next); between streams only the program's order (`after`, and each
 * stream's own sequence) keeps a read from checking a write still in
 * flight, or two writes from landing in either order.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../tests/_helpers.ts";
import type { WorkloadOptions } from "./common.ts";
import { parseDeepSpeedConfig } from "./deepspeed_config.ts";
import type { Op, RankProgram } from "./ops.ts";
import { WORKLOADS } from "./registry.ts";
import { resolveSetup } from "./setup.ts";
import { parseModelTensors } from "./model_tensors.ts";
import { zeroInfinity } from "./zero_infinity.ts";
import { ConfigError } from "../core/errors.ts";

/**
 * Per op, the ops that finish before it starts — its stream's earlier ops
 * and its `after`, transitively — as a bit set over op ids.
 */
function before(ops: readonly Op[]): Uint32Array[] {
  const words = Math.ceil(ops.length / 32);
  const last = new Map<string, number>();
  const out: Uint32Array[] = [];
  for (const op of ops) {
    const set = new Uint32Array(words);
    const prev = last.get(op.stream);
    last.set(op.stream, op.id);
    for (const d of prev === undefined ? op.after : [prev, ...op.after]) {
      set[d >>> 5]! |= 1 << (d & 31);
      const from = out[d]!;
      for (let k = 0; k < words; k++) set[k]! |= from[k]!;
    }
    out[op.id] = set;
  }
  return out;
}

/** The pairs of ops of `program` that may run at once on overlapping bytes of an object, one a write. */
function overlaps(program: RankProgram): string[] {
  const earlier = before(program.ops);
  const ordered = (a: number, b: number) => (earlier[b]![a >>> 5]! & (1 << (a & 31))) !== 0;
  const byObject = new Map<string, Op[]>();
  for (const op of program.ops) {
    if ((op.kind !== "read" && op.kind !== "write") || op.path === undefined) continue;
    const key = `${op.path}:${op.object}`;
    const list = byObject.get(key);
    if (list) list.push(op);
    else byObject.set(key, [op]);
  }
  const found: string[] = [];
  for (const [key, list] of byObject) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length; j++) {
        const a = list[i]!, b = list[j]!;
        if (a.kind === "read" && b.kind === "read") continue;
        const a0 = a.offset ?? 0, b0 = b.offset ?? 0;
        if (a0 >= b0 + b.bytes || b0 >= a0 + a.bytes) continue;
        if (ordered(Math.min(a.id, b.id), Math.max(a.id, b.id))) continue;
        found.push(
          `${key}: ${a.kind} ${a.label} (${a.stream}) and ${b.kind} ${b.label} (${b.stream})`,
        );
      }
    }
  }
  return found;
}

Deno.test("the check finds a write and a read of one object's bytes on two streams with no order between them", () => {
  const op = (
    id: number,
    kind: "read" | "write",
    stream: string,
    offset: number,
    after: number[],
  ) =>
    ({
      id,
      kind,
      stream,
      after,
      iteration: 0,
      phase: "p",
      path: "local",
      object: "o",
      bytes: 8192,
      offset,
      label: `${kind}${id}`,
    }) as Op;
  const program = (ops: Op[]): RankProgram => ({ rank: 0, ops, initial: [] });
  assert.equal(
    overlaps(program([op(0, "write", "a", 0, []), op(1, "read", "b", 4096, [])])).length,
    1,
  );
  // ordered by after, by the stream, or apart in the object: none
  assert.deepEqual(
    overlaps(program([op(0, "write", "a", 0, []), op(1, "read", "b", 4096, [0])])),
    [],
  );
  assert.deepEqual(overlaps(program([op(0, "write", "a", 0, []), op(1, "write", "a", 0, [])])), []);
  assert.deepEqual(
    overlaps(program([op(0, "write", "a", 0, []), op(1, "write", "b", 8192, [])])),
    [],
  );
});

const setup = resolveSetup({ model: "7b", scale: 0.001, iterations: 3, warmup: 1 });
const paths = { host: "host", local: ["local", "local2"], remote: "remote" };
const VARIANTS: Record<string, WorkloadOptions> = {
  "defaults": {},
  "threads 4": { threads: 4 },
  "gradients swapped": { swapGradients: true },
  "optimizer offloaded": { offloadOptimizer: true },
  "pipelined": { pipeline: true },
  "half remote": { remoteRatio: 0.5 },
  "2 buffers": { bufferCount: 2 },
};

for (const w of WORKLOADS) {
  Deno.test(`${w.name}: no two ops that may run at once touch the same bytes of an object, one a write`, () => {
    let built = 0;
    for (const [name, options] of Object.entries(VARIANTS)) {
      let program;
      try {
        program = w.build(setup, paths, options);
      } catch (e) {
        if (e instanceof ConfigError) continue; // an option this workload refuses
        throw e;
      }
      built++;
      for (const rank of program.ranks) {
        assert.deepEqual(overlaps(rank), [], `${name}, rank ${rank.rank}`);
      }
    }
    assert.ok(built > 0);
  });
}

Deno.test("zero-infinity under each DeepSpeed config it was checked against: no two ops that may run at once touch the same bytes", async () => {
  const dirs = ["recordings", "more"].map((d) => join(ROOT, "trace", "testdata", "deepspeed", d));
  let n = 0;
  for (const dir of dirs) {
    const files = [...Deno.readDirSync(dir)].map((f) => f.name);
    const model = files.find((f) => /^model-.*\.json$/.test(f))!;
    const tensors = parseModelTensors(JSON.parse(await Deno.readTextFile(join(dir, model))), model);
    for (const name of files.filter((f) => /^ds_config.*\.json$/.test(f))) {
      const json = JSON.parse(await Deno.readTextFile(join(dir, name)));
      const deepspeed = parseDeepSpeedConfig(json, name);
      const s = resolveSetup({
        tensors: { label: model, list: tensors.tensors },
        ranksPerNode: 1,
        subgroupSize: deepspeed.subGroupSize,
        scale: 1,
        iterations: 2,
        warmup: 1,
      });
      let program;
      try {
        program = zeroInfinity.build(s, { local: ["local"] }, { deepspeed });
      } catch (e) {
        if (e instanceof ConfigError) continue; // a config DeepSpeed itself failed on
        throw e;
      }
      for (const rank of program.ranks) {
        assert.deepEqual(overlaps(rank), [], `${name}, rank ${rank.rank}`);
      }
      n++;
    }
  }
  assert.ok(n >= 10, String(n));
});
