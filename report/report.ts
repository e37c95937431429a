/**
 * `tierbench report`: one result document (and optionally a plan) → a
 * self-contained HTML page with charts, a Markdown summary, and a CSV per
 * table, in one directory.
 *
 * ```sh
 * deno task tierbench report results/readme-contention.json --output results/report
 * ```
 *
 * @module
 */

import { basename, join } from "node:path";
import { InputError } from "../core/errors.ts";
import { checkOutputPath, writeFileAtomic } from "../core/output_file.ts";
import { redactSecrets } from "../core/secrets.ts";
import type { PlanDocument } from "../schema/plan.ts";
import { type ChartSource, reportCharts } from "./_charts.ts";
import { loadDocument, type ReportDocument } from "./document.ts";
import { tableCsv } from "./csv.ts";
import { pageHtml } from "./html.ts";
import { documentFacts, reportMarkdown } from "./markdown.ts";
import { reportTables } from "./tables.ts";

/** What {@linkcode writeReport} wrote. */
export interface ReportFiles {
  dir: string;
  html: string;
  markdown: string;
  csv: string[];
  /** Ids of the charts drawn (`bandwidth`, `latency`, …). */
  charts: string[];
}

/**
 * Builds the report of a result document and/or a plan into `dir`:
 * `report.html`, `report.md` and `<table>.csv`.
 *
 * @example
 * ```ts ignore
 * const files = await buildReport(dir, { doc, label: "run.json" });
 * console.log(files.html);
 * ```
 */
export async function buildReport(
  dir: string,
  input: { doc?: ReportDocument; plan?: PlanDocument; label: string },
): Promise<ReportFiles> {
  if (!input.doc && !input.plan) throw new TypeError("a report needs a result or a plan");
  const source: ChartSource = {
    label: input.label,
    ...(input.doc ? { doc: input.doc } : {}),
    ...(input.plan ? { plan: input.plan } : {}),
  };
  const charts = reportCharts([source]);
  const tables = reportTables(input.doc, input.plan);
  const html = join(dir, "report.html");
  const markdown = join(dir, "report.md");
  // a result written before endpoints lost their user information may still hold one
  await writeFileAtomic(
    html,
    redactSecrets(
      await pageHtml({
        title: `tierbench report: ${input.label}`,
        facts: documentFacts(input.doc, input.plan),
        charts,
        tables,
      }),
    ),
  );
  await writeFileAtomic(
    markdown,
    redactSecrets(reportMarkdown(input.doc, input.plan, tables, charts)),
  );
  const csv: string[] = [];
  for (const t of tables) {
    const path = join(dir, `${t.name}.csv`);
    await writeFileAtomic(path, redactSecrets(tableCsv(t)));
    csv.push(path);
  }
  return { dir, html, markdown, csv, charts: charts.map((c) => c.id) };
}

/**
 * `tierbench report FILE [FILE]`: reads a result document and/or a plan (in
 * either order, told apart by their schema) and writes the report into
 * `outDir` (default `results/report-<first file's name>/` under `cwd`). Bad
 * input throws a {@linkcode InputError} naming the file.
 *
 * @example
 * ```ts ignore
 * const files = await writeReport(["results/readme-contention.json"], { outDir: "/tmp/rep" });
 * ```
 */
export async function writeReport(
  paths: readonly string[],
  options: { outDir?: string | undefined; cwd?: string } = {},
): Promise<ReportFiles> {
  if (paths.length === 0 || paths.length > 2) {
    throw new InputError(
      "report",
      `${paths.length} files given`,
      "RESULT.json, PLAN.json, or RESULT.json PLAN.json",
    );
  }
  const stem = basename(paths[0]!).replace(/\.json$/, "");
  const outDir = options.outDir ?? join(options.cwd ?? Deno.cwd(), "results", `report-${stem}`);
  checkOutputPath(join(outDir, "report.html")); // before reading: a directory it cannot write
  let doc: ReportDocument | undefined;
  let plan: PlanDocument | undefined;
  for (const p of paths) {
    const loaded = await loadDocument(p);
    if (loaded.kind === "result") {
      if (doc) throw new InputError(p, "a second result document; give one and a plan");
      doc = loaded.doc;
    } else {
      if (plan) throw new InputError(p, "a second plan; give one result and one plan");
      plan = loaded.doc;
    }
  }
  const label = paths.map((p) => basename(p)).join(" + ");
  return await buildReport(outDir, {
    label,
    ...(doc ? { doc } : {}),
    ...(plan ? { plan } : {}),
  });
}
