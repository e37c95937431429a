/**
 * The ground every other folder stands on: job options and tier specs, errors, units, comma lists, secrets, output files written atomically, JSON files read with one-line errors, host facts, libc over FFI, a start gate on the kernel's futex, offsets, block verification, latency recording, waiting for every task before failing (settleAll), small statistics (median, interval union), the wording of zod validation issues and the job worker protocol.
 *
 * @module
 */
export * from "./config.ts";
export * from "./errors.ts";
export * from "./futex.ts";
export * from "./host.ts";
export * from "./job_protocol.ts";
export * from "./json_file.ts";
export * from "./libc.ts";
export * from "./list.ts";
export * from "./offsets.ts";
export * from "./loopback_server.ts";
export * from "./output_file.ts";
export * from "./recorder.ts";
export * from "./secrets.ts";
export * from "./settle.ts";
export * from "./stats.ts";
export * from "./units.ts";
export * from "./verify.ts";
export * from "./zod_issue.ts";
