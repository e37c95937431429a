/**
 * The read-back phase of `--verify` (fio's verify phase): once a job's
 * measured I/O is done, every block it wrote to its files is read again and
 * checked against the generation it last wrote, unmeasured. Without it a
 * write run would stamp headers that nothing reads.
 *
 * A gate lets a caller act between the write phase and the read-back (tests
 * corrupt a written file there): each job raises its flag when its writes are
 * done and waits for the gate to open.
 *
 * @module
 */

import type { JobPlan } from "../core/job_protocol.ts";
import { verifierOf } from "../core/verify.ts";
import { JobFiles } from "./_file.ts";
import { SyscallFailure } from "./types.ts";
import { allocIoBuffer, freeAligned, lastErrno, libc } from "../core/libc.ts";

/** A gate for `numjobs` jobs: slot 0 opens it, slot 1 + j says job j is done writing. */
export function newReadBackGate(numjobs: number): SharedArrayBuffer {
  return new SharedArrayBuffer((numjobs + 1) * 4);
}

/** Whether a job's read-back has anything to do: it wrote to files of its own run. */
function readsBack(plan: JobPlan): boolean {
  return plan.verify?.generations !== undefined && plan.rwmixread < 100 &&
    plan.target.paths.length > 0 && plan.target.existing !== true;
}

/**
 * Reads back and checks every block this job wrote (a generation above 0),
 * after passing the gate when there is one. Synchronous, in the job's Worker.
 *
 * @throws {VerifyError} at the first block that is not what was written.
 * @throws {SyscallFailure} when a read fails.
 */
export function readBackWritten(plan: JobPlan, stopped: () => boolean): void {
  const gate = plan.verify?.readBackGate;
  if (gate !== undefined) {
    const g = new Int32Array(gate);
    Atomics.store(g, plan.job + 1, 1);
    Atomics.notify(g, plan.job + 1);
    while (Atomics.load(g, 0) === 0 && !stopped()) Atomics.wait(g, 0, 0, 100);
  }
  if (!readsBack(plan) || stopped()) return;
  const v = verifierOf(plan)!;
  const gens = new Uint32Array(plan.verify!.generations!);
  const { bs } = plan;
  const files = JobFiles.open(plan);
  const buf = allocIoBuffer(bs, plan.alignment);
  const count = BigInt(bs);
  try {
    for (let b = 0; b < gens.length; b++) {
      if (gens[b] === 0) continue;
      if ((b & 1023) === 0 && stopped()) return;
      const offset = b * bs;
      const f = files.fileOf(offset);
      const at = files.offsetIn(offset);
      const path = files.paths[f]!;
      const n = libc().pread(files.fds[f]!, buf.pointer, count, BigInt(at));
      if (n !== bs) {
        const detail = n < 0 ? "(verify read-back)" : `(verify read-back: ${n} of ${bs})`;
        throw new SyscallFailure("pread", n < 0 ? lastErrno() : 0, path, at, detail);
      }
      v.checkRead(buf.bytes, path, at, offset);
    }
  } finally {
    files.close();
    freeAligned(buf);
  }
}

/**
 * Runner side of the gate: waits until every job is done writing (or the run
 * is stopping), calls `hook`, then opens the gate.
 */
export async function holdReadBack(
  gate: SharedArrayBuffer,
  numjobs: number,
  hook: () => void | Promise<void>,
  stopping: () => boolean,
): Promise<void> {
  const g = new Int32Array(gate);
  const written = () => {
    for (let j = 0; j < numjobs; j++) if (Atomics.load(g, j + 1) === 0) return false;
    return true;
  };
  while (!written() && !stopping()) await new Promise((r) => setTimeout(r, 10));
  try {
    if (!stopping()) await hook();
  } finally {
    Atomics.store(g, 0, 1);
    Atomics.notify(g, 0);
  }
}
