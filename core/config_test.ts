import assert from "node:assert/strict";
import { jobOptionsOf, parseJobOptions, parseTierSpec } from "./config.ts";
import { ConfigError } from "./errors.ts";

function configError(fn: () => unknown): ConfigError {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  if (!(caught instanceof ConfigError)) throw new Error(`expected ConfigError, got ${caught}`);
  return caught;
}

Deno.test("parseTierSpec() reads file:, memory: and null: forms", () => {
  assert.deepEqual(parseTierSpec("file:/data"), { kind: "file", path: "/data" });
  assert.deepEqual(parseTierSpec("memory:"), { kind: "memory", path: "/dev/shm" });
  assert.deepEqual(parseTierSpec("memory:/mnt/tmp"), { kind: "memory", path: "/mnt/tmp" });
  assert.deepEqual(parseTierSpec("null:"), { kind: "null", path: "" });
});

Deno.test("parseTierSpec() names the allowed forms for an unknown tier", () => {
  const e = configError(() => parseTierSpec("nvme:/x"));
  assert.deepEqual(e.field, "tier");
  assert.match(e.message, /allowed: null:, memory:.*file:DIR/);
  assert.throws(() => parseTierSpec("file:"), ConfigError);
});

Deno.test("parseJobOptions() resolves fio's defaults", () => {
  const job = parseJobOptions({ tier: "memory:" });
  assert.deepEqual(job.rw, "read");
  assert.deepEqual(job.bs, 4096);
  assert.deepEqual(job.iodepth, 1);
  assert.deepEqual(job.numjobs, 1);
  assert.deepEqual(job.engine, "psync");
  assert.deepEqual(job.direct, false);
  assert.deepEqual(job.runtimeMs, undefined);
  assert.deepEqual(job.ioSize, job.size);
  assert.deepEqual(job.rwmixread, 100);
});

Deno.test("parseJobOptions() reads the issue's CLI form", () => {
  const job = parseJobOptions({
    tier: "file:/tmp",
    rw: "read",
    bs: "1m",
    iodepth: "8",
    numjobs: "1",
    engine: "libaio",
    direct: true,
    size: "512m",
    runtime: "5",
    ramp: "1",
  });
  assert.deepEqual(job.bs, 1048576);
  assert.deepEqual(job.size, 512 * 1048576);
  assert.deepEqual(job.runtimeMs, 5000);
  assert.deepEqual(job.rampMs, 1000);
  assert.deepEqual(job.iodepth, 8);
});

Deno.test("parseJobOptions() rejects an unknown rw and lists the allowed values", () => {
  const e = configError(() => parseJobOptions({ tier: "null:", rw: "readwrite" }));
  assert.deepEqual(e.field, "rw");
  assert.match(e.message, /allowed: read, write, randread, randwrite, rw, randrw/);
});

Deno.test("parseJobOptions() rejects a bad size and names the field", () => {
  const e = configError(() => parseJobOptions({ tier: "null:", bs: "12q" }));
  assert.deepEqual(e.field, "bs");
  assert.match(e.message, /"12q" is not a size/);
  assert.deepEqual(
    configError(() => parseJobOptions({ tier: "null:", size: "lots" })).field,
    "size",
  );
  assert.deepEqual(
    configError(() => parseJobOptions({ tier: "null:", bs: "8m", size: "4m" })).field,
    "size",
  );
});

Deno.test("parseJobOptions() refuses iodepth above 1 with psync", () => {
  const e = configError(() => parseJobOptions({ tier: "memory:", iodepth: "8" }));
  assert.deepEqual(e.field, "iodepth");
  assert.match(e.message, /--engine libaio/);
});

Deno.test("parseJobOptions() lets chooseEngine pick the engine for iodepth above 1 when none is named", () => {
  const choose = (iodepth: number) => ({
    chosen: "libaio" as const,
    why: `--iodepth ${iodepth} without --engine: io_uring_setup failed with EPERM, libaio instead`,
  });
  const job = parseJobOptions({ tier: "file:/tmp", iodepth: "8" }, choose);
  assert.equal(job.engine, "libaio");
  assert.deepEqual(job.engineChoice, choose(8));
  assert.equal(job.ioUring, undefined);
  const uring = parseJobOptions(
    { tier: "memory:", iodepth: "4" },
    () => ({ chosen: "io_uring", why: "available" }),
  );
  assert.equal(uring.engine, "io_uring");
  assert.deepEqual(uring.ioUring, { fixedbufs: false, registerfiles: false, sqthreadPoll: false });
  // iodepth 1 stays psync; a named engine is kept; the chooser is not asked for either
  const never = () => {
    throw new Error("not asked");
  };
  const one = parseJobOptions({ tier: "file:/tmp" }, never);
  assert.equal(one.engine, "psync");
  assert.equal(one.engineChoice, undefined);
  const named = parseJobOptions({ tier: "file:/tmp", iodepth: "8", engine: "libaio" }, never);
  assert.equal(named.engine, "libaio");
  assert.equal(named.engineChoice, undefined);
  assert.equal(parseJobOptions({ tier: "null:", iodepth: "8" }, never).engineChoice, undefined);
  // an explicit psync at depth is still refused
  assert.equal(
    configError(() => parseJobOptions({ tier: "file:/tmp", iodepth: "8", engine: "psync" }, never))
      .field,
    "iodepth",
  );
});

