import assert from "node:assert/strict";
import { FIO_OPTION_FACTS } from "../core/fio_option_table.ts";
import { FIO_OPTIONS } from "../core/fio_options.ts";
import { BEGIN, END, optionTable } from "./jobfile_options_doc.ts";

/** A markdown table's rows as trimmed cells, separators and padding aside. */
function rows(table: string): string[] {
  return table.split("\n").filter((l) => l.startsWith("|") && !/^\|[\s-|]+\|$/.test(l)).map((l) =>
    l.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()).join(" | ")
  );
}

Deno.test("docs/jobfiles.md's table is every fio option with what core/fio_options.ts says of it", async () => {
  const doc = await Deno.readTextFile(new URL("../docs/jobfiles.md", import.meta.url));
  const table = doc.slice(doc.indexOf(BEGIN) + BEGIN.length, doc.indexOf(END));
  assert.deepEqual(
    rows(table),
    rows(optionTable()),
    "run: deno run --allow-read --allow-write tools/jobfile_options_doc.ts && deno fmt docs/",
  );
});

Deno.test("every option fio parses has a treatment, and none is described twice", () => {
  const names = new Set(FIO_OPTION_FACTS.filter((o) => o.engine !== "pvsync2").map((o) => o.name));
  for (const n of names) assert.ok(n in FIO_OPTIONS, `${n} has no entry in core/fio_options.ts`);
  for (const n of Object.keys(FIO_OPTIONS)) {
    assert.ok(FIO_OPTION_FACTS.some((o) => o.name === n), `${n} is not one of fio's options`);
  }
});
