/**
 * Slurm's compressed host lists (`node[01-03,07],login1`), expanded.
 *
 * @module
 */

/** Splits `text` at the commas outside brackets. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "[") depth++;
    else if (c === "]") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) throw new TypeError(`bad node list "${text}": unbalanced brackets`);
  }
  if (depth !== 0) throw new TypeError(`bad node list "${text}": unbalanced brackets`);
  parts.push(text.slice(start));
  return parts;
}

/** `01-03,07` → `01 02 03 07`, keeping each range's zero padding. */
function expandRanges(ranges: string, list: string): string[] {
  return ranges.split(",").flatMap((r) => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(r);
    if (m === null) throw new TypeError(`bad node list "${list}": "${r}" is not N or N-M`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new TypeError(`bad node list "${list}": range "${r}" runs backwards`);
    const width = m[1]!.length;
    return Array.from({ length: hi - lo + 1 }, (_, i) => String(lo + i).padStart(width, "0"));
  });
}

/** One host expression (`rack[1-2]-n[01-02]`) → its hosts, every bracket group expanded. */
function expandOne(expr: string, list: string): string[] {
  const open = expr.indexOf("[");
  if (open < 0) return [expr];
  const close = expr.indexOf("]", open);
  const head = expr.slice(0, open);
  const tails = expandOne(expr.slice(close + 1), list);
  return expandRanges(expr.slice(open + 1, close), list)
    .flatMap((n) => tails.map((t) => `${head}${n}${t}`));
}

/**
 * Every host of a Slurm node list, in order.
 *
 * @example
 * ```ts
 * import { expandNodeList } from "./_nodelist.ts";
 * console.assert(expandNodeList("node[01-03,07]").join(" ") === "node01 node02 node03 node07");
 * ```
 */
export function expandNodeList(list: string): string[] {
  if (list.trim() === "") throw new TypeError("bad node list: it is empty");
  return splitTop(list.trim()).filter((p) => p !== "").flatMap((p) => expandOne(p, list));
}