Deno.test("parseJobOptions() rejects out-of-range integers", () => {
  assert.deepEqual(
    configError(() => parseJobOptions({ tier: "null:", numjobs: "0" })).field,
    "numjobs",
  );
  assert.deepEqual(
    configError(() => parseJobOptions({ tier: "null:", rwmixread: "101" })).field,
    "rwmixread",
  );
  assert.deepEqual(
    configError(() => parseJobOptions({ tier: "null:", runtime: "0" })).field,
    "runtime",
  );
  assert.deepEqual(
    configError(() => parseJobOptions({ tier: "null:", engine: "spdk" })).message,
    "--engine: unknown value (allowed: psync, libaio, io_uring)",
  );
});

Deno.test("parseJobOptions() keeps io_uring's options for --engine io_uring and refuses them elsewhere", () => {
  const job = parseJobOptions({ tier: "file:/x", engine: "io_uring", fixedbufs: true });
  assert.deepEqual(job.ioUring, { fixedbufs: true, registerfiles: false, sqthreadPoll: false });
  assert.equal(parseJobOptions({ tier: "file:/x", engine: "libaio" }).ioUring, undefined);
  assert.deepEqual(
    configError(() => parseJobOptions({ tier: "file:/x", engine: "libaio", sqthreadPoll: true }))
      .message,
    "--sqthread-poll: applies to --engine io_uring only",
  );
  assert.equal(
    configError(() => parseJobOptions({ tier: "file:/x", registerfiles: true })).field,
    "registerfiles",
  );
});

Deno.test("parseJobOptions() rounds size down to a multiple of bs", () => {
  assert.deepEqual(parseJobOptions({ tier: "null:", bs: "4k", size: "10k" }).size, 8192);
});

Deno.test("parseJobOptions() refuses I/O buffers beyond half of the machine's memory, naming the three knobs", () => {
  const memory = Deno.systemMemoryInfo().total;
  // 256 MiB requests (the largest bs), as many in flight as make more than half of memory
  const depth = Math.floor(memory / 2 / 2 ** 28) + 1;
  assert.throws(
    () => parseJobOptions({ tier: "null:", rw: "read", bs: "256m", iodepth: String(depth) }),
    (e: unknown) =>
      e instanceof ConfigError && e.field === "iodepth" &&
      /bs × iodepth × numjobs = .* of I\/O buffers, more than half of this machine's/.test(
        e.message,
      ) && /a smaller --bs, --iodepth or --numjobs/.test(e.message),
  );
  // one less request in flight, split over two jobs, fits
  const half = Math.max(1, Math.floor((depth - 1) / 2));
  const ok = parseJobOptions({
    tier: "null:",
    rw: "read",
    bs: "256m",
    iodepth: String(half),
    numjobs: "2",
    size: "256m",
  });
  assert.equal(ok.iodepth, half);
});

Deno.test("jobOptionsOf() takes numbers already read as bytes, ms and counts, the same job as their text gives, refused with the same line", () => {
  const values = jobOptionsOf({
    tier: "memory:",
    bs: 8192,
    size: 1048576,
    ioSize: 2097152,
    ramp: 500,
    runtime: 2000,
    iodepth: 4,
    engine: "libaio",
    numjobs: 2,
    logAvgMsec: 250,
    rate: 1048576,
  });
  const text = parseJobOptions({
    tier: "memory:",
    bs: "8192",
    size: "1048576",
    ioSize: "2097152",
    ramp: "500ms",
    runtime: "2000ms",
    iodepth: "4",
    engine: "libaio",
    numjobs: "2",
    logAvgMsec: "250",
    rate: "1048576",
  });
  assert.deepEqual(values, text);
  assert.deepEqual(values.rampMs, 500);
  assert.deepEqual(values.runtimeMs, 2000);
  const refused = (f: () => unknown) => configError(f).message;
  assert.equal(
    refused(() => jobOptionsOf({ tier: "memory:", iodepth: 5000, engine: "libaio" })),
    refused(() => parseJobOptions({ tier: "memory:", iodepth: "5000", engine: "libaio" })),
  );
  assert.equal(
    refused(() => jobOptionsOf({ tier: "memory:", size: 2 ** 54 })),
    refused(() => parseJobOptions({ tier: "memory:", size: String(2 ** 54) })),
  );
  assert.match(
    refused(() => jobOptionsOf({ tier: "memory:", numjobs: 1.5 })),
    /"1.5" is not an integer/,
  );
  assert.match(
    refused(() => jobOptionsOf({ tier: "memory:", ramp: -1 })),
    /"-1ms" is not a duration/,
  );
});
