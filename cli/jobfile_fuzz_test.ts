/**
 * Job files at random (fast-check): sections, fio's keys tierbench takes and
 * keys it does not, values a user might type, bare keys, comments and noise.
 * Read and checked as `tierbench run JOB.fio` does it before any I/O, each
 * file gives jobs whose every value is in range, or one error of one line
 * that names the file, the line and the key — the line that holds that key,
 * and the value it quotes — never another error.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { parseJobFileText } from "../core/jobfile.ts";
import { hostResolveContext, resolveJobFile } from "../core/jobfile_resolve.ts";
import type { JobOptions } from "../core/config.ts";
import { ConfigError } from "../core/errors.ts";
import { numberishText, params } from "../tests/_fuzz.ts";

const FILE = "f.fio";
const DIR = Deno.makeTempDirSync({ prefix: "tierbench-jobfile-fuzz-" });
addEventListener("unload", () => Deno.removeSync(DIR, { recursive: true }));

/** The keys the fuzzer writes: fio's common ones and tierbench's own. */
const JOB_FILE_KEYS: readonly string[] = [
  ..."name rw readwrite rwmixread rwmixwrite bs blocksize size io_size io_limit runtime"
    .split(" "),
  ..."time_based ramp_time iodepth numjobs direct buffered ioengine fixedbufs registerfiles"
    .split(" "),
  ..."sqthread_poll randseed log_avg_msec nrfiles rate rate_iops rate_process end_fsync"
    .split(" "),
  ..."directory filename stonewall wait_for_previous new_group group_reporting thread"
    .split(" "),
  ..."description tier file_layout timeout endpoint region object_size part_size".split(" "),
  ..."multipart_threshold request_timeout".split(" "),
];

/** Reads and checks `text` as `tierbench run f.fio` does before any I/O. */
function jobsOf(text: string): JobOptions[] {
  const keywords = { pagesize: 4096, mbMemory: 1024, ncpus: 2 };
  const parsed = parseJobFileText(text, FILE, { keywords, env: () => undefined });
  return resolveJobFile(parsed, { ...hostResolveContext(), cwd: DIR }).jobs.map((j) => j.job);
}

/** A value for a key: what fio takes, near misses and noise. */
const value: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: numberishText },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "read",
      "write",
      "randrw",
      "libaio",
      "io_uring",
      "psync",
      "posixaio",
      "1",
      "0",
      "4k",
      "1m",
      "-1",
      DIR,
      "relative/dir",
      "s3://bucket/p",
      "memory:",
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }).filter((s) => !/[\r\n]/.test(s)) },
);

/** One line of a job file. */
const line: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.tuple(fc.constantFrom(...JOB_FILE_KEYS), value).map(([k, v]) => `${k}=${v}`),
  },
  { weight: 2, arbitrary: fc.constantFrom(...JOB_FILE_KEYS) }, // a bare key
  { weight: 2, arbitrary: fc.constant(`directory=${DIR}`) },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom("bogus_key", "blocksize_range", "thread", "zonemode"),
      value,
    )
      .map(([k, v]) => `${k}=${v}`),
  },
  { weight: 1, arbitrary: fc.constantFrom("; a comment", "# another", "", "  ") },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }).filter((s) => !/[\r\n]/.test(s)) },
);

/** A file: sections of lines, the first often [global]. */
const jobFile: fc.Arbitrary<string> = fc.array(
  fc.tuple(
    fc.constantFrom("[global]", "[job1]", "[job2]", "[reader]", "[w]"),
    fc.array(line, { maxLength: 6 }),
  ),
  { minLength: 1, maxLength: 4 },
).map((sections) => sections.map(([head, lines]) => [head, ...lines].join("\n")).join("\n"));

/** Checks `e` names the file, a line holding the key it names, and the value it quotes. */
function assertNamesItsLine(e: ConfigError, text: string): void {
  const what = `${e.message}\n--- file ---\n${text}`;
  assert.equal(e.message.includes("\n"), false, what);
  const m = /^f\.fio(?::(\d+))?( \[[^\]]*\])?: (?:([A-Za-z_][A-Za-z0-9_-]*): )?(.*)$/
    .exec(e.message);
  assert.ok(m, `names no place: ${what}`);
  if (m[1] === undefined || m[2] !== undefined || m[3] === undefined) return; // file, section, line
  const at = text.split(/\r?\n/)[Number(m[1]) - 1]?.trim() ?? "";
  const key = m[3]!;
  // a key the section lacks, said at the section: as fio, any line starting "[" opens one
  // (fio reads "[!" as a section named "", its last character dropped)
  if (at.startsWith("[") && at.length > 1) return;
  if (!JOB_FILE_KEYS.includes(key)) return; // not a key=value line, or an unknown key
  assert.ok(at === key || at.startsWith(`${key}=`) || at.startsWith(`${key} `), `line: ${what}`);
  const quoted = /^"([^"]*)"/.exec(m[4]!)?.[1];
  // a value holding a double quote cannot be told from the quotes around it
  if (quoted !== undefined && at.includes("=") && !at.includes('"')) {
    const written = at.slice(at.indexOf("=") + 1).trim();
    assert.ok(
      written.includes(quoted.replace(/^(file|pfs|memory):/, "")) || quoted.includes(written),
      `the value quoted is not the line's: ${what}`,
    );
  }
}

Deno.test("a job file at random gives jobs in range, or one error naming its file, line, key and value", () => {
  fc.assert(
    fc.property(jobFile, (text) => {
      let jobs;
      try {
        jobs = jobsOf(text);
      } catch (e) {
        if (!(e instanceof ConfigError)) {
          throw new Error(`not a ConfigError: ${e}\n--- file ---\n${text}`, { cause: e });
        }
        assertNamesItsLine(e, text);
        return;
      }
      for (const j of jobs) {
        assert.ok(j.bs >= 1 && j.bs <= 256 * 2 ** 20, `bs ${j.bs}`);
        assert.ok(j.size >= j.bs && j.size % j.bs === 0, `size ${j.size}`);
        assert.ok(Number.isSafeInteger(j.iodepth) && j.iodepth >= 1, `iodepth ${j.iodepth}`);
        assert.ok(j.runtimeMs === undefined || (j.runtimeMs > 0 && Number.isFinite(j.runtimeMs)));
      }
    }),
    params,
  );
});

Deno.test("a job file blames a bad value on its own line, not the line of a key after it", () => {
  const cases: [string, RegExp][] = [
    // time_based once took over where runtime's errors pointed
    [`directory=${DIR}\nruntime=-1\ntime_based`, /^f\.fio:3: runtime: -1: -1 is negative/],
    // and directory= over tier='s
    [`tier=read\ndirectory=${DIR}`, /^f\.fio:2: tier: "read" is not a tier of a directory/],
    // tierbench's own keys, once blamed on the section under run's spelling (`timeout`)
    [
      `directory=${DIR}\nsize=1m\nrequest_timeout=x`,
      /^f\.fio:4: request_timeout: "x" is not a duration/,
    ],
    [`tier=s3://b/p\npart_size=1x`, /^f\.fio:3: part_size: "1x" is not a size/],
  ];
  for (const [lines, says] of cases) {
    const text = `[global]\n${lines}\n[j]\nrw=read\n`;
    assert.throws(
      () => jobsOf(text),
      (e: Error) => says.test(e.message),
      text,
    );
  }
});
