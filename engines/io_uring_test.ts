import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk, withShmDir } from "../tests/_helpers.ts";
import { driveEngine } from "../tests/_drive_engine.ts";
import { allocAligned, cString, freeAligned, libc, O } from "../core/libc.ts";
import type { IoUringOptions } from "../core/config.ts";
import type { JobPlan } from "../core/job_protocol.ts";
import { featureNames, OP, Uring } from "./_uring.ts";
import { UringQueue } from "./_uring_queue.ts";
import { fillRandom } from "./_file.ts";
import { IoUringEngine, ioUringRefusal, refusalMessage } from "./io_uring.ts";
import { SyscallFailure } from "./types.ts";

const REFUSED = ioUringRefusal();
const BS = 4096;
const EINVAL = 22;
const EBADF = 9;

/** A test that needs this kernel to allow io_uring. */
function uringTest(name: string, fn: () => Promise<void>): void {
  Deno.test({
    name: REFUSED === undefined ? name : `${name} (ignored: ${REFUSED})`,
    ignore: REFUSED !== undefined,
    fn,
  });
}

function openRing(entries: number, singleIssuer = false): Uring {
  return Uring.open({ entries, singleIssuer }, (syscall, errno) => {
    throw new Error(`${syscall} failed: errno ${errno}`);
  });
}

/** Waits for `count` completions; their results by user_data. */
function reap(ring: Uring, count: number): Map<number, number> {
  const out = new Map<number, number>();
  while (out.size < count) {
    if (ring.ready() === 0) assert.equal(ring.wait(1), 0);
    const n = ring.ready();
    for (let e = 0; e < n; e++) out.set(ring.cqeData(e), ring.cqeResult(e));
    ring.advance(n);
  }
  return out;
}

/** Moves `blocks` 4 KiB blocks between `fd` and `buf` (block i at offset i × 4 KiB), `depth` at a time. */
function transfer(
  ring: Uring,
  fd: number,
  write: boolean,
  buf: ReturnType<typeof allocAligned>,
  blocks: number,
  depth: number,
): void {
  for (let next = 0; next < blocks;) {
    const batch = Math.min(depth, blocks - next);
    for (let i = next; i < next + batch; i++) {
      ring.prepare(
        write ? OP.WRITE : OP.READ,
        fd,
        0,
        Number(buf.address) + i * BS,
        BS,
        i * BS,
        i,
        0,
      );
    }
    assert.equal(ring.submit(), batch);
    for (const [i, res] of reap(ring, batch)) assert.equal(res, BS, `block ${i}`);
    next += batch;
  }
}

uringTest(
  "a warming io_uring queue completes its requests in the submit and moves no byte; then it reads again",
  () =>
    withShmDir(async (dir) => {
      // tmpfs: a read is handed to an io-wq worker, so a real read is not ready at the submit.
      const path = join(dir, "f");
      const data = new Uint8Array(BS);
      fillRandom(data, 7);
      await Deno.writeFile(path, data);
      const fd = libc().open(cString(path), O.RDONLY, 0);
      const q = UringQueue.open(
        { entries: 2, singleIssuer: true, slotBytes: BS, alignment: BS },
        (syscall, errno) => {
          throw new Error(`${syscall} failed: errno ${errno}`);
        },
      );
      try {
        assert.ok(fd >= 0);
        q.bytes.fill(0xaa);
        q.warming(true);
        q.prepare(0, false, fd, 0, 0, BS);
        assert.equal(q.submit(), 1);
        assert.equal(q.reapReady(), 1, "ready without a wait");
        assert.equal(q.eventSlot(0), 0);
        assert.equal(q.eventResult(0), 0);
        q.release(1);
        assert.ok(q.bytes.every((b) => b === 0xaa), "no byte read");
        q.warming(false);
        q.prepare(1, false, fd, 0, 0, BS);
        assert.equal(q.submit(), 1);
        const n = q.reapReady() || q.getevents();
        assert.equal(n, 1);
        assert.equal(q.eventSlot(0), 1);
        assert.equal(q.eventResult(0), BS);
        q.release(1);
        assert.deepEqual(q.bytes.subarray(BS), data);
      } finally {
        q.close();
        libc().close(fd);
      }
    }),
);

