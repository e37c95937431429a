/**
 * The time left as the progress lines say it, shared by the run's and the
 * workload's line.
 *
 * @module
 */

/**
 * A duration left as the progress line says it: `7s`, `3m 05s`, `1h 02m`.
 *
 * @example
 * ```ts
 * import { formatLeft } from "./progress.ts";
 * console.assert(formatLeft(6_400) === "7s");
 * console.assert(formatLeft(185_000) === "3m 05s");
 * console.assert(formatLeft(3_720_000) === "1h 02m");
 * ```
 */
export function formatLeft(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s}s`;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
}

/** The bar drawn at the head of a progress line: 16 cells, `fraction` (0..1) of them full. */
export function formatBar(fraction: number): string {
  const full = Math.round(Math.min(1, Math.max(0, fraction)) * 16);
  return "█".repeat(full) + "░".repeat(16 - full);
}
