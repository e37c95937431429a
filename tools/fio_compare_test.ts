import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { needing } from "../tests/_requirements.ts";

Deno.test(needing(["fio"], {
  name: "bench:fio runs every case with both tools and writes its figures (no speed asserted)",
  fn: fioCompareRuns,
}));
async function fioCompareRuns() {
  const dir = await tempDirOnDisk();
  try {
    const output = join(dir, "compare.json");
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        new URL("./fio_compare.ts", import.meta.url).pathname,
        "--dir",
        dir,
        "--rounds",
        "1",
        "--runtime",
        "1",
        "--ramp",
        "0",
        "--size",
        "16m",
        "--tmpfs-size",
        "16m",
        "--output",
        output,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, text);
    const doc = JSON.parse(await Deno.readTextFile(output));
    assert.equal(doc.cases.length, 9);
    for (const c of doc.cases) {
      assert.ok(c.tierbench_median > 0 && c.fio_median > 0, c.id);
      assert.ok(Number.isFinite(c.ratio_median), c.id);
    }
    assert.ok(doc.rss.ratio_median > 0);
    assert.match(text, /\| case \| tierbench \| fio \| ratio \|/);
    const left = [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n !== "compare.json");
    assert.deepEqual(left, [], "scratch directories removed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
