import assert from "node:assert/strict";
import { parseJobOptions } from "../core/config.ts";
import { ioUringRefusal } from "../engines/io_uring.ts";
import { withTempDir } from "../tests/_helpers.ts";
import { FileTier } from "../tiers/mod.ts";
import { runJob } from "./runner.ts";

const REFUSED = ioUringRefusal();

for (
  const [label, flags] of [
    ["", {}],
    [" --fixedbufs --registerfiles", { fixedbufs: true, registerfiles: true }],
    [" --sqthread-poll", { sqthreadPoll: true }],
  ] as const
) {
  Deno.test({
    name: `runJob: --engine io_uring${label} writes and reads back every block with --verify ` +
      "at depth 1, 8 and 32" + (REFUSED === undefined ? "" : ` (ignored: ${REFUSED})`),
    ignore: REFUSED !== undefined,
    fn: () =>
      withTempDir(async (dir) => {
        await using tier = new FileTier({ kind: "file", path: dir });
        await tier.setup();
        for (const iodepth of ["1", "8", "32"]) {
          for (const rw of ["write", "randread"]) {
            const job = parseJobOptions({
              tier: `file:${dir}`,
              rw,
              bs: "4k",
              size: "1m",
              iodepth,
              engine: "io_uring",
              direct: true,
              verify: true,
              ...flags,
            });
            const r = await runJob(tier, job);
            assert.equal(r.status, "ok", r.error);
            const moved = rw === "write" ? r.write : r.read;
            assert.equal(moved.total_ios, 256, `${rw} d${iodepth}`);
            assert.equal(r.options.engine, "io_uring");
            assert.match(r.options.engine_impl, /^raw io_uring syscalls/);
            assert.ok(r.options.io_uring, "io_uring options in the result");
            assert.equal(r.options.io_uring.fixedbufs, "fixedbufs" in flags);
            assert.equal(r.options.io_uring.sqthread_poll, "sqthreadPoll" in flags);
            assert.ok(r.options.io_uring.features.length > 0);
          }
        }
      }),
  });
}
