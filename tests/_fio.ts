/**
 * Test helpers: fio itself, and fio's own json+ reader (Debian's fio
 * package, `fio_jsonplus_clat2csv`), run on documents the tests write.
 *
 * @module
 */

import assert from "node:assert/strict";

/** fio run with `args` (in `cwd`); its stdout (the test fails on a non-zero exit). */
export async function fio(args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command("fio", {
    args,
    stdout: "piped",
    stderr: "piped",
    ...(cwd ? { cwd } : {}),
  }).output();
  const dec = new TextDecoder();
  assert.equal(out.code, 0, dec.decode(out.stderr) + dec.decode(out.stdout));
  return dec.decode(out.stdout);
}

/** fio run with `args` in `cwd`: its exit status and what it printed. */
export async function fioStatus(
  args: string[],
  cwd: string,
  timeoutMs = 60_000,
): Promise<{ code: number; out: string }> {
  const child = new Deno.Command("fio", { args, cwd, stdout: "piped", stderr: "piped" }).spawn();
  const timer = setTimeout(() => child.kill("SIGINT"), timeoutMs);
  try {
    const out = await child.output();
    const dec = new TextDecoder();
    return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The I/Os of fio's `write_iolog` (version 2 or 3: `[time] file action
 * offset length`), as `file action offset length` lines; `sync` and
 * `datasync` as `file action`. A test's reading of fio's log only: the
 * product reads and writes iologs in its trace code.
 */
export function iologOps(text: string): string[] {
  return text.split("\n").flatMap((line) => {
    const f = line.trim().split(/\s+/);
    if (f.length < 2 || f[0] === "fio") return [];
    const at = /^\d+$/.test(f[0]!) && f.length >= 3 ? 1 : 0;
    const [file, action, offset, length] = f.slice(at);
    if (action === "read" || action === "write") return [`${file} ${action} ${offset} ${length}`];
    if (action === "sync" || action === "datasync") return [`${file} ${action}`];
    return [];
  });
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
