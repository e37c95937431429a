import assert from "node:assert/strict";
import { join } from "node:path";
import { startedRuntime } from "../tests/_drive_engine.ts";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import type { JobPlan } from "../core/job_protocol.ts";
import { loadChecksum, VerifyError } from "../core/verify.ts";
import { AioQueue } from "./_aio_queue.ts";
import { AsyncEngine, blockKeys } from "./_async_engine.ts";
import type { KernelQueue } from "./_kernel_queue.ts";
import { SyscallFailure } from "./types.ts";
import { readBackWritten } from "./verify_readback.ts";

// the engine verifies on this thread, as in a job Worker that verifies
await loadChecksum();

const BS = 4096;
const BLOCKS = 16;
const DEPTH = 8;

/**
 * A real libaio queue that keeps one write out of the kernel as long as
 * anything else is in flight, as a slow device may: the `nth` write of
 * `offset` (1 for the first) lands after whatever the job wrote meanwhile.
 */
class SlowWrite implements KernelQueue {
  readonly #q: AioQueue;
  readonly #offset: number;
  #nth: number;
  #held: Parameters<KernelQueue["prepare"]> | undefined;
  #state: "waiting" | "held" | "sent" = "waiting";
  #took = false;
  #inKernel = 0;

  constructor(q: AioQueue, offset: number, nth: number) {
    this.#q = q;
    this.#offset = offset;
    this.#nth = nth;
  }
  get calls() {
    return this.#q.calls;
  }
  get timedWaits() {
    return this.#q.timedWaits;
  }
  get depth() {
    return this.#q.depth;
  }
  get slotBytes() {
    return this.#q.slotBytes;
  }
  get bytes() {
    return this.#q.bytes;
  }
  address(slot: number): bigint {
    return this.#q.address(slot);
  }
  prepare(...args: Parameters<KernelQueue["prepare"]>): void {
    const [, write, , , offset] = args;
    if (this.#state === "waiting" && write && offset === this.#offset && --this.#nth === 0) {
      this.#held = args;
      this.#state = "held";
      this.#took = true;
      return;
    }
    this.#q.prepare(...args);
  }
  submit(): number {
    if (this.#took) {
      this.#took = false;
      return 1; // the engine prepares and submits one I/O at a time here
    }
    const rc = this.#q.submit();
    if (rc > 0) this.#inKernel += rc;
    return rc;
  }
  submitAsync(): Promise<number> {
    return Promise.resolve(this.submit());
  }
  /** Sends the held write into the kernel once its time has come. */
  #maybeSend(): void {
    if (this.#state !== "held" || this.#inKernel > 0) return;
    this.#state = "sent";
    this.#q.prepare(...this.#held!);
    assert.equal(this.#q.submit(), 1);
    this.#inKernel++;
  }
  reapReady(): number {
    this.#maybeSend();
    return this.#q.reapReady();
  }
  getevents(timeoutNs?: number): number {
    this.#maybeSend();
    return this.#q.getevents(timeoutNs);
  }
  geteventsAsync(timeoutNs?: number): Promise<number> {
    this.#maybeSend();
    return this.#q.geteventsAsync(timeoutNs);
  }
  eventSlot(e: number): number {
    return this.#q.eventSlot(e);
  }
  eventResult(e: number): number {
    return this.#q.eventResult(e);
  }
  release(n: number): void {
    this.#q.release(n);
    this.#inKernel -= n;
  }
  close(): void {
    this.#q.close();
  }
  /** Whether the held write went to the kernel. */
  get sent(): boolean {
    return this.#state === "sent";
  }
}

/** libaio's engine over a {@linkcode SlowWrite} queue. */
class SlowWriteEngine extends AsyncEngine {
  static openSlow(plan: JobPlan, offset: number, nth: number): [SlowWriteEngine, SlowWrite] {
    let slow: SlowWrite | undefined;
    const { files, queue } = AsyncEngine.openParts(plan, (files) => {
      const q = AioQueue.open(plan.iodepth, plan.bs, plan.alignment, (syscall, errno) => {
        throw new SyscallFailure(syscall, errno, files.paths[0]!);
      });
      return slow = new SlowWrite(q, offset, nth);
    });
    return [new SlowWriteEngine(plan, files, queue), slow!];
  }
}

/** A --verify write job of 4 passes over a 16-block file, at depth 8, O_DIRECT. */
function planOf(path: string): JobPlan {
  return {
    job: 0,
    tier: "file",
    target: { paths: [path], regionOffset: 0, layout: "fallocate" },
    engine: "libaio",
    direct: true,
    rw: "write",
    rwmixread: 0,
    bs: BS,
    size: BLOCKS * BS,
    ioSize: 4 * BLOCKS * BS,
    iodepth: DEPTH,
    seed: 9,
    alignment: BS,
    endFsync: false,
    verify: { runId: "overlap", generations: new SharedArrayBuffer(BLOCKS * 4) },
  };
}

Deno.test(
  "--verify: a write of a block still in flight waits for it, so a slow older write cannot land last and read back one generation behind",
  async () => {
    const dir = await tempDirOnDisk();
    try {
      const plan = planOf(join(dir, "f"));
      const rt = startedRuntime(plan);
      // The last block's third write stays out of the kernel while anything else is in
      // flight: past its fourth and last write, unless the engine waits for it first.
      const [engine, slow] = SlowWriteEngine.openSlow(plan, (BLOCKS - 1) * BS, 3);
      try {
        engine.run(rt);
      } finally {
        engine.close();
        rt.finish();
      }
      assert.ok(slow.sent);
      assert.equal(rt.write.lat.totalCount, 4 * BLOCKS);
      const gens = new Uint32Array(plan.verify!.generations!);
      assert.deepEqual([...gens], Array(BLOCKS).fill(4));
      // before, the block's next write went out meanwhile, and the held one overwrote it:
      // verify failed with the generation one behind
      try {
        readBackWritten(plan, () => false);
      } catch (e) {
        if (e instanceof VerifyError) assert.fail(e.message);
        throw e;
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("blockKeys names each block an I/O covers, per file", () => {
  assert.deepEqual(blockKeys(4096, 1, 0, 0, 4096), [0]);
  assert.deepEqual(blockKeys(4096, 1, 0, 4096, 8192), [1, 2]);
  assert.deepEqual(blockKeys(4096, 1, 0, 4095, 2), [0, 1]);
  // two files: block 3 of file 1 is not block 3 of file 0
  assert.deepEqual(blockKeys(4096, 2, 1, 3 * 4096, 4096), [7]);
  assert.deepEqual(blockKeys(4096, 2, 0, 3 * 4096, 4096), [6]);
});
