/**
 * Reports of result and plan documents: HTML, Markdown, CSV, charts, and side-by-side comparison.
 *
 * @module
 */
export * from "./compare.ts";
export * from "./csv.ts";
export * from "./html.ts";
export * from "./markdown.ts";
export * from "./report.ts";
export * from "./tables.ts";
