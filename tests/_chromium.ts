/**
 * Test helper: opens pages in headless Chromium (Debian's `/usr/bin/chromium`,
 * driven by playwright-core) with the network off, and reports what each
 * page drew, asked for and complained about.
 *
 * Where Chromium is absent the tests are ignored, their names saying which
 * package installs it; under `CI=true` they fail instead (tests/_requirements.ts).
 *
 * @module
 */

import { chromium } from "playwright-core";
import { needing } from "./_requirements.ts";

/** Debian's Chromium. */
export const CHROMIUM = "/usr/bin/chromium";

/** The flags the browser runs with: headless, no sandbox (root in CI), nothing in the background. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * A test that needs Chromium: ignored where it is absent, failed under
 * `CI=true`.
 *
 * @example
 * ```ts ignore
 * chromiumTest("the report draws", async () => { … });
 * ```
 */
export function chromiumTest(name: string, fn: () => Promise<void>): void {
  Deno.test(needing(["chromium"], {
    name,
    sanitizeResources: false,
    sanitizeOps: false,
    fn,
  }));
}

/**
 * Run in the page (as text: this module has no DOM types): per chart, its
 * data marks (paths and rects inside vega's `role-mark` groups, not axes or
 * legends), how many of them have a size, and the hover text of each (its
 * `<title>` child's text, "" where it has none).
 */
const CHART_PROBE = `[...document.querySelectorAll("figure.chart")].map((f) => {
  const marks = [...f.querySelectorAll(
    "svg g.role-mark > path, svg g.role-mark > rect, svg g.role-mark > g > path",
  )];
  const sized = marks.filter((m) => { const b = m.getBBox(); return b.width > 0 || b.height > 0; });
  return {
    id: f.getAttribute("data-chart") || "",
    svg: f.querySelector("svg") !== null,
    marks: marks.length,
    sized: sized.length,
    titles: marks.map((m) => m.querySelector(":scope > title")?.textContent ?? ""),
  };
})`;

/** What a page showed. */
export interface PageCheck {
  /**
   * Per `figure.chart`: its id, whether it has an svg, its data marks, those
   * drawn with a size, and each mark's `<title>` text (what a hover shows).
   */
  charts: { id: string; svg: boolean; marks: number; sized: number; titles: string[] }[];
  /** Console errors and uncaught page errors. */
  errors: string[];
  /** Every request other than the page itself (each one aborted). */
  requests: string[];
}

/**
 * Opens each HTML file in a fresh, offline browser profile, every request
 * but the page itself aborted, and saves a full-page screenshot of each to
 * the paired path.
 *
 * @example
 * ```ts ignore
 * const [check] = await checkPages([["results/r/report.html", "results/shot.png"]]);
 * ```
 */
export async function checkPages(pages: readonly [string, string][]): Promise<PageCheck[]> {
  const profile = await Deno.makeTempDir({ prefix: "tierbench-chromium-" });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    offline: true,
    viewport: { width: 1280, height: 900 },
  });
  try {
    const out: PageCheck[] = [];
    for (const [html, screenshot] of pages) {
      const url = new URL(`file://${html}`).href;
      const requests: string[] = [];
      const errors: string[] = [];
      await context.route("**/*", async (route) => {
        if (route.request().url() === url) return await route.continue();
        requests.push(route.request().url());
        await route.abort();
      });
      const page = await context.newPage();
      page.on("console", (m) => {
        if (m.type() === "error") errors.push(m.text());
      });
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("request", (r) => {
        if (r.url() !== url && !requests.includes(r.url())) requests.push(r.url());
      });
      await page.goto(url, { waitUntil: "load" });
      const charts = await page.evaluate(CHART_PROBE) as PageCheck["charts"];
      await page.screenshot({ path: screenshot, fullPage: true });
      await page.close();
      await context.unrouteAll();
      out.push({ charts, errors, requests });
    }
    return out;
  } finally {
    await context.close();
    await Deno.remove(profile, { recursive: true });
  }
}
