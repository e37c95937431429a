/**
 * docs/jobfiles.md's table of every fio option, written from
 * core/fio_options.ts (what tierbench does with each) and
 * core/fio_option_table.ts (fio's own list), between the markers
 * `<!-- fio options: begin -->` and `<!-- fio options: end -->`.
 *
 * ```sh
 * deno run --allow-read --allow-write tools/jobfile_options_doc.ts   # rewrites the table
 * ```
 *
 * A test (tools/jobfile_options_doc_test.ts) fails when the file's table is
 * not what this writes.
 *
 * @module
 */

import { FIO_OPTION_FACTS } from "../core/fio_option_table.ts";
import { fioOptionUse, TIERBENCH_KEYS } from "../core/fio_options.ts";

export const BEGIN = "<!-- fio options: begin -->";
export const END = "<!-- fio options: end -->";

const LABEL = { supported: "supported", accepted: "accepted, no effect", refused: "refused" };

/** The table's markdown: one row per option, fio's order, then tierbench's own keys. */
export function optionTable(): string {
  const rows = ["| option | | what tierbench does, or why |", "| --- | --- | --- |"];
  for (const o of distinctOptions()) {
    const use = fioOptionUse(o);
    const names = [o.name, o.alias].filter(Boolean).map((n) => `\`${n}\``).join(", ");
    const scope = o.engine ? ` (ioengine=${o.engine})` : o.profile ? ` (profile ${o.profile})` : "";
    rows.push(`| ${names}${scope} | ${LABEL[use.how]} | ${use.note.replaceAll("|", "\\|")} |`);
  }
  for (const [k, note] of Object.entries(TIERBENCH_KEYS)) {
    rows.push(`| \`${k}\` (tierbench's own) | supported | ${note} |`);
  }
  return rows.join("\n");
}

/** How many options each treatment has, for the docs' summary line. */
export function counts(): Record<string, number> {
  const out: Record<string, number> = { supported: 0, accepted: 0, refused: 0 };
  for (const o of distinctOptions()) out[fioOptionUse(o).how]!++;
  return out;
}

/** fio's options in fio's order, each (name, engine) once. */
function distinctOptions(): typeof FIO_OPTION_FACTS {
  const seen = new Set<string>();
  return FIO_OPTION_FACTS.filter((o) => {
    const key = `${o.name}|${o.engine ?? ""}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The document with its table replaced. */
export function withTable(doc: string): string {
  const a = doc.indexOf(BEGIN), b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error(`docs/jobfiles.md lacks the ${BEGIN} … ${END} markers`);
  return `${doc.slice(0, a + BEGIN.length)}\n\n${optionTable()}\n\n${doc.slice(b)}`;
}

if (import.meta.main) {
  const path = new URL("../docs/jobfiles.md", import.meta.url);
  Deno.writeTextFileSync(path, withTable(Deno.readTextFileSync(path)));
  console.log(`docs/jobfiles.md: ${JSON.stringify(counts())}`);
}
