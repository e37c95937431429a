/**
 * Which asynchronous engine a job gets when it asks for `--iodepth` above 1
 * without naming `--engine`: io_uring where this kernel lets this process
 * set a ring up (kernel.io_uring_disabled, and io_uring_setup itself, tried
 * once per thread and remembered), else libaio; with the reason, for the
 * results' `options.engine_choice`.
 *
 * @module
 */

import type { EngineChoice } from "../core/config.ts";
import { errnoName, readSmallFile } from "../core/libc.ts";
import { probeUring } from "./_uring.ts";

/** Where the kernel's switch lives. */
const DISABLED_SYSCTL = "/proc/sys/kernel/io_uring_disabled";

/**
 * The engine for `iodepth` I/Os in flight when none was named, and why.
 *
 * @example
 * ```ts
 * import { chooseAsyncEngine } from "./engine_choice.ts";
 * const c = chooseAsyncEngine(8);
 * console.assert(c.chosen === "io_uring" || c.chosen === "libaio");
 * console.assert(c.why.startsWith("--iodepth 8 without --engine: "));
 * ```
 */
export function chooseAsyncEngine(iodepth: number): EngineChoice {
  const lead = `--iodepth ${iodepth} without --engine: `;
  const p = probeUring();
  if (p.ok) return { chosen: "io_uring", why: `${lead}io_uring is available` };
  return {
    chosen: "libaio",
    why: `${lead}${uringRefusedBecause(p.errno, readSmallFile(DISABLED_SYSCTL)?.trim())}, ` +
      "libaio instead",
  };
}

/**
 * Why io_uring was not chosen: the errno of io_uring_setup and the sysctl
 * kernel.io_uring_disabled as it reads (`disabled`, undefined when absent).
 *
 * @example
 * ```ts
 * import { uringRefusedBecause } from "./engine_choice.ts";
 * console.assert(
 *   uringRefusedBecause(1, "2") ===
 *     "io_uring_setup failed with EPERM (kernel.io_uring_disabled = 2)",
 * );
 * ```
 */
export function uringRefusedBecause(errno: number, disabled: string | undefined): string {
  const sysctl = disabled === undefined
    ? "kernel.io_uring_disabled absent"
    : `kernel.io_uring_disabled = ${disabled}`;
  return `io_uring_setup failed with ${errnoName(errno)} (${sysctl})`;
}