for (const depth of [1, 8, 32]) {
  uringTest(
    `io_uring writes a pattern with O_DIRECT at depth ${depth} that Deno.readFile reads back`,
    async () => {
      const dir = await tempDirOnDisk();
      const path = join(dir, "f");
      const blocks = 64;
      const buf = allocAligned(blocks * BS, BS);
      const fd = libc().open(cString(path), O.RDWR | O.CREAT | O.DIRECT, 0o600);
      const ring = openRing(depth);
      try {
        assert.ok(fd >= 0);
        fillRandom(buf.bytes, depth);
        transfer(ring, fd, true, buf, blocks, depth);
        assert.deepEqual(await Deno.readFile(path), buf.bytes);
      } finally {
        assert.ok(ring.close());
        libc().close(fd);
        freeAligned(buf);
        await Deno.remove(dir, { recursive: true });
      }
    },
  );

  uringTest(`io_uring reads a known file with O_DIRECT at depth ${depth}`, async () => {
    const dir = await tempDirOnDisk();
    const path = join(dir, "f");
    const blocks = 64;
    const data = new Uint8Array(blocks * BS);
    fillRandom(data, 100 + depth);
    await Deno.writeFile(path, data);
    const buf = allocAligned(blocks * BS, BS);
    const fd = libc().open(cString(path), O.RDONLY | O.DIRECT, 0);
    const ring = openRing(depth);
    try {
      assert.ok(fd >= 0);
      buf.bytes.fill(0);
      transfer(ring, fd, false, buf, blocks, depth);
      assert.deepEqual(buf.bytes, data);
    } finally {
      assert.ok(ring.close());
      libc().close(fd);
      freeAligned(buf);
      await Deno.remove(dir, { recursive: true });
    }
  });
}

uringTest(
  "a single-issuer io_uring (DEFER_TASKRUN where the kernel has it) posts its completions to this thread's submits and waits",
  async () => {
    const dir = await tempDirOnDisk();
    const path = join(dir, "f");
    const blocks = 64;
    const data = new Uint8Array(blocks * BS);
    fillRandom(data, 77);
    await Deno.writeFile(path, data);
    const buf = allocAligned(blocks * BS, BS);
    const fd = libc().open(cString(path), O.RDONLY | O.DIRECT, 0);
    const plain = openRing(4);
    const ring = openRing(8, true);
    try {
      assert.ok(fd >= 0);
      assert.equal(plain.deferTaskrun, false);
      buf.bytes.fill(0);
      transfer(ring, fd, false, buf, blocks, 8);
      assert.deepEqual(buf.bytes, data);
    } finally {
      assert.ok(ring.close());
      assert.ok(plain.close());
      libc().close(fd);
      freeAligned(buf);
      await Deno.remove(dir, { recursive: true });
    }
  },
);

uringTest(
  "io_uring: each failed request reports its own errno, beside requests that succeed",
  async () => {
    const dir = await tempDirOnDisk();
    const path = join(dir, "f");
    await Deno.writeFile(path, new Uint8Array(4 * BS).fill(7));
    const buf = allocAligned(4 * BS, BS);
    const fd = libc().open(cString(path), O.RDONLY | O.DIRECT, 0);
    const ring = openRing(4);
    try {
      const at = Number(buf.address);
      ring.prepare(OP.READ, fd, 0, at, BS, 0, 1, 0);
      ring.prepare(OP.READ, fd, 0, at + BS + 1, BS, BS, 2, 0); // misaligned buffer under O_DIRECT
      ring.prepare(OP.WRITE, fd, 0, at + 2 * BS, BS, 2 * BS, 3, 0); // a write on a read-only fd
      ring.prepare(OP.READ, fd, 0, at + 3 * BS, BS, 3 * BS, 4, 0);
      assert.equal(ring.submit(), 4);
      const res = reap(ring, 4);
      assert.deepEqual([...res].sort((a, b) => a[0] - b[0]), [
        [1, BS],
        [2, -EINVAL],
        [3, -EBADF],
        [4, BS],
      ]);
    } finally {
      assert.ok(ring.close());
      libc().close(fd);
      freeAligned(buf);
      await Deno.remove(dir, { recursive: true });
    }
  },
);

