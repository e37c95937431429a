/**
 * Host memory as a constraint of every plan: what each prediction keeps in
 * the node's memory — fp32 gradients, optimizer state (the host cache, or all
 * of it for ZeRO-Offload), pinned swap buffers — against the node's memory
 * less a reserve for everything else (the OS, the framework, the data
 * loader, pinned activation buffers).
 *
 * Per node, with R ranks each owning P parameters, s bytes per fp32 state
 * and subgroups of at most E elements:
 *
 * - gradients kept in host memory: s · P · R (MLP-Offload's grad-skip keeps
 *   them there; ZeRO-Infinity swaps them);
 * - pinned swap buffers: {@linkcode SWAP_BUFFER_COUNT} · s · E per rank and
 *   path in use (DeepSpeed's optimizer swapper allocates buffer_count
 *   buffers of the largest subgroup's elements; MLP-Offload runs one swapper
 *   per path);
 * - optimizer state kept: the cached subgroups' params, m and v, 3 · s · E
 *   each, per rank.
 *
 * @module
 */

import { ConfigError } from "../core/errors.ts";
import { parseSize } from "../core/units.ts";
import type { HostMemoryUse } from "../schema/plan.ts";

/**
 * Swap buffers per rank and path: one subgroup being updated, one read ahead,
 * one written behind and staging for the write, 4 buffers each (params, m, v,
 * gradient) — the `buffer_count` the DeepSpeed export writes.
 */
export const SWAP_BUFFER_COUNT = 16;

/** The reserve `plan --host-reserve` takes by default: a tenth of the node's memory. */
export const DEFAULT_HOST_RESERVE = "10%";

/** A reserve: a share of the node's memory, or bytes. */
export type HostReserve = { readonly fraction: number } | { readonly bytes: number };

const RESERVE_ALLOWED = "a share of host memory such as 10% or a size such as 8g (0 for none)";

/**
 * `--host-reserve` as a reserve: `N%` (0 to 100, exclusive of 100) or a size.
 *
 * @throws {ConfigError} naming `host-reserve` and what it takes.
 *
 * @example
 * ```ts
 * import { parseHostReserve, reserveBytes } from "./host_memory.ts";
 * console.assert(reserveBytes(parseHostReserve("10%"), 100) === 10);
 * console.assert(reserveBytes(parseHostReserve("8g"), 64 * 2 ** 30) === 8 * 2 ** 30);
 * ```
 */
export function parseHostReserve(text: string): HostReserve {
  const t = text.trim();
  const pct = /^(\d+(?:\.\d+)?)\s*%$/.exec(t);
  if (pct) {
    const n = Number(pct[1]);
    if (n >= 100) {
      throw new ConfigError("host-reserve", `"${text}" leaves no host memory`, RESERVE_ALLOWED);
    }
    return { fraction: n / 100 };
  }
  const bytes = parseSize(t);
  if (bytes === undefined) {
    throw new ConfigError("host-reserve", `"${text}" is not a share or a size`, RESERVE_ALLOWED);
  }
  return { bytes };
}

/** The reserve in bytes on a node with `memory` bytes. */
export function reserveBytes(reserve: HostReserve, memory: number): number {
  return "fraction" in reserve ? reserve.fraction * memory : reserve.bytes;
}

/** The parts of a prediction's host memory, node-wide, bytes. */
export interface HostMemoryParts {
  readonly gradientsBytes: number;
  readonly gradients: "host" | "swapped";
  readonly stateBytes: number;
  readonly bufferCount: number;
  readonly bufferBytes: number;
}

/**
 * The host memory a prediction assumes, held against `available` bytes.
 *
 * @example
 * ```ts
 * import { hostMemoryUse } from "./host_memory.ts";
 * const u = hostMemoryUse({ gradientsBytes: 28e9, gradients: "host", stateBytes: 0, bufferCount: 0, bufferBytes: 0 }, 22e9);
 * console.assert(u.total_bytes === 28e9 && !u.fits);
 * ```
 */
export function hostMemoryUse(parts: HostMemoryParts, available: number): HostMemoryUse {
  const total = parts.gradientsBytes + parts.stateBytes + parts.bufferBytes;
  return {
    total_bytes: total,
    gradients_bytes: parts.gradientsBytes,
    gradients: parts.gradients,
    state_bytes: parts.stateBytes,
    buffer_bytes: parts.bufferBytes,
    buffer_count: parts.bufferCount,
    available_bytes: available,
    fits: total <= available,
  };
}

/** Bytes as GB with one decimal, for sentences. */
export function gb(x: number): string {
  return `${(x / 1e9).toFixed(1)} GB`;
}

/** One sentence: what a prediction holds in host memory against what is available. */
export function describeHostMemory(u: HostMemoryUse): string {
  const parts = [
    u.gradients === "host" ? `${gb(u.gradients_bytes)} of fp32 gradients` : "gradients swapped",
    `${gb(u.state_bytes)} of optimizer state`,
    `${gb(u.buffer_bytes)} of pinned swap buffers`,
  ];
  return `${gb(u.total_bytes)} (${parts.join(", ")}) against ${gb(u.available_bytes)} available`;
}
