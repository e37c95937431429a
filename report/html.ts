/**
 * The self-contained HTML page of a report or comparison: charts inline as
 * SVG (rendered in Deno), tables as HTML, styles inline; no script, no
 * link, nothing fetched when the page is opened.
 *
 * @module
 */

import type { ChartSpec } from "./_charts.ts";
import { renderSvg } from "./_svg.ts";
import type { Cell, ReportTable } from "./tables.ts";

/**
 * Escapes text for HTML.
 *
 * @example
 * ```ts
 * import { escapeHtml } from "./html.ts";
 * console.assert(escapeHtml('<a href="x">&') === "&lt;a href=&quot;x&quot;&gt;&amp;");
 * ```
 */
export function escapeHtml(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
  max-width: 1200px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 17px; margin: 28px 0 6px; }
ul.facts { margin: 0; padding-left: 18px; color: #444; }
figure.chart { margin: 18px 0; overflow-x: auto; }
figure.chart figcaption { color: #555; margin: 2px 0 6px; max-width: 900px; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 12.5px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; } th { background: #f4f4f4; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.better { color: #1a7f37; font-weight: 600; } .worse { color: #c62828; font-weight: 600; }
.noise { color: #888; }
pre { background: #f7f7f7; padding: 8px; overflow-x: auto; }
`;

/** An HTML table of a report table. */
export function tableHtml(t: ReportTable): string {
  const td = (c: Cell) =>
    typeof c === "number"
      ? `<td class="n">${c}</td>`
      : `<td>${c === null ? "–" : escapeHtml(String(c))}</td>`;
  return [
    `<table data-table="${escapeHtml(t.name)}">`,
    `<thead><tr>${t.columns.map((c) => `<th>${escapeHtml(c)}</th>`).join("")}</tr></thead>`,
    "<tbody>",
    ...t.rows.map((r) => `<tr>${r.map(td).join("")}</tr>`),
    "</tbody></table>",
  ].join("\n");
}

/** What a page holds. */
export interface PageContent {
  title: string;
  /** Lines under the title (host, run, plan facts). */
  facts: readonly string[];
  charts: readonly ChartSpec[];
  tables: readonly ReportTable[];
  /** Sections given as HTML already (e.g. the comparison table), after the facts. */
  html?: readonly string[];
}

/**
 * Renders every chart to SVG and writes the page. Each chart is a
 * `<figure class="chart" data-chart="ID">` holding one inline `<svg>`.
 *
 * @example
 * ```ts ignore
 * const html = await pageHtml({ title: "x", facts: [], charts: reportCharts(sources), tables });
 * ```
 */
export async function pageHtml(c: PageContent): Promise<string> {
  const figures: string[] = [];
  for (const chart of c.charts) {
    const svg = await renderSvg(chart.spec, `chart-${chart.id}`);
    figures.push(
      `<figure class="chart" data-chart="${escapeHtml(chart.id)}" id="${escapeHtml(chart.id)}">`,
      `<h2>${escapeHtml(chart.title)}</h2>`,
      `<figcaption>${escapeHtml(chart.caption)}</figcaption>`,
      svg,
      "</figure>",
    );
  }
  const tables = c.tables.flatMap((t) => [
    `<h2>${escapeHtml(t.title)}</h2>`,
    tableHtml(t),
  ]);
  return [
    "<!DOCTYPE html>",
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    // nothing may be fetched: no scripts, no external styles, fonts or images
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`,
    `<title>${escapeHtml(c.title)}</title>`,
    `<style>${STYLE}</style>`,
    "</head><body>",
    `<h1>${escapeHtml(c.title)}</h1>`,
    `<ul class="facts">${c.facts.map((f) => `<li>${escapeHtml(f)}</li>`).join("")}</ul>`,
    ...(c.html ?? []),
    ...figures,
    ...tables,
    "</body></html>",
    "",
  ].join("\n");
}
