/**
 * `tierbench trace timeline FILE [--output T]`: a trace, or a result or plan
 * document with a timeline (a workload run, a replay, a trace replay, a
 * plan), as Chrome Trace Event JSON for Perfetto (ui.perfetto.dev) or
 * chrome://tracing.
 *
 * @module
 */

import { basename } from "node:path";
import { Command } from "@commander-js/extra-typings";
import { ConfigError } from "../core/errors.ts";
import { ChromeTraceWriter, type TimelineSummary, traceTimeline } from "../trace/chrome_trace.ts";
import { TraceReader } from "../trace/reader.ts";
import { loadDocument } from "../report/document.ts";
import { documentTimeline } from "../report/timeline.ts";
import { resolvePath } from "./_paths.ts";

/** The default name of a timeline: the input's name, `.timeline.json` in place of its ending. */
export function defaultTimelineName(input: string): string {
  const name = basename(input).replace(/\.gz$/, "").replace(/\.(trace|json|iolog|txt|log)$/, "");
  return resolvePath(`${name}.timeline.json`);
}

/** Whether `path` holds a result or plan document rather than a trace: JSON whose first line is `{`. */
async function isDocument(path: string): Promise<boolean> {
  let head: Uint8Array;
  try {
    using f = await Deno.open(path);
    head = new Uint8Array(256);
    head = head.subarray(0, (await f.read(head)) ?? 0);
  } catch {
    return false; // the trace reader says why it cannot be read
  }
  const text = new TextDecoder().decode(head).trimStart();
  return /^\{\s*(\n|$)/.test(text) ||
    /^\{\s*"(\$schema|schema)"\s*:\s*"[^"]*(result|plan)/.test(text);
}

/** Writes the timeline of `input` to `output`; a ConfigError when a document has none. */
export async function writeTimeline(input: string, output: string): Promise<TimelineSummary> {
  const doc = (await isDocument(input)) ? await loadDocument(input) : undefined;
  const reader = doc ? undefined : await TraceReader.open(input);
  const out = await ChromeTraceWriter.create(output);
  try {
    const summary = doc ? await documentTimeline(doc.doc, out) : await traceTimeline(reader!, out);
    if (!summary) {
      throw new ConfigError(
        "timeline",
        `${input}: has no timeline (a workload run, a replay, a trace replay or a plan has one)`,
      );
    }
    await out.close({ source: input, tool: "tierbench trace timeline" });
    return summary;
  } catch (e) {
    await out.abort();
    throw e;
  }
}

/** `trace timeline`. */
export function traceTimelineCommand() {
  return new Command("timeline")
    .description(
      "a trace, or a workload, replay, trace replay or plan JSON, as Chrome Trace Event JSON (Perfetto)",
    )
    .argument("<file>", "a trace or fio iolog, or a result or plan JSON")
    .option("--output <file>", "the timeline to write (default <file's name>.timeline.json here)")
    .action(async (file, o) => {
      const input = resolvePath(file);
      const output = o.output === undefined ? defaultTimelineName(input) : resolvePath(o.output);
      const s = await writeTimeline(input, output);
      console.log(
        `${output}: ${s.spans} spans on ${s.tracks} tracks (open it in ui.perfetto.dev or chrome://tracing)`,
      );
    });
}
