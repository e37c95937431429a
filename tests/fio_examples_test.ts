/**
 * fio's own example job files, run unchanged. Debian's fio-examples package
 * installs them in /usr/share/doc/fio/examples (some gzipped); the test
 * picks, by parsing each file as fio does, every one whose jobs use psync
 * (or no ioengine), libaio, io_uring or null and name no /dev/ target, and
 * runs each with `tierbench run FILE` from a scratch directory of its own,
 * capped by fio's `--trigger-timeout` (which, as in fio, counts from the
 * jobs' start, once their files are laid out). Each example ends one of
 * three ways, and each is held against fio:
 *
 * - it runs: exit 0, a result document, I/O done; `fio --parse-only` reads
 *   the file too, and where every job ended on its own before the cap (a
 *   size-based job), fio run the same way did the same I/Os per job;
 * - it is refused in one line naming the file, line and option: fio, run
 *   the same way, fails on the file too;
 * - a job fails because a file it reads does not fit the file system (one
 *   line saying what it needed and what was free): fio would fail the same
 *   way, after filling the file system, so fio is not run on it.
 *
 * It prints a line per file: how it ended, the I/Os per job, and fio's.
 * Files an example names outside its scratch directory (/tmp/testfile,
 * /tmp/data) must not exist beforehand (the example would overwrite them)
 * and are removed afterwards.
 */

import assert from "node:assert/strict";
import { isAbsolute, join } from "node:path";
import { needing } from "./_requirements.ts";
import { spawnCli, tempDirOnDisk } from "./_helpers.ts";
import { fioStatus } from "./_fio.ts";
import { parseJobFileText } from "../core/jobfile.ts";

const EXAMPLES = "/usr/share/doc/fio/examples";
/** The engines the examples are picked for (no ioengine: fio's default psync). */
const ENGINES = ["psync", "libaio", "io_uring", "null"];
/** How long each example's jobs may run (fio's --trigger-timeout), s. */
const CAP_S = 8;
/** How long one run may take in all, layouts included, before the test gives up on it, s. */
const WALL_S = 600;

interface Example {
  readonly name: string;
  readonly path: string;
  readonly text: string;
}

