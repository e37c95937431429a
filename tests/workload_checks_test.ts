/**
 * `--verify` and `--timeout` under the training workloads (and so under
 * replay, which runs one): every object a rank reads back is checked byte
 * for byte against the write that last covered it, a byte corrupted on its
 * way back is named at its offset, and a storage that stops answering fails
 * the rank after --timeout instead of hanging the run.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { partialPathOf } from "../core/output_file.ts";
import type { ResultDocument } from "../schema/result.ts";
import { runCli, scratchLeft, spawnCli, withShmDir, withTempDir } from "./_helpers.ts";
import { assertOneLine } from "./_cli.ts";
import { needing } from "./_requirements.ts";
import { faultFs } from "./_faultfs.ts";

const SMALL = ["--model", "7b", "--scale", "0.001", "--iterations", "2", "--quiet"];

/** Bytes every `*:read` of the workload moved, warm-up included. */
function bytesRead(doc: ResultDocument): number {
  let n = 0;
  for (const it of doc.workload!.iterations) {
    for (const phase of Object.values(it.phases)) {
      for (const [k, io] of Object.entries(phase.io)) if (k.endsWith(":read")) n += io.bytes;
    }
  }
  return n;
}

Deno.test("tierbench workload --verify checks every byte read back, on every engine and path", async () => {
  await withTempDir(async (dir) => {
    await withShmDir(async (shm) => {
      const remote = join(dir, "remote");
      await Deno.mkdir(remote);
      for (
        const [name, engine] of [["zero-infinity", "libaio"], ["mlp-offload", "io_uring"]] as const
      ) {
        const out = join(dir, `${name}.json`);
        const r = await runCli([
          ...["workload", name, ...SMALL, "--engine", engine, "--verify"],
          ...["--tiers", `memory:${shm},file:${dir},pfs:${remote}`, "--output", out],
        ]);
        assert.equal(r.code, 0, r.stderr);
        const doc = JSON.parse(await Deno.readTextFile(out)) as ResultDocument;
        assert.equal(doc.config.verify, true);
        const read = bytesRead(doc);
        assert.ok(read > 0, `${name} read nothing back`);
        assert.deepEqual(doc.workload!.verify, { checked_bytes: read }, name);
      }
      assert.deepEqual(await scratchLeft(dir), []);
      assert.deepEqual(await scratchLeft(remote), []);
    });
  });
});

Deno.test(needing(["root", "fuse3"], {
  name:
    "tierbench workload --verify: a byte corrupted on its way back (FUSE) fails the run naming the file and offset",
  sanitizeResources: false,
  fn: async () => {
    const AT = 4100;
    await using fs = await faultFs({ flipReadAt: AT });
    await withTempDir(async (dir) => {
      const out = join(dir, "bad.json");
      const r = await runCli([
        ...["workload", "zero-infinity", ...SMALL, "--verify"],
        ...["--tiers", `file:${fs.path}`, "--output", out],
      ]);
      assertOneLine(
        r,
        1,
        new RegExp(
          `^tierbench: rank \\d: verify failed on file ${fs.path}/tierbench-scratch-\\S+ at offset ` +
            `${AT}: expected 0x[0-9a-f]+, found 0x[0-9a-f]+ \\(of the object's write \\d+ of this ` +
            "run\\); the data read back is not what was written there .*; partial results in ",
        ),
      );
      const doc = JSON.parse(await Deno.readTextFile(partialPathOf(out))) as ResultDocument;
      assert.equal(doc.status, "failed");
      assert.deepEqual(await scratchLeft(fs.backing), []);
    });
  },
}));

Deno.test(needing(["root", "fuse3"], {
  name:
    "tierbench workload: a storage that stops answering fails the rank after --timeout naming the request, its scratch left for clean",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    for (const engine of ["libaio", "io_uring"]) await hangsWith(engine);
  },
}));

/** The hung-storage check with the streams on `engine`. */
async function hangsWith(engine: string): Promise<void> {
  // the layout's writes go through, then every write waits for an answer that never comes
  await using fs = await faultFs({ hangWritesAfter: 40 });
  await withTempDir(async (dir) => {
    const out = join(dir, "hung.json");
    const t0 = Date.now();
    const child = spawnCli([
      ...["workload", "zero-infinity", ...SMALL, "--timeout", "2", "--engine", engine],
      ...["--tiers", `file:${fs.path}`, "--output", out],
    ]);
    // the failure is said once the request outlived --timeout: read stderr until it is
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let stderr = "";
    while (!/partial results in /.test(stderr)) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += value;
    }
    const took = Date.now() - t0;
    // a process whose asynchronous I/O the storage holds exits once the storage lets it go
    fs.answerAgain();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += value;
    }
    await child.stdout.cancel();
    const status = await child.status;
    assert.equal(status.code, 1, stderr);
    const lines = stderr.trim().split("\n");
    assert.equal(lines.length, 2, stderr);
    assert.match(
      lines[0]!,
      new RegExp(
        `^tierbench: could not remove ${fs.path}/tierbench-scratch-\\S+ \\(a request timed out ` +
          `after 2 s\\); remove it later with: deno task tierbench clean --tier file:${fs.path}$`,
      ),
    );
    assert.match(
      lines[1]!,
      new RegExp(
        `^tierbench: rank \\d: p?write \\((libaio|io_uring)\\) ${fs.path}/\\S+ at offset \\d+ timed ` +
          "out after 2 s \\(--timeout\\): the storage stopped answering; partial results in ",
      ),
    );
    assert.ok(took < 30_000, `the hung run took ${took} ms to say so`);
    assert.equal(JSON.parse(await Deno.readTextFile(partialPathOf(out))).status, "failed");
    const c = await runCli(["clean", "--tier", `file:${fs.path}`]);
    assert.equal(c.code, 0, c.stderr);
    assert.deepEqual(await scratchLeft(fs.backing), []);
  });
}
