import assert from "node:assert/strict";
import { fileURLToPath as fromFileUrl } from "node:url";
import { PUBLISHED, REFERENCE_MODELS, referenceTable } from "./reference_table.ts";

const REFERENCE = fromFileUrl(new URL("../results/reference/", import.meta.url));

/** The committed reference profiles' file names. */
function referenceNames(): string[] {
  return [...Deno.readDirSync(REFERENCE)].filter((e) => e.name.endsWith(".json"))
    .map((e) => e.name).sort();
}

Deno.test("tools/reference_table.ts prints a row per committed reference profile and model, with the published times and what is calibration", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", fromFileUrl(new URL("./reference_table.ts", import.meta.url))],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const names = referenceNames();
  assert.ok(names.includes("mlpoffload-artifact-4gpu-nvme-vast.json"), names.join(", "));
  const rows = text.split("\n").filter((l) => /^\| [a-z0-9-]+\.json \|/.test(l));
  assert.equal(rows.length, names.length * REFERENCE_MODELS.length, text);
  for (const name of names) {
    for (const model of REFERENCE_MODELS) {
      const row = rows.find((r) => r.startsWith(`| ${name} | ${model.toUpperCase()} |`));
      assert.ok(row, `${name} ${model}`);
      const cells = row.split("|").map((c) => c.trim());
      // plan, ZeRO-Infinity and MLP-Offload's fixed ratio are predicted (every profile has a
      // remote tier), the published figures are the artifact's, the differences signed
      for (const c of cells.slice(3, 6)) assert.match(c, /^\d+(\.\d+)? s/, row);
      assert.equal(cells[6], `${Math.round(PUBLISHED[model].zero3)} s`, row);
      assert.match(cells[8]!, /^[+−]\d+ %$/, row);
      assert.match(cells[9]!, /^[+−]\d+ %$/, row);
    }
    assert.ok(text.includes(`- ${name}: `), `${name}: no calibration line`);
  }
});

Deno.test("referenceTable() refuses an empty list of profiles", async () => {
  await assert.rejects(() => referenceTable([]), RangeError);
});
