/**
 * How the benchmark tools start tierbench: with the V8 flags its own
 * `deno task tierbench`, `deno task bench` and `deno task compile` use
 * (_tierbench_test.ts keeps them the same).
 *
 * @module
 */

import { fileURLToPath } from "node:url";

const MAIN_TS = fileURLToPath(new URL("../../main.ts", import.meta.url));
const DENO_JSON = fileURLToPath(new URL("../../deno.json", import.meta.url));

/**
 * The project's root, where tierbench's CLI is started from.
 *
 * @example
 * ```ts
 * import { TIERBENCH_ROOT } from "./_tierbench.ts";
 * console.assert(TIERBENCH_ROOT.endsWith("/"));
 * ```
 */
export const TIERBENCH_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/**
 * V8 compiles hot code on the thread that runs it, not on its background
 * threads. Each job is a Worker, an isolate that compiles its own copy of
 * the engine's loop; with many CPU-bound jobs on few cores the background
 * compiler threads got so little time that the loops ran unoptimised through
 * the measured window (64 jobs × depth 32 on 2 cores: 1.5× the null tier's
 * CPU per I/O of one job, 2.2× libaio's and io_uring's on tmpfs). Compiled on
 * its own thread, a job's loop is optimised in its warm-up, before the start
 * barrier (docs/validation.md, "The harness as jobs and ranks grow").
 *
 * Without background compilation V8 never moves a loop from Maglev's
 * on-stack-replacement code up to TurboFan's, so a job loop that V8 replaced
 * mid-run with Maglev's (after any deopt in the measured window) stayed
 * there: 4 KiB reads at depth 1 cost twice fio's user time per I/O. With
 * `--no-maglev-osr` such a loop is replaced with TurboFan's directly
 * (docs/validation.md, "The harness's cost per I/O against fio").
 *
 * @example
 * ```ts
 * import { TIERBENCH_V8_FLAGS } from "./_tierbench.ts";
 * console.assert(TIERBENCH_V8_FLAGS.startsWith("--v8-flags="));
 * ```
 */
export const TIERBENCH_V8_FLAGS =
  "--v8-flags=--no-concurrent-recompilation,--no-concurrent-osr,--no-maglev-osr";

/**
 * Deno's arguments that run tierbench's CLI with `args` as its own tasks
 * do (all permissions, {@linkcode TIERBENCH_V8_FLAGS}, the project's
 * deno.json; all permissions because Deno refuses /dev/shm, the memory
 * tier, to anything less), writing its result to `output` and nothing else
 * to stdout.
 *
 * @example
 * ```ts
 * import { tierbenchRunArgs, TIERBENCH_V8_FLAGS } from "./_tierbench.ts";
 * const a = tierbenchRunArgs(["run", "--tier", "null:"], "/tmp/out.json");
 * console.assert(a[0] === "run" && a.includes(TIERBENCH_V8_FLAGS) && a.at(-1) === "--quiet");
 * ```
 */
export function tierbenchRunArgs(args: string[], output: string): string[] {
  return [
    "run",
    "--allow-all",
    TIERBENCH_V8_FLAGS,
    "--config",
    DENO_JSON,
    MAIN_TS,
    ...args,
    "--output",
    output,
    "--quiet",
  ];
}
