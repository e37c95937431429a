/**
 * Imports: an strace log or a fio iolog (gzipped or not) into a trace file,
 * streamed line by line in flat memory.
 *
 * @module
 */

import { lineBatches } from "./_lines.ts";
import type { TraceEvent } from "./events.ts";
import type { TraceSource } from "./format.ts";
import { TraceReader } from "./reader.ts";
import { StraceImporter, type StraceOptions } from "./strace.ts";
import { TraceWriter } from "./writer.ts";

/** What an import wrote. */
export interface ImportSummary {
  /** The trace written. */
  readonly output: string;
  /** Records in it (the end record aside). */
  readonly records: number;
  /** System calls (or iolog lines) read. */
  readonly calls: number;
  /** What the trace's notes say. */
  readonly notes: readonly string[];
}

/** Options of {@linkcode importStrace}. */
export interface ImportOptions extends StraceOptions {
  /** The source as the header states it (default: an strace import of the input). */
  readonly source?: TraceSource;
  /** The option that named the output, for messages (default `output`). */
  readonly outputField?: string;
}

/**
 * Reads the strace log `input` and writes its trace to `output` (refused if
 * it exists; nothing left behind on failure).
 *
 * @example
 * ```ts
 * import { importStrace } from "./import.ts";
 * import { TraceReader } from "./reader.ts";
 * const dir = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${dir}/s.txt`, [
 *   '9 10:00:00.000000 openat(AT_FDCWD, "/d/f", O_WRONLY|O_CREAT, 0600) = 3 <0.000010>',
 *   '9 10:00:00.000020 pwrite64(3, "abc", 3, 0) = 3 <0.000005>',
 *   '9 10:00:00.000030 close(3) = 0 <0.000002>',
 * ].join("\n"));
 * const s = await importStrace(`${dir}/s.txt`, `${dir}/s.trace`);
 * console.assert(s.calls === 3);
 * const kinds: string[] = [];
 * for await (const e of (await TraceReader.open(`${dir}/s.trace`)).events()) kinds.push(e.kind);
 * console.assert(kinds.join() === "open,write,close");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function importStrace(
  input: string,
  output: string,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  const imp = new StraceImporter(input, options);
  const source: TraceSource = options.source ??
    { kind: "strace", file: input, ...(options.only ? { only: options.only } : {}) };
  let writer: TraceWriter | undefined;
  const threads = new Set<string>();
  const write = async (w: TraceWriter, events: TraceEvent[]) => {
    for (const e of events) {
      if (e.kind !== "phase" && !threads.has(e.thread)) {
        threads.add(e.thread);
        w.thread(e.thread, imp.processOf(e.thread));
      }
      await w.write(e);
    }
  };
  try {
    let no = 0;
    for await (const lines of lineBatches(input)) {
      const events: TraceEvent[] = [];
      for (const text of lines) imp.line(text, ++no, events);
      writer ??= await TraceWriter.create(
        output,
        { source, origin: imp.origin },
        options.outputField,
      );
      await write(writer, events);
    }
    writer ??= await TraceWriter.create(output, { source, origin: "" }, options.outputField);
    const notes = imp.notes();
    await writer.close(notes);
    return { output, records: writer.records, calls: imp.calls, notes };
  } catch (e) {
    await writer?.abort();
    throw e;
  }
}

/**
 * Copies a trace or fio iolog `input` into a trace at `output` (a fio
 * iolog becomes a trace; a trace is re-encoded, e.g. to gzip it).
 */
export async function convertTrace(
  input: string,
  output: string,
  outputField?: string,
): Promise<ImportSummary> {
  const r = await TraceReader.open(input);
  const w = await TraceWriter.create(
    output,
    { source: r.header.source, origin: r.header.origin, notes: [...(r.header.notes ?? [])] },
    outputField,
  );
  let calls = 0;
  try {
    const declared = new Set<string>();
    for await (const batch of r.batches()) {
      for (const e of batch) {
        calls++;
        if (e.kind !== "phase" && !declared.has(e.thread)) {
          declared.add(e.thread);
          w.thread(e.thread, r.threads.get(e.thread)?.process ?? e.thread);
        }
        await w.write(e);
      }
    }
    const notes = r.notes.slice(r.header.notes?.length ?? 0);
    await w.close(notes);
    return { output, records: w.records, calls, notes: r.notes };
  } catch (e) {
    await w.abort();
    throw e;
  }
}
