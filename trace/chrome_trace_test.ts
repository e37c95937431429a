import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../tests/_helpers.ts";
import { ChromeTraceWriter, traceTimeline } from "./chrome_trace.ts";
import { importStrace } from "./import.ts";
import { TraceReader } from "./reader.ts";

interface ChromeEvent {
  ph: string;
  name: string;
  cat?: string;
  pid: number;
  tid?: number;
  ts?: number;
  dur?: number;
  args?: Record<string, unknown>;
}

const RECORDING = join(
  ROOT,
  "trace",
  "testdata",
  "deepspeed",
  "recordings",
  "strace-ds0.14.5-tiny-opt_nvme.txt.gz",
);

Deno.test("a DeepSpeed recording as a timeline: a span per call on its thread's named track, in flight per context, a marker per phase", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const trace = join(dir, "ds.trace.gz"), out = join(dir, "ds.timeline.json");
    await importStrace(RECORDING, trace, { only: "/var/tmp/dsnvme" });
    let calls = 0, phases = 0;
    const threads = new Set<string>();
    for await (const e of (await TraceReader.open(trace)).events()) {
      if (e.kind === "phase") phases++;
      else {
        calls++;
        threads.add(e.thread);
      }
    }
    const w = await ChromeTraceWriter.create(out);
    const summary = await traceTimeline(await TraceReader.open(trace), w);
    await w.close();
    const doc = JSON.parse(await Deno.readTextFile(out)) as {
      traceEvents: ChromeEvent[];
      displayTimeUnit: string;
    };
    const ev = doc.traceEvents;
    assert.equal(doc.displayTimeUnit, "ms");
    const spans = ev.filter((e) => e.ph === "X");
    assert.equal(spans.length, calls);
    assert.equal(summary.tracks, threads.size);
    assert.equal(ev.filter((e) => e.ph === "i").length, phases);
    // every span on a track that was named first, times whole and not negative
    const named = new Set<string>();
    for (const e of ev) {
      if (e.ph === "M" && e.name === "thread_name") named.add(`${e.pid}/${e.tid}`);
      if (e.ph !== "X") continue;
      assert.ok(named.has(`${e.pid}/${e.tid}`), `span on an unnamed track: ${JSON.stringify(e)}`);
      assert.ok(e.ts! >= 0 && e.dur! >= 0, JSON.stringify(e));
    }
    const names = ev.filter((e) => e.name === "thread_name").map((e) => e.args!.name);
    assert.ok(names.every((n) => typeof n === "string" && /^thread \d+$/.test(n)), names.join());
    // the serial swapper: at most 8 in flight on a context, and all of it reaped
    const inFlight = ev.filter((e) => e.ph === "C").map((e) => e.args!.requests as number);
    assert.ok(inFlight.length > 0);
    assert.equal(Math.max(...inFlight), 8);
    assert.equal(inFlight.at(-1), 0);
    assert.ok(spans.some((e) => e.name.startsWith("io_submit ×") && e.cat === "aio"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the timeline writer refuses an existing file and leaves nothing on abort", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = join(dir, "t.json");
    await Deno.writeTextFile(out, "mine");
    await assert.rejects(ChromeTraceWriter.create(out), /exists already; give another --output/);
    assert.equal(await Deno.readTextFile(out), "mine");
    const other = join(dir, "u.json");
    const w = await ChromeTraceWriter.create(other);
    await w.span(await w.track("p", "t"), "x", "io", 0, 1);
    await w.abort();
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["t.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
