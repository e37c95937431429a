import assert from "node:assert/strict";
import { aggregateContention } from "./contention_aggregate.ts";
import {
  CONTENTION_DIRECTIONS,
  CONTENTION_SCHEMA,
  type ContentionGroup,
  type ContentionResult,
} from "../schema/contention.ts";

function group(
  direction: "read" | "write",
  bw: Record<string, number>,
  extra: Partial<ContentionGroup> = {},
): ContentionGroup {
  return {
    tiers: ["memory", "file"],
    key: "memory+file",
    direction,
    rw: { memory: direction, file: direction },
    status: "ok",
    bw_bytes: bw,
    slowdown: {},
    ramp_ms: 100,
    attempts: 1,
    windows_ms: { memory: null, file: null },
    overlap: 1,
    layout_clear: true,
    ...extra,
  };
}

function matrix(scale: number, groups: ContentionGroup[]): ContentionResult {
  return {
    schema: CONTENTION_SCHEMA,
    status: "ok",
    pattern: {
      rw: CONTENTION_DIRECTIONS,
      mixed: false,
      bs: 1 << 20,
      size: 4 << 20,
      iodepth: 8,
      runtime_ms: 500,
      ramp_ms: 0,
      tiers: {},
    },
    tiers: ["memory", "file"],
    alone: {
      memory: { read_bw_bytes: 1000 * scale, write_bw_bytes: 500 * scale },
      file: { read_bw_bytes: 100 * scale, write_bw_bytes: 50 * scale },
    },
    groups,
    slowdown: { read: {}, write: {} },
    self: {
      memory: {
        read_bw_bytes: 400 * scale,
        write_bw_bytes: 200 * scale,
        slowdown: { read: null, write: null },
        overlap: 0.9 + scale / 100,
      },
    },
  };
}

Deno.test("aggregateContention(): bandwidths summed over the processes, slowdowns from the sums, the least overlap", () => {
  const a = matrix(1, [
    group("read", { memory: 500, file: 100 }),
    group("write", { memory: 250, file: 25 }, { overlap: 0.95 }),
  ]);
  const b = matrix(3, [
    group("read", { memory: 1500, file: 50 }),
    group("write", { memory: 250, file: 25 }, { layout_clear: false }),
  ]);
  const c = aggregateContention([a, b]);
  assert.deepEqual(c.alone.memory, { read_bw_bytes: 4000, write_bw_bytes: 2000 });
  assert.deepEqual(c.groups[0]!.bw_bytes, { memory: 2000, file: 150 });
  assert.deepEqual(c.groups[0]!.slowdown, { memory: 2, file: 2.667 });
  assert.equal(c.slowdown.read.memory!.file, 2);
  assert.equal(c.slowdown.write.file!.memory, 4);
  assert.equal(c.groups[1]!.overlap, 0.95);
  assert.equal(c.groups[1]!.layout_clear, false);
  assert.deepEqual(c.self!.memory, {
    read_bw_bytes: 1600,
    write_bw_bytes: 800,
    slowdown: { read: 2.5, write: 2.5 },
    overlap: 0.91,
  });
});

Deno.test("aggregateContention(): a group failed on one process fails the sum with its error; only groups every process ran are kept", () => {
  const a = matrix(1, [
    group("read", { memory: 500, file: 100 }),
    group("write", { memory: 250, file: 25 }),
  ]);
  const b = {
    ...matrix(1, [group("read", { memory: 500, file: 0 }, { status: "failed", error: "EIO" })]),
    status: "failed" as const,
    error: "EIO",
  };
  const c = aggregateContention([a, b]);
  assert.equal(c.status, "failed");
  assert.equal(c.error, "EIO");
  assert.equal(c.groups.length, 1);
  assert.equal(c.groups[0]!.status, "failed");
  assert.equal(c.groups[0]!.error, "EIO");
  assert.equal(c.groups[0]!.bw_bytes.file, 100);
  assert.throws(() => aggregateContention([]), RangeError);
});
