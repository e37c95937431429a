/**
 * Traces: what a process did to its files, as data. The compact format
 * (format.ts, schemas/trace.schema.json) written and read as a stream in
 * flat memory (writer.ts, reader.ts), strace logs and fio iologs imported
 * (strace.ts, fio_iolog.ts, import.ts) and exported (export.ts), phases cut
 * at markers or pauses (phases.ts), per-phase statistics (stats.ts). Pure:
 * no I/O but reading and writing the trace files themselves.
 *
 * @example
 * ```ts ignore
 * import { TraceReader, traceStats } from "./mod.ts";
 * const stats = await traceStats(await TraceReader.open("run.trace.gz"));
 * ```
 *
 * @module
 */

export * from "./format.ts";
export * from "./events.ts";
export * from "./errors.ts";
export * from "./errno.ts";
export { TraceReader } from "./reader.ts";
export { type HeaderInput, RecordEncoder, TraceWriter } from "./writer.ts";
export { MARKER_PREFIX, STRACE_CALLS, StraceImporter, type StraceOptions } from "./strace.ts";
export { IOLOG_THREAD, IologDecoder, IologEncoder, isIologHeader } from "./fio_iolog.ts";
export { convertTrace, type ImportOptions, importStrace, type ImportSummary } from "./import.ts";
export { exportIolog, type ExportSummary } from "./export.ts";
export { DEFAULT_GAP_US, type Phase, PhaseCutter } from "./phases.ts";
export * from "./stats.ts";
export {
  ChromeTraceWriter,
  type ChromeTrack,
  type TimelineSummary,
  traceTimeline,
} from "./chrome_trace.ts";
