/**
 * fio's own example job files, run unchanged. Debian's fio-examples package
 * installs them in /usr/share/doc/fio/examples (some gzipped); the test
 * picks, by parsing each file as fio does, every one whose jobs use psync
 * (or no ioengine), libaio, io_uring or null and name no /dev/ target, and
 * runs each with `tierbench run FILE` from a scratch directory of its own,
 * capped by fio's `--trigger-timeout`. Each either runs (exit 0, a result
 * document) or is refused in one line naming the file, line and option —
 * and then fio fails on the same file in the same place too. It prints a
 * line per file: how it ended, and the I/Os each job did.
 *
 * Files the examples name outside the scratch directory (/tmp/testfile,
 * /tmp/data) are removed afterwards when the test made them.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { needing } from "./_requirements.ts";
import { runCli, tempDirOnDisk } from "./_helpers.ts";
import { fioStatus } from "./_fio.ts";
import { parseJobFileText } from "../core/jobfile.ts";

const EXAMPLES = "/usr/share/doc/fio/examples";
/** The engines the examples are picked for (no ioengine: fio's default psync). */
const ENGINES = ["psync", "libaio", "io_uring", "null"];
/** How long each example may run (fio's --trigger-timeout), s. */
const CAP_S = 8;

/** Every example job file's name and text (gzipped ones unzipped). */
async function examples(): Promise<{ name: string; path: string; text: string }[]> {
  const out = [];
  for await (const e of Deno.readDir(EXAMPLES)) {
    const path = join(EXAMPLES, e.name);
    if (e.name.endsWith(".fio")) {
      out.push({ name: e.name, path, text: await Deno.readTextFile(path) });
    }
    if (e.name.endsWith(".fio.gz")) {
      const raw = (await Deno.open(path)).readable.pipeThrough(new DecompressionStream("gzip"));
      out.push({ name: e.name, path, text: await new Response(raw).text() });
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** Whether every job of a file uses one of {@linkcode ENGINES} and none targets /dev/. */
function picked(text: string): boolean {
  const f = parseJobFileText(text, "x.fio", {
    keywords: { pagesize: 4096, mbMemory: 1024, ncpus: 1 },
    env: () => undefined,
  });
  let engine = "psync";
  let device = false;
  for (const s of f.sections) {
    let own = engine;
    for (const e of s.entries) {
      const v = (e.value ?? "").trim();
      if (e.key === "ioengine") own = v;
      if ((e.key === "filename" || e.key === "directory") && v.startsWith("/dev/")) device = true;
    }
    if (s.global) engine = own;
    else if (!ENGINES.includes(own)) return false;
  }
  return !device;
}

/** What happened to one example. */
interface Outcome {
  readonly file: string;
  readonly how: "ran" | "refused";
  readonly detail: string;
}

async function runOne(ex: { name: string; path: string }): Promise<Outcome> {
  const dir = await tempDirOnDisk();
  try {
    const r = await runCli(
      ["run", ex.path, "--trigger-timeout", String(CAP_S), "--quiet", "--output", "out.json"],
      { cwd: dir },
    );
    if (r.code === 0) {
      const doc = JSON.parse(await Deno.readTextFile(join(dir, "out.json")));
      assert.equal(doc.status, "ok", `${ex.name}: ${r.stderr}`);
      const jobs =
        (doc.runs as { name: string; read: { total_ios: number }; write: { total_ios: number } }[])
          .map((run) => `${run.name} ${run.read.total_ios}r/${run.write.total_ios}w`);
      return { file: ex.name, how: "ran", detail: jobs.join(", ") };
    }
    assert.equal(r.code, 2, `${ex.name}: exit ${r.code}: ${r.stderr}`);
    const line = r.stderr.trim();
    assert.equal(line.split("\n").length, 1, `${ex.name}: one line: ${line}`);
    assert.match(line, new RegExp(`^tierbench: ${ex.path}:\\d+: \\S+: `), ex.name);
    // fio fails on it too, in a scratch directory of its own
    const fioDir = await tempDirOnDisk();
    try {
      const f = await fioStatus(
        ["--output-format=json", `--trigger-timeout=${CAP_S}`, ex.path],
        fioDir,
      );
      assert.notEqual(f.code, 0, `${ex.name}: tierbench refused (${line}) but fio ran it`);
      const why = f.out.split("\n").find((l) => /fio:|you need|not a directory|failed/.test(l)) ??
        "";
      return {
        file: ex.name,
        how: "refused",
        detail: `${line.replace(/^tierbench: /, "")} | fio: ${why.trim()}`,
      };
    } finally {
      await Deno.remove(fioDir, { recursive: true });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test(
  needing(["fio", "fio-examples"], {
    name: "fio's own examples (psync, libaio, io_uring, null; no device) run unchanged from a " +
      "scratch directory each, capped by --trigger-timeout; a refusal is one line, and fio " +
      "fails on that file too",
    async fn() {
      const outside = ["/tmp/testfile", "/tmp/data"];
      const existed = new Set(outside.filter((p) => {
        try {
          Deno.statSync(p);
          return true;
        } catch {
          return false;
        }
      }));
      const all = await examples();
      const chosen = all.filter((ex) => picked(ex.text));
      const outcomes: Outcome[] = [];
      try {
        for (const ex of chosen) outcomes.push(await runOne(ex));
      } finally {
        for (const p of outside) if (!existed.has(p)) await Deno.remove(p).catch(() => {});
      }
      const ran = outcomes.filter((o) => o.how === "ran");
      console.log(
        `fio's examples: ${chosen.length} of ${all.length} picked, ${ran.length} ran, ` +
          `${outcomes.length - ran.length} refused (fio fails on each of those too)`,
      );
      for (const o of outcomes) console.log(`  ${o.how.padEnd(7)} ${o.file}: ${o.detail}`);
      assert.ok(chosen.length >= 20, `the selection found ${chosen.length} files`);
      assert.ok(ran.length > chosen.length / 2, "most of the picked examples run");
    },
  }),
);
