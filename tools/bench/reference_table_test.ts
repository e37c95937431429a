import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath as fromFileUrl } from "node:url";
import { readProfile } from "../../solver/profile.ts";
import {
  ARTIFACT_PROFILE,
  artifactRow,
  calibrate,
  PUBLISHED,
  REFERENCE_MODELS,
  referenceTable,
} from "./reference_table.ts";

const REFERENCE = fromFileUrl(new URL("../../results/reference/", import.meta.url));

/** The committed reference profiles' file names. */
function referenceNames(): string[] {
  return [...Deno.readDirSync(REFERENCE)].filter((e) => e.name.endsWith(".json"))
    .map((e) => e.name).sort();
}

Deno.test("tools/bench/reference_table.ts prints a row per committed reference profile and model, with the published times and what is calibration", async () => {
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

/** Runs the tool with `args`: its exit code, stdout and stderr. */
async function tool(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", fromFileUrl(new URL("./reference_table.ts", import.meta.url)), ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("bench:reference --calibrate 40b --json prints one line per prediction of every other published row", async () => {
  const { code, stdout, stderr } = await tool("--calibrate", "40b", "--json");
  assert.equal(code, 0, stderr);
  const lines = stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((l) => `${l.model} ${l.system}`),
    ["52b", "70b", "100b", "120b"].flatMap((m) => [`${m} zero-3`, `${m} mlp-offload`]),
  );
  for (const l of lines) {
    assert.ok(Number.isFinite(l.predicted_s) && l.predicted_s > 0, JSON.stringify(l));
    const pub = PUBLISHED[l.model as keyof typeof PUBLISHED];
    assert.equal(l.published_s, l.system === "zero-3" ? pub.zero3 : pub.mlp_offload);
  }
  // one scale for every prediction
  assert.equal(new Set(lines.map((l) => l.bandwidth_scale)).size, 1);
});

Deno.test("calibrate() fits the calibration row: a scale 5 % either way fits it worse", async () => {
  const profile = await readProfile(join(REFERENCE, ARTIFACT_PROFILE));
  const s = calibrate(profile, "40b");
  const cost = (x: number) => {
    const p = artifactRow(profile, "40b", x);
    return Math.log(p.zero3 / PUBLISHED["40b"].zero3) ** 2 +
      Math.log(p.mlp_offload / PUBLISHED["40b"].mlp_offload) ** 2;
  };
  assert.ok(cost(s) < cost(s * 1.05) && cost(s) < cost(s / 1.05), `scale ${s}`);
  // the bandwidth scale is the only knob: more bandwidth, shorter predicted phases
  const slow = artifactRow(profile, "70b", 0.5), fast = artifactRow(profile, "70b", 1);
  assert.ok(slow.zero3 > fast.zero3 && slow.mlp_offload > fast.mlp_offload);
});

Deno.test("bench:reference --calibrate names the rows it takes when given another", async () => {
  const { code, stderr } = await tool("--calibrate", "41b");
  assert.equal(code, 2);
  assert.match(
    stderr,
    /--calibrate: "41b" is not a row of the published table; use one of 40b, 52b/,
  );
});
