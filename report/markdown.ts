/**
 * The report's Markdown summary: what was measured where, and every table.
 *
 * @module
 */

import type { ReportDocument } from "./document.ts";
import type { ChartSpec } from "./_charts.ts";
import type { PlanDocument } from "../schema/plan.ts";
import type { Cell, ReportTable } from "./tables.ts";

function cell(c: Cell): string {
  if (c === null) return "–";
  return String(c).replaceAll("|", "\\|").replaceAll("\n", " ");
}

/**
 * A table as a GitHub pipe table (numbers right-aligned).
 *
 * @example
 * ```ts
 * import { tableMarkdown } from "./markdown.ts";
 * const md = tableMarkdown({ name: "t", title: "T", columns: ["a", "b"], rows: [["x", 1]] });
 * console.assert(md.includes("| x | 1 |"));
 * ```
 */
export function tableMarkdown(t: ReportTable): string {
  const numeric = t.columns.map((_, i) =>
    t.rows.length > 0 && t.rows.every((r) => r[i] === null || typeof r[i] === "number")
  );
  return [
    `| ${t.columns.map(cell).join(" | ")} |`,
    `| ${numeric.map((n) => (n ? "---:" : "---")).join(" | ")} |`,
    ...t.rows.map((r) => `| ${r.map(cell).join(" | ")} |`),
  ].join("\n");
}

/** One line per fact of where and when a document was measured. */
export function documentFacts(doc: ReportDocument | undefined, plan?: PlanDocument): string[] {
  const out: string[] = [];
  if (doc) {
    const h = doc.host;
    out.push(
      `result: ${doc.kind} ${doc.run_id}, ${doc.started} → ${doc.finished}, status ${doc.status}` +
        (doc.error ? ` (${doc.error})` : ""),
    );
    if (h) {
      out.push(
        `host: ${h.hostname}, ${h.cpu_model} (${h.cores} cores), ` +
          `${(h.memory_bytes / 1024 ** 3).toFixed(1)} GiB, ${h.os} ${h.kernel} ${h.arch}`,
      );
    }
    if (doc.tool) out.push(`tool: ${doc.tool.name} ${doc.tool.version} on deno ${doc.tool.deno}`);
  }
  if (plan) {
    out.push(
      `plan: ${plan.created}, profile ${plan.profile?.source ?? "?"}` +
        (plan.profile?.host ? ` (${plan.profile.host})` : ""),
    );
    for (const w of plan.why ?? []) out.push(`why: ${w}`);
  }
  return out;
}

/**
 * The Markdown summary of a report.
 *
 * @example
 * ```ts ignore
 * await Deno.writeTextFile("report.md", reportMarkdown(doc, plan, tables, charts));
 * ```
 */
export function reportMarkdown(
  doc: ReportDocument | undefined,
  plan: PlanDocument | undefined,
  tables: readonly ReportTable[],
  charts: readonly ChartSpec[],
): string {
  const parts = [
    "# tierbench report",
    "",
    ...documentFacts(doc, plan).map((l) => `- ${l}`),
    "",
    `Charts in report.html: ${charts.map((c) => c.title.toLowerCase()).join("; ") || "none"}.`,
  ];
  for (const t of tables) {
    parts.push("", `## ${t.title}`, "", tableMarkdown(t), "", `CSV: ${t.name}.csv`);
  }
  return parts.join("\n") + "\n";
}
