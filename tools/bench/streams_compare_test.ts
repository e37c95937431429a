import assert from "node:assert/strict";
import { join } from "node:path";
import { sh, tempDirOnDisk, toolJson } from "../../tests/_helpers.ts";
import { needing } from "../../tests/_requirements.ts";
import { ioUringRefusal } from "../../engines/io_uring.ts";

const STREAMS_COMPARE = new URL("./streams_compare.ts", import.meta.url).pathname;
const decoder = new TextDecoder();
const REFUSED = ioUringRefusal();

Deno.test(needing(["root", "libaio"], {
  name:
    "bench:streams runs the workload with libaio and io_uring on a loop device, gives both the same paths, and leaves nothing behind" +
    (REFUSED === undefined ? "" : ` (ignored: ${REFUSED})`),
  ignore: REFUSED !== undefined,
  async fn() {
    const shm = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "t-streams-" });
    const tmp = await tempDirOnDisk();
    try {
      const output = join(tmp, "streams.json");
      const { text, doc } = await toolJson(
        STREAMS_COMPARE,
        [
          ...["--rounds", "1", "--iterations", "1", "--warmup", "0", "--scale", "0.001"],
          ...["--size", "512m", "--tmpfs-dir", shm],
        ],
        output,
        { TMPDIR: tmp },
      );
      assert.equal(doc.rounds.length, 1);
      const { libaio, io_uring } = doc.rounds[0].figures;
      assert.ok(Object.keys(libaio).length > 0, text);
      assert.deepEqual(Object.keys(io_uring).sort(), Object.keys(libaio).sort());
      for (const v of [...Object.values(libaio), ...Object.values(io_uring)]) {
        assert.ok((v as number) > 0);
      }
      assert.match(text, /\| update local:read /);
      assert.deepEqual([...Deno.readDirSync(shm)].map((e) => e.name), [], "backing file removed");
      const left = [...Deno.readDirSync(tmp)].map((e) => e.name).filter((n) =>
        n !== "streams.json"
      );
      assert.deepEqual(left, [], "mount point removed");
      const loops = await sh("losetup", ["-a"]);
      assert.ok(!loops.out.includes(shm), `a loop device is left:\n${loops.out}`);
    } finally {
      await Deno.remove(shm, { recursive: true });
      await Deno.remove(tmp, { recursive: true });
    }
  },
}));

Deno.test("bench:streams refuses a bad option in one line with exit status 2", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", STREAMS_COMPARE, "--rounds", "0"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  assert.equal(
    decoder.decode(out.stderr).trim(),
    'streams-compare: --rounds: "0" is not an integer from 1 to 99',
  );
});
