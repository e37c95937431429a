/**
 * vega-lite spec → SVG text, rendered in Deno (vega's headless View, no
 * canvas, no network), with the SVG's ids made unique so that several
 * charts can sit inline in one page, and every data mark given a `<title>`
 * child holding its description, which a browser shows on hover without any
 * script.
 *
 * @module
 */

import * as vl from "vega-lite";
import { parse, View } from "vega";

/** A chart could not be compiled or rendered. */
export class ChartRenderError extends Error {
  override name = "ChartRenderError";
}

/**
 * Renders a vega-lite spec to SVG. `idPrefix` is put before every id in the
 * SVG (and every reference to one), so two charts' clip paths never clash.
 *
 * @example
 * ```ts
 * import { renderSvg } from "./_svg.ts";
 * const svg = await renderSvg({
 *   data: { values: [{ a: "x", b: 1 }] },
 *   mark: "bar",
 *   encoding: { x: { field: "a", type: "nominal" }, y: { field: "b", type: "quantitative" } },
 * }, "c1");
 * console.assert(svg.startsWith("<svg") && svg.includes("role-mark"));
 * ```
 */
export async function renderSvg(spec: Record<string, unknown>, idPrefix: string): Promise<string> {
  let view: View | undefined;
  try {
    // vega-lite's warnings (e.g. about faceted independent scales) are not the user's concern
    const quiet = {
      level: () => quiet,
      error: () => quiet,
      warn: () => quiet,
      info: () => quiet,
      debug: () => quiet,
    };
    const compiled =
      vl.compile(spec as unknown as vl.TopLevelSpec, { logger: quiet as never }).spec;
    // loader that refuses: a report never fetches anything, even at render time
    view = new View(parse(compiled), {
      renderer: "none",
      loader: {
        load: () => Promise.reject(new Error("no loading")),
        sanitize: () => Promise.reject(new Error("no loading")),
        http: () => Promise.reject(new Error("no loading")),
        file: () => Promise.reject(new Error("no loading")),
      } as never,
    });
    const svg = await view.toSVG();
    return prefixIds(titleMarks(svg), idPrefix);
  } catch (e) {
    throw new ChartRenderError(`chart ${idPrefix}: ${(e as Error).message}`, { cause: e });
  } finally {
    view?.finalize();
  }
}

/** A data mark as vega writes it: a leaf element with role graphics-symbol and its aria-label. */
const MARK = /<(path|rect|text|line|circle|image)(\s[^>]*?\brole="graphics-symbol"[^>]*?)(\/?)>/g;

/**
 * Gives every data mark a `<title>` child holding its `aria-label` (the
 * mark's `description` encoding, already escaped by vega), so a browser
 * shows it on hover in static SVG. Axes and legends are `<g>` groups and
 * keep none.
 *
 * @example
 * ```ts
 * import { titleMarks } from "./_svg.ts";
 * const svg = '<path aria-label="a: 1 MiB/s" role="graphics-symbol" d="M0,0"/>';
 * console.assert(titleMarks(svg).endsWith("><title>a: 1 MiB/s</title></path>"));
 * ```
 */
export function titleMarks(svg: string): string {
  return svg.replace(MARK, (tag, name: string, attrs: string, empty: string) => {
    const label = /\baria-label="([^"]*)"/.exec(attrs)?.[1];
    if (label === undefined) return tag;
    const title = `<title>${label}</title>`;
    return empty ? `<${name}${attrs}>${title}</${name}>` : `${tag}${title}`;
  });
}

/** Prefixes every `id="…"` and `url(#…)` / `href="#…"` reference. */
function prefixIds(svg: string, prefix: string): string {
  return svg
    .replace(/\bid="([^"]+)"/g, (_, id) => `id="${prefix}-${id}"`)
    .replace(/url\(#([^)]+)\)/g, (_, id) => `url(#${prefix}-${id})`)
    .replace(/href="#([^"]+)"/g, (_, id) => `href="#${prefix}-${id}"`);
}
