/**
 * vega-lite spec → SVG text, rendered in Deno (vega's headless View, no
 * canvas, no network), with the SVG's ids made unique so that several
 * charts can sit inline in one page.
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
    return prefixIds(svg, idPrefix);
  } catch (e) {
    throw new ChartRenderError(`chart ${idPrefix}: ${(e as Error).message}`, { cause: e });
  } finally {
    view?.finalize();
  }
}

/** Prefixes every `id="…"` and `url(#…)` / `href="#…"` reference. */
function prefixIds(svg: string, prefix: string): string {
  return svg
    .replace(/\bid="([^"]+)"/g, (_, id) => `id="${prefix}-${id}"`)
    .replace(/url\(#([^)]+)\)/g, (_, id) => `url(#${prefix}-${id})`)
    .replace(/href="#([^"]+)"/g, (_, id) => `href="#${prefix}-${id}"`);
}
