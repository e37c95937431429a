import assert from "node:assert/strict";
import { contentionRunGroups } from "./contention_groups.ts";

Deno.test("contentionRunGroups: alone runs each a group; a group's members share one, a new one per direction, mixed and read+write groups whole", () => {
  const names = [
    "memory read alone",
    "memory write alone",
    "file read alone",
    "memory read memory+file",
    "file read memory+file",
    "memory write memory+file",
    "file write memory+file",
    "memory read memory:read+file:write",
    "file write memory:read+file:write",
    "memory write memory:write+file:read",
    "file read memory:write+file:read",
    "memory read memory read+write",
    "memory write memory read+write",
    "file read file read+write",
    "file write file read+write",
    "memory read memory+file read+write",
    "memory write memory+file read+write",
    "file read memory+file read+write",
    "file write memory+file read+write",
  ];
  assert.deepEqual(
    contentionRunGroups(names),
    [0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 9, 9],
  );
});

Deno.test("contentionRunGroups: a concurrency point is a group of its own, its readers and writers together when mixed", () => {
  const names = [
    "file read alone",
    "file read 1m 1p",
    "file write 1m 1p",
    "file read 1m 1p mixed",
    "file write 1m 1p mixed",
    "file read 1m 2p",
    "file read 2m 2p mixed",
    "file write 2m 2p mixed",
  ];
  assert.deepEqual(contentionRunGroups(names), [0, 1, 2, 3, 3, 4, 5, 5]);
});
