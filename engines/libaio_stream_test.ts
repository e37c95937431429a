import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";

const TRANSFER = new URL("./testdata/aio_transfer.ts", import.meta.url).pathname;

Deno.test(needing(["strace"], {
  name:
    "AioChannel cuts an object smaller than bs × iodepth into bs requests, the last one shorter, as DeepSpeed's aio handle does",
  async fn() {
    const dir = await tempDirOnDisk();
    try {
      const trace = join(dir, "trace");
      const bytes = 2.5 * (1 << 20);
      const out = await new Deno.Command("strace", {
        args: [
          "-f",
          "-qq",
          "-e",
          "trace=io_submit",
          "-s",
          "4",
          "-o",
          trace,
          Deno.execPath(),
          "run",
          "--allow-all",
          TRANSFER,
          join(dir, "object"),
          String(bytes),
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const sizes = [...(await Deno.readTextFile(trace)).matchAll(/aio_nbytes=(\d+)/g)]
        .map((m) => Number(m[1]));
      assert.deepEqual(sizes.toSorted((a, b) => b - a), [1 << 20, 1 << 20, 1 << 19]);
      assert.equal((await Deno.stat(join(dir, "object"))).size, bytes);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
