/**
 * Test helpers: fio itself, and fio's own json+ reader (Debian's fio
 * package, `fio_jsonplus_clat2csv`), run on documents the tests write.
 *
 * @module
 */

import assert from "node:assert/strict";

/** fio run with `args`; its stdout (the test fails on a non-zero exit). */
export async function fio(args: string[]): Promise<string> {
  const out = await new Deno.Command("fio", { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  assert.equal(out.code, 0, dec.decode(out.stderr));
  return dec.decode(out.stdout);
}

/**
 * `fio_jsonplus_clat2csv` on the json+ document `json`, writing its CSVs
 * beside `dest`, then again with `--validate`: the first CSV's header and
 * how many jobs it validated.
 */
export async function clat2csv(
  json: string,
  dest: string,
): Promise<{ header: string; jobs: number }> {
  const run = async (args: string[]) => {
    const out = await new Deno.Command("fio_jsonplus_clat2csv", {
      args,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const dec = new TextDecoder();
    assert.equal(out.code, 0, dec.decode(out.stderr) + dec.decode(out.stdout));
    return dec.decode(out.stdout);
  };
  await run([json, dest]);
  const validated = await run([json, dest, "--validate"]);
  const jobs = validated.split("\n").filter((l) => l.endsWith("validated")).length;
  const first = await Deno.readTextFile(dest.replace(/\.csv$/, "_job0.csv"));
  return { header: first.split("\n")[0]!, jobs };
}
