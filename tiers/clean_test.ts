import assert from "node:assert/strict";
import {
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
} from "@aws-sdk/client-s3";
import { join } from "node:path";
import { runCli, tempDirOnDisk } from "../tests/_helpers.ts";
import { listKeys, remoteTest, testS3Client, uniquePrefix } from "../tests/_remote.ts";
import { MARKER, SCRATCH_PREFIX, type ScratchMarker } from "./scratch.ts";
import { deletePrefix } from "./s3_scratch.ts";
import { cleanScratch, formatCleanReport } from "./clean.ts";

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = new Deno.Command("true").spawn();
  await child.status;
  return child.pid;
}

/** A process that stays alive until the returned function is called. */
function livePid(): { pid: number; stop: () => Promise<void> } {
  const child = new Deno.Command("sleep", { args: ["600"] }).spawn();
  return {
    pid: child.pid,
    stop: async () => {
      child.kill("SIGKILL");
      await child.status;
    },
  };
}

function marker(runId: string, pid: number, host = Deno.hostname()): string {
  return JSON.stringify(
    { run_id: runId, host, pid, created: new Date().toISOString() } satisfies ScratchMarker,
  );
}

async function scratchDir(parent: string, runId: string, markerText?: string): Promise<string> {
  const dir = join(parent, SCRATCH_PREFIX + runId);
  await Deno.mkdir(join(dir, "sub"), { recursive: true });
  await Deno.writeTextFile(join(dir, "sub", "job0.dat"), "data");
  if (markerText !== undefined) await Deno.writeTextFile(join(dir, MARKER), markerText);
  return dir;
}

Deno.test("cleanScratch() removes marked scratch directories of dead runs and leaves every other", async () => {
  const parent = await tempDirOnDisk();
  const live = livePid();
  try {
    const dead = await scratchDir(parent, "dead", marker("dead", await deadPid()));
    const elsewhere = await scratchDir(
      parent,
      "elsewhere",
      marker("elsewhere", live.pid, "other-host"),
    );
    const running = await scratchDir(parent, "running", marker("running", live.pid));
    const unmarked = await scratchDir(parent, "unmarked");
    const garbled = await scratchDir(parent, "garbled", "{not json");
    await Deno.mkdir(join(parent, "not-scratch"));

    const report = await cleanScratch({ kind: "file", path: parent });
    assert.deepEqual(report.removed.map((r) => r.path).sort(), [dead, elsewhere].sort());
    assert.deepEqual(report.skipped.map((s) => s.path).sort(), [garbled, running, unmarked].sort());
    assert.match(
      report.skipped.find((s) => s.path === running)?.reason ?? "",
      new RegExp(`still running \\(pid ${live.pid} on this host\\)`),
    );
    assert.deepEqual(report.failed, []);
    const left = (await Array.fromAsync(Deno.readDir(parent))).map((e) => e.name).sort();
    assert.deepEqual(
      left,
      ["not-scratch", ...[garbled, running, unmarked].map((p) => p.slice(parent.length + 1))]
        .sort(),
    );

    const lines = formatCleanReport(report);
    assert.ok(lines.includes(`removed ${dead}`), lines.join("\n"));
    assert.ok(
      lines.some((l) => l.startsWith(`left ${unmarked}: no ${MARKER} marker`)),
      lines.join("\n"),
    );
  } finally {
    await live.stop();
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("tierbench clean --tier file:DIR prints what it removed, and says when there is nothing", async () => {
  const parent = await tempDirOnDisk();
  try {
    const dead = await scratchDir(parent, "crashed", marker("crashed", await deadPid()));
    const r = await runCli(["clean", "--tier", `file:${parent}`]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `removed ${dead}`);
    await assert.rejects(Deno.stat(dead), Deno.errors.NotFound);
    const again = await runCli(["clean", "--tier", `file:${parent}`]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout.trim(), `nothing to remove under ${parent}`);
    const missing = await runCli(["clean", "--tier", "file:/nonexistent/tierbench"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^tierbench: --tier: \/nonexistent\/tierbench does not exist/);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

remoteTest(
  "cleanScratch() on s3 deletes the prefixes of dead runs, uploads included, and nothing else",
  async (env) => {
    const base = uniquePrefix("clean");
    const client = testS3Client(env);
    const live = livePid();
    const put = (key: string, body: string) =>
      client.send(
        new PutObjectCommand({
          Bucket: env.bucket,
          Key: key,
          Body: new TextEncoder().encode(body),
        }),
      );
    try {
      const dead = `${base}/${SCRATCH_PREFIX}dead/`;
      const running = `${base}/${SCRATCH_PREFIX}running/`;
      const unmarked = `${base}/${SCRATCH_PREFIX}unmarked/`;
      await put(dead + MARKER, marker("dead", await deadPid()));
      for (let i = 0; i < 3; i++) await put(`${dead}w0-job0/o${i}`, "x");
      await client.send(
        new CreateMultipartUploadCommand({ Bucket: env.bucket, Key: `${dead}w0-job0/o3` }),
      );
      await put(running + MARKER, marker("running", live.pid));
      await put(`${running}job0/obj0`, "x");
      await put(`${unmarked}job0/obj0`, "x");
      await put(`${base}/other`, "x");

      const report = await cleanScratch({ kind: "s3", path: `${env.bucket}/${base}` }, {
        endpoint: env.endpoint,
      });
      assert.deepEqual(report.removed, [{ path: `s3://${env.bucket}/${dead}`, objects: 4 }]);
      assert.deepEqual(report.skipped.map((s) => s.path).sort(), [
        `s3://${env.bucket}/${running}`,
        `s3://${env.bucket}/${unmarked}`,
      ]);
      assert.deepEqual((await listKeys(env, base)).sort(), [
        `${base}/other`,
        `${running}${MARKER}`,
        `${running}job0/obj0`,
        `${unmarked}job0/obj0`,
      ]);
      const uploads = await client.send(
        new ListMultipartUploadsCommand({ Bucket: env.bucket, Prefix: base }),
      );
      assert.deepEqual(uploads.Uploads ?? [], []);
    } finally {
      await live.stop();
      await deletePrefix(client, { endpoint: env.endpoint, region: env.region }, env.bucket, base);
      client.destroy();
    }
  },
);