/** Every example job file's name and text (gzipped ones unzipped). */
async function examples(): Promise<Example[]> {
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

/** Each entry of a job file as fio reads it (no environment: ${VAR} empty). */
function entriesOf(text: string) {
  return parseJobFileText(text, "x.fio", {
    keywords: { pagesize: 4096, mbMemory: 1024, ncpus: 1 },
    env: () => undefined,
  }).sections;
}

/** Whether every job of a file uses one of {@linkcode ENGINES} and none targets /dev/. */
function picked(text: string): boolean {
  let engine = "psync";
  let device = false;
  for (const s of entriesOf(text)) {
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

/** The absolute file names a job file gives (`:` between names, `\:` a colon in one). */
function absoluteFiles(text: string): string[] {
  const out = new Set<string>();
  for (const s of entriesOf(text)) {
    for (const e of s.entries) {
      if (e.key !== "filename") continue;
      for (const f of (e.value ?? "").split(/(?<!\\):/)) {
        if (isAbsolute(f)) out.add(f.replaceAll("\\:", ":"));
      }
    }
  }
  return [...out];
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

type Counts = Map<string, { r: number; w: number }>;

/** I/Os per job name (a job's numjobs clones summed) in fio's JSON or tierbench's document. */
function counts(jobs: { name: string; r: number; w: number }[]): Counts {
  const out: Counts = new Map();
  for (const j of jobs) {
    const c = out.get(j.name) ?? { r: 0, w: 0 };
    out.set(j.name, { r: c.r + j.r, w: c.w + j.w });
  }
  return out;
}

const show = (c: Counts) => [...c].map(([n, { r, w }]) => `${n} ${r}r/${w}w`).join(", ");

/** What happened to one example. */
interface Outcome {
  readonly file: string;
  readonly how: "ran" | "refused" | "no room";
  readonly detail: string;
}

/** tierbench run on `ex` in `dir`, capped; killed (and the test failed) past {@linkcode WALL_S}. */
async function runTierbench(ex: Example, dir: string) {
  const child = spawnCli(
    ["run", ex.path, "--trigger-timeout", String(CAP_S), "--quiet", "--output", "out.json"],
    { cwd: dir },
  );
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    child.kill("SIGKILL");
  }, WALL_S * 1000);
  try {
    const out = await child.output();
    assert.ok(!killed, `${ex.name}: still running after ${WALL_S} s`);
    return { code: out.code, stderr: new TextDecoder().decode(out.stderr).trim() };
  } finally {
    clearTimeout(timer);
  }
}

/** fio on `ex` in a scratch directory of its own, as tierbench ran it; its JSON when asked. */
async function runFio(ex: Example, json: boolean) {
  const dir = await tempDirOnDisk();
  try {
    const out = json ? ["--output-format=json", "--output=fio.json"] : [];
    const f = await fioStatus([...out, `--trigger-timeout=${CAP_S}`, ex.path], dir, WALL_S * 1000);
    const doc = json && f.code === 0
      ? JSON.parse(await Deno.readTextFile(join(dir, "fio.json")))
      : undefined;
    return { ...f, doc };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A run that ended with a result: checked, and held against fio where the counts are fio's. */
async function ran(ex: Example, dir: string): Promise<Outcome> {
  const doc = JSON.parse(await Deno.readTextFile(join(dir, "out.json")));
  assert.equal(doc.status, "ok", ex.name);
  type Run = {
    name: string;
    not_started?: string;
    options: { time_based: boolean };
    read: { total_ios: number; runtime: number };
    write: { total_ios: number; runtime: number };
  };
  const runs = doc.runs as Run[];
  const mine = counts(
    runs.map((r) => ({ name: r.name, r: r.read.total_ios, w: r.write.total_ios })),
  );
  assert.ok(runs.some((r) => r.read.total_ios + r.write.total_ios > 0), `${ex.name}: no I/O`);
  const parse = await fioStatus(["--parse-only", ex.path], dir);
  assert.equal(parse.code, 0, `${ex.name}: tierbench ran it but fio --parse-only refused it`);
  const capMs = CAP_S * 1000 * 0.8;
  // The cap ends the whole file: a group that started late and was cut has a short runtime but
  // cut counts, so only a file that ended well before the cap, on both sides, is held to fio's.
  const wallMs = Date.parse(doc.finished) - Date.parse(doc.started);
  const onItsOwn = wallMs < capMs &&
    runs.every((r) =>
      !r.not_started && !r.options.time_based && Math.max(r.read.runtime, r.write.runtime) < capMs
    );
  if (!onItsOwn) return { file: ex.name, how: "ran", detail: `${show(mine)} (until the cap)` };
  const fioStart = performance.now();
  const f = await runFio(ex, true);
  const fioWallMs = performance.now() - fioStart; // fio's start and layout too: errs on the safe side
  assert.equal(f.code, 0, `${ex.name}: tierbench ran it, fio failed: ${f.out}`);
  type FioJob = { jobname: string; job_runtime: number; read: Obj; write: Obj };
  type Obj = { total_ios: number };
  const fjobs = f.doc.jobs as FioJob[];
  const theirs = counts(
    fjobs.map((j) => ({ name: j.jobname, r: j.read.total_ios, w: j.write.total_ios })),
  );
  if (fioWallMs >= capMs || fjobs.some((j) => j.job_runtime >= capMs)) {
    return {
      file: ex.name,
      how: "ran",
      detail: `${show(mine)} | fio (until the cap): ${show(theirs)}`,
    };
  }
  assert.deepEqual(mine, theirs, `${ex.name}: I/Os per job, tierbench beside fio`);
  return { file: ex.name, how: "ran", detail: `${show(mine)} | fio: the same` };
}

async function runOne(ex: Example): Promise<Outcome> {
  const outside = absoluteFiles(ex.text);
  const there = outside.filter(exists);
  assert.deepEqual(there, [], `${ex.name} would overwrite ${there.join(", ")}: remove it first`);
  const dir = await tempDirOnDisk();
  try {
    const r = await runTierbench(ex, dir);
    if (r.code === 0) return await ran(ex, dir);
    assert.equal(r.stderr.split("\n").length, 1, `${ex.name}: one line: ${r.stderr}`);
    const line = r.stderr.replace(/^tierbench: /, "");
    if (r.code === 1) {
      // a layout the file system has no room for: fio would fill it before failing
      const m = /ENOSPC \(laying the file out needs (\d+) bytes; (\d+) are free\)/.exec(line);
      assert.ok(m && Number(m[1]) > Number(m[2]), `${ex.name}: exit 1: ${r.stderr}`);
      return {
        file: ex.name,
        how: "no room",
        detail: `${line} | fio: not run (it would fill the file system, then fail with ENOSPC)`,
      };
    }
    assert.equal(r.code, 2, `${ex.name}: exit ${r.code}: ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^tierbench: ${ex.path}:\\d+: \\S+: `), ex.name);
    const f = await runFio(ex, false);
    assert.notEqual(f.code, 0, `${ex.name}: tierbench refused (${line}) but fio ran it`);
    const why = f.out.split("\n").find((l) => /fio:|you need|not a directory|failed/.test(l));
    return { file: ex.name, how: "refused", detail: `${line} | fio: ${(why ?? "").trim()}` };
  } finally {
    await Deno.remove(dir, { recursive: true });
    for (const p of outside) await Deno.remove(p).catch(() => {});
  }
}

Deno.test(
  needing(["fio", "fio-examples"], {
    name: "fio's own examples (psync, libaio, io_uring, null; no device) run unchanged from a " +
      "scratch directory each, capped by --trigger-timeout; what does not run fails in fio too",
    async fn() {
      const all = await examples();
      const chosen = all.filter((ex) => picked(ex.text));
      const outcomes: Outcome[] = [];
      for (const ex of chosen) {
        const o = await runOne(ex); // a line per file as it ends: the whole takes minutes
        console.log(`  ${o.how.padEnd(7)} ${o.file}: ${o.detail}`);
        outcomes.push(o);
      }
      const n = (how: Outcome["how"]) => outcomes.filter((o) => o.how === how).length;
      console.log(
        `fio's examples: ${chosen.length} of ${all.length} picked, ${n("ran")} ran, ` +
          `${n("refused")} refused, ${n("no room")} without room to lay out ` +
          `(fio fails on each of those too)`,
      );
      assert.ok(chosen.length >= 20, `the selection found ${chosen.length} files`);
    },
  }),
);
