/**
 * Exports: a trace as another tool's input (fio's iolog, version 3 or 2).
 *
 * @module
 */

import { TextSink } from "./_lines.ts";
import { IologEncoder } from "./fio_iolog.ts";
import { TraceReader } from "./reader.ts";

/** What an export wrote. */
export interface ExportSummary {
  readonly output: string;
  readonly lines: number;
  readonly events: number;
  readonly notes: readonly string[];
}

/**
 * Writes the trace `input` as a fio iolog at `output` (version 3, or 2 with
 * `version`), every thread's I/O in one log in trace order: synchronous
 * calls and each submitted iocb become read/write lines, fsyncs sync lines.
 *
 * @example
 * ```ts
 * import { exportIolog } from "./export.ts";
 * import { TraceWriter } from "./writer.ts";
 * const dir = await Deno.makeTempDir();
 * const w = await TraceWriter.create(`${dir}/t.trace`, { source: { kind: "generator" }, origin: "" });
 * await w.write({ kind: "write", t: 7, thread: "1", dur: 1, file: "/d/f", offset: 4096, length: 4096, res: 4096 });
 * await w.close();
 * await exportIolog(`${dir}/t.trace`, `${dir}/t.iolog`);
 * const text = await Deno.readTextFile(`${dir}/t.iolog`);
 * console.assert(text.includes("7 /d/f write 4096 4096"));
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function exportIolog(
  input: string,
  output: string,
  version: 2 | 3 = 3,
): Promise<ExportSummary> {
  const r = await TraceReader.open(input);
  const sink = await TextSink.create(output);
  const enc = new IologEncoder(version);
  let lines = 0, events = 0, last = 0;
  const threads = new Set<string>();
  try {
    sink.push(enc.header());
    for await (const batch of r.batches()) {
      for (const e of batch) {
        events++;
        if (e.kind !== "phase") threads.add(e.thread);
        last = Math.max(last, e.t);
        for (const l of enc.encode(e)) {
          lines++;
          await sink.line(l);
        }
      }
    }
    for (const l of enc.finish(last)) {
      lines++;
      sink.push(l);
    }
    await sink.close();
  } catch (e) {
    await sink.abort();
    throw e;
  }
  const notes = threads.size > 1
    ? [`${threads.size} threads' I/O merged into one log, in trace order (an iolog is one job's)`]
    : [];
  return { output, lines, events, notes };
}
