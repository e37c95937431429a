import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli, tempDirOnDisk } from "../tests/_helpers.ts";
import { cliOk, planRun, traceReplayRun } from "../tests/_report_fixtures.ts";

interface ChromeEvent {
  ph: string;
  name: string;
  pid: number;
  tid?: number;
  ts?: number;
  dur?: number;
  args?: { name?: string; bytes?: number };
}

/** The events of a timeline, and its track names as `process / thread`. */
async function timeline(path: string): Promise<{ spans: ChromeEvent[]; tracks: string[] }> {
  const ev = (JSON.parse(await Deno.readTextFile(path)) as { traceEvents: ChromeEvent[] })
    .traceEvents;
  const processes = new Map(
    ev.filter((e) => e.name === "process_name").map((e) => [e.pid, e.args!.name!]),
  );
  const tracks = ev.filter((e) => e.name === "thread_name").map((e) =>
    `${processes.get(e.pid)} / ${e.args!.name}`
  );
  return { spans: ev.filter((e) => e.ph === "X"), tracks };
}

Deno.test("trace timeline: a trace replay's threads and a plan's simulated ranks × streams as Chrome Trace Event JSON", async () => {
  const dir = await tempDirOnDisk();
  try {
    const replay = join(dir, "replay.json");
    await traceReplayRun(dir, replay);
    const doc = JSON.parse(await Deno.readTextFile(replay));
    const out = join(dir, "replay.timeline.json");
    const said = await cliOk(["trace", "timeline", replay, "--output", out]);
    assert.match(said, /replay\.timeline\.json: \d+ spans on 1 tracks/);
    const r = await timeline(out);
    const thread = doc.trace_replay.threads[0];
    assert.deepEqual(r.tracks, [`process ${thread.process} / thread ${thread.thread}`]);
    assert.equal(r.spans.length, doc.trace_replay.timeline.spans.length);
    assert.equal(r.spans.filter((e) => e.name === "read" || e.name === "write").length, 1024);

    const plan = join(dir, "plan.json");
    await planRun(plan);
    const planOut = join(dir, "plan.timeline.json");
    await cliOk(["trace", "timeline", plan, "--output", planOut]);
    const p = await timeline(planOut);
    const spans = JSON.parse(await Deno.readTextFile(plan)).predictions.plan.timeline.spans;
    assert.equal(p.spans.length, spans.length);
    // both steady passes (one each way), each rank's streams
    assert.ok(p.tracks.includes("simulated iteration 1 · rank 0 / local:read"), p.tracks.join());
    assert.ok(p.tracks.includes("simulated iteration 2 · rank 3 / compute"), p.tracks.join());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("trace timeline refuses a document without a timeline, and an existing output, in one line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const doc = join(dir, "run.json");
    await Deno.writeTextFile(
      doc,
      JSON.stringify({ schema: "tierbench/result@1", kind: "run", runs: [] }, null, 2),
    );
    const none = await runCli(["trace", "timeline", doc, "--output", join(dir, "t.json")]);
    assert.equal(none.code, 2, none.stderr);
    assert.equal(
      none.stderr,
      `tierbench: --timeline: ${doc}: has no timeline (a workload run, a replay, a trace replay or a plan has one)\n`,
    );
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["run.json"]);
    const taken = await runCli(["trace", "timeline", doc, "--output", doc]);
    assert.equal(taken.code, 2, taken.stderr);
    assert.equal(taken.stderr, `tierbench: ${doc}: exists already; give another --output\n`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