/** A write or read plan of one job on `path`, io_size = size. */
function planOf(
  path: string,
  rw: "write" | "read",
  depth: number,
  ioUring: IoUringOptions,
  existing = false,
): JobPlan {
  return {
    job: 0,
    tier: "file",
    target: {
      paths: [path],
      regionOffset: 0,
      layout: existing ? "none" : "fallocate",
      ...(existing ? { existing: true } : {}),
    },
    engine: "io_uring",
    direct: true,
    rw,
    rwmixread: rw === "read" ? 100 : 0,
    bs: BS,
    size: 64 * BS,
    ioSize: 64 * BS,
    iodepth: depth,
    seed: 5,
    alignment: BS,
    endFsync: false,
    ioUring,
  };
}

const PLAIN = { fixedbufs: false, registerfiles: false, sqthreadPoll: false };
const VARIANTS: [string, IoUringOptions][] = [
  ["", PLAIN],
  [" with fixedbufs", { ...PLAIN, fixedbufs: true }],
  [" with registerfiles", { ...PLAIN, registerfiles: true }],
  [" with sqthread_poll", { ...PLAIN, sqthreadPoll: true }],
  [" with all three", { fixedbufs: true, registerfiles: true, sqthreadPoll: true }],
];

for (const [label, options] of VARIANTS) {
  for (const depth of [1, 8, 32]) {
    uringTest(
      `IoUringEngine${label} at depth ${depth} writes every block from its buffers with O_DIRECT`,
      async () => {
        const dir = await tempDirOnDisk();
        const path = join(dir, "f");
        try {
          const plan = planOf(path, "write", depth, options);
          const rt = driveEngine(plan, IoUringEngine.open);
          assert.equal(rt.write.lat.totalCount, 64);
          assert.equal(rt.write.slat.totalCount, 64);
          // The engine's slots hold fillRandom(seed ^ 0xa5a5 ^ job); each block is one slot's bytes.
          const slots = new Uint8Array(depth * BS);
          fillRandom(slots, plan.seed ^ 0xa5a5 ^ plan.job);
          const chunks = new Set<string>();
          for (let s = 0; s < depth; s++) chunks.add(slots.subarray(s * BS, (s + 1) * BS).join());
          const file = await Deno.readFile(path);
          assert.equal(file.length, 64 * BS);
          for (let b = 0; b < 64; b++) {
            assert.ok(chunks.has(file.subarray(b * BS, (b + 1) * BS).join()), `block ${b}`);
          }
        } finally {
          await Deno.remove(dir, { recursive: true });
        }
      },
    );
  }
  uringTest(`IoUringEngine${label} reads a file at depth 32 and counts every block`, async () => {
    const dir = await tempDirOnDisk();
    const path = join(dir, "f");
    try {
      const data = new Uint8Array(64 * BS);
      fillRandom(data, 9);
      await Deno.writeFile(path, data);
      const rt = driveEngine(planOf(path, "read", 32, options, true), IoUringEngine.open);
      assert.equal(rt.read.lat.totalCount, 64);
      assert.equal(rt.write.lat.totalCount, 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

uringTest(
  "IoUringEngine reports a failed request's own errno, file and offset (EBADF)",
  async () => {
    const dir = await tempDirOnDisk();
    const path = join(dir, "f");
    try {
      await Deno.writeFile(path, new Uint8Array(64 * BS));
      // An existing file is opened read-only: every write completes with -EBADF.
      const plan = planOf(path, "write", 8, PLAIN, true);
      assert.throws(() => driveEngine(plan, IoUringEngine.open), (e: unknown) => {
        assert.ok(e instanceof SyscallFailure);
        assert.equal(e.syscall, "write (io_uring)");
        assert.equal(e.errno, EBADF);
        assert.equal(e.path, path);
        assert.equal(typeof e.offset, "number");
        return true;
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

Deno.test("io_uring's refusal names the sysctl kernel.io_uring_disabled and its value", () => {
  const line = refusalMessage(1, "2");
  assert.match(line, /io_uring_setup failed with EPERM/);
  assert.match(line, /sysctl kernel\.io_uring_disabled = 2 \(2: off for everyone\)/);
  assert.match(line, /--engine libaio/);
  assert.doesNotMatch(line, /\n/);
  assert.match(refusalMessage(38, undefined), /no io_uring.*kernel\.io_uring_disabled is absent/);
});

Deno.test("featureNames decodes io_uring_params.features by IORING_FEAT_ name, unknown bits by number", () => {
  assert.deepEqual(featureNames(0), []);
  assert.deepEqual(featureNames(1 | (1 << 8)), ["SINGLE_MMAP", "EXT_ARG"]);
  assert.deepEqual(featureNames(1 << 30), ["BIT30"]);
});
