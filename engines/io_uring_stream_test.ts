import assert from "node:assert/strict";
import { join } from "node:path";
import { IoError } from "../core/errors.ts";
import { withTempDir } from "../tests/_helpers.ts";
import { ioUringRefusal } from "./io_uring.ts";
import { UringChannel } from "./io_uring_stream.ts";
import { AioChannel } from "./libaio_stream.ts";

const ignore = ioUringRefusal() !== undefined;

Deno.test({
  name: "UringChannel writes and reads an object of any size with O_DIRECT, as AioChannel does",
  ignore,
  fn: () =>
    withTempDir(async (dir) => {
      const bytes = 5 * 65536 + 3 * 4096; // not a multiple of bs: a short last request
      const uring = new UringChannel(4, 65536, true);
      const aio = new AioChannel(4, 65536, true);
      try {
        await uring.transfer(join(dir, "u"), true, bytes);
        await aio.transfer(join(dir, "a"), true, bytes);
        assert.equal((await Deno.stat(join(dir, "u"))).size, bytes);
        assert.equal((await Deno.stat(join(dir, "a"))).size, bytes);
        await uring.transfer(join(dir, "a"), false, bytes);
        await uring.transfer(join(dir, "u"), false, 4096); // smaller than one request
      } finally {
        uring.close();
        aio.close();
      }
    }),
});

Deno.test({
  name:
    "UringChannel and AioChannel move a slice of a file at an offset, as threads of one swap do",
  ignore,
  fn: () =>
    withTempDir(async (dir) => {
      const half = 3 * 65536;
      const uring = new UringChannel(4, 65536, true);
      const aio = new AioChannel(4, 65536, true);
      try {
        // two slices of one file, the second first: the file is whole either way
        await aio.transfer(join(dir, "a"), true, half, half);
        await uring.transfer(join(dir, "a"), true, half, 0);
        assert.equal((await Deno.stat(join(dir, "a"))).size, 2 * half);
        await aio.transfer(join(dir, "a"), false, half, half);
        await uring.transfer(join(dir, "a"), false, half, 0);
        // past the end: a short read, named with the absolute offset
        await assert.rejects(
          () => aio.transfer(join(dir, "a"), false, 65536, 2 * half),
          (e: unknown) => e instanceof IoError && e.message.includes(String(2 * half)),
        );
        await assert.rejects(() => aio.transfer(join(dir, "a"), false, 4096, 100), RangeError);
      } finally {
        uring.close();
        aio.close();
      }
    }),
});

Deno.test({
  name:
    "UringChannel names the call, errno and path of a failure: a missing file, a read past the end",
  ignore,
  fn: () =>
    withTempDir(async (dir) => {
      const ch = new UringChannel(2, 8192, false);
      try {
        await assert.rejects(
          ch.transfer(join(dir, "missing"), false, 8192),
          (e: unknown) => e instanceof IoError && e.message.includes("ENOENT"),
        );
        await Deno.writeFile(join(dir, "short"), new Uint8Array(4096));
        await assert.rejects(
          ch.transfer(join(dir, "short"), false, 16384),
          (e: unknown) =>
            e instanceof IoError && /read \(io_uring\)/.test(e.message) &&
            /short transfer/.test(e.message),
        );
      } finally {
        ch.close();
      }
    }),
});

Deno.test({
  name:
    "UringChannel and AioChannel end a transfer between requests when their stop hook throws, leaving the rest of the object unwritten",
  ignore,
  fn: () =>
    withTempDir(async (dir) => {
      const bytes = 1 << 20; // 256 requests of 4 KiB, two in flight
      for (const make of [UringChannel, AioChannel]) {
        let calls = 0;
        const stop = () => {
          if (++calls === 5) throw new Error("run aborted");
        };
        const ch = new make(2, 4096, true, stop);
        const file = join(dir, make.name);
        try {
          await assert.rejects(ch.transfer(file, true, bytes), /run aborted/);
          assert.equal(calls, 5, `${make.name}: stop was not asked before each batch`);
        } finally {
          ch.close(); // waits for what was in flight when it stopped
        }
        // four batches before the stop, each of at most two requests
        const size = (await Deno.stat(file)).size;
        assert.ok(size > 0 && size <= 4 * 2 * 4096, `${make.name}: ${size} bytes written`);
      }
    }),
});
