/**
 * What the workload tests check of the node-wide locks (flock under
 * /dev/shm): the holds a timeline shows, and that no two ranks hold one lock
 * at once.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { WorkloadResult } from "../schema/workload.ts";

/** A rank's hold of a lock: from its lock op's end (acquired) to its unlock op's start (before release). */
export interface LockHold {
  rank: number;
  lock: string;
  from: number;
  to: number;
}

/** The lock holds in a workload's timeline, checked: no two ranks hold one lock at once. */
export function exclusiveHolds(timeline: WorkloadResult["timeline"]): LockHold[] {
  const holds: LockHold[] = [];
  const open = new Map<string, number>();
  for (const [rank, , kind, label, , start, end] of timeline.spans) {
    const lock = label.slice(label.lastIndexOf(".") + 1);
    if (kind === "lock") open.set(`${rank}|${lock}`, end);
    if (kind === "unlock") {
      holds.push({ rank, lock, from: open.get(`${rank}|${lock}`)!, to: start });
    }
  }
  for (const a of holds) {
    for (const b of holds) {
      if (a.rank >= b.rank || a.lock !== b.lock) continue;
      assert.ok(a.to <= b.from || b.to <= a.from, `ranks ${a.rank} and ${b.rank} held ${a.lock}`);
    }
  }
  return holds;
}
