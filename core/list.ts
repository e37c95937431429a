/**
 * Comma lists as options take them (`--iodepth 1,4,16`, `--tiers
 * memory:,file:/data`): split and trimmed, with an empty list or an empty
 * item refused naming the option, never dropped without a word.
 *
 * @module
 */

import { ConfigError } from "./errors.ts";

/**
 * The items of the comma list `text` given to `--field`, each trimmed.
 *
 * @throws {ConfigError} naming the field for an empty list or an empty item (`1,,4`, `1,4,`).
 *
 * @example
 * ```ts
 * import { splitList } from "./list.ts";
 * console.assert(splitList("iodepth", " 1, 4 ,16", "e.g. 1,4,16").join() === "1,4,16");
 * try {
 *   splitList("iodepth", "1,,4", "e.g. 1,4,16");
 *   console.assert(false);
 * } catch (e) {
 *   console.assert((e as Error).message.startsWith('--iodepth: "1,,4" has an empty item (the 2nd)'));
 * }
 * ```
 */
export function splitList(field: string, text: string, example: string): string[] {
  const items = text.split(",").map((s) => s.trim());
  if (items.every((s) => s === "")) {
    throw new ConfigError(field, `"${text}" is an empty list`, example);
  }
  const empty = items.indexOf("");
  if (empty >= 0) {
    throw new ConfigError(
      field,
      `"${text}" has an empty item (the ${ordinal(empty + 1)})`,
      example,
    );
  }
  return items;
}

function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13
    ? "th"
    : ["th", "st", "nd", "rd"][n % 10 > 3 ? 0 : n % 10] ?? "th";
  return `${n}${suffix}`;
}
