/**
 * Job files generated at random (fast-check), read by tierbench and by fio
 * 3.33 itself (`fio --parse-only --debug=parse`). What fio refuses,
 * tierbench refuses; what fio accepts, tierbench accepts with the same
 * values — every number fio read, part by part, read the same — or refuses
 * by name (one line naming the file, line and option). The generator mixes
 * valid values, near misses and noise: size and time suffixes (`kib`,
 * `10sec`, a blank before the number), per-direction lists, ranges, splits,
 * the words of string options with their `:N` suffixes, bare flags, unknown
 * and deprecated options, comments after values, `key = value` spacing,
 * `${VAR}` set and unset, `$ncpus` with math, and `kb_base=1000`.
 *
 * The seed is printed; rerun a failure with `TIERBENCH_FUZZ_SEED=<seed>`.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import fc from "fast-check";
import { needing } from "../tests/_requirements.ts";
import { SEED } from "../tests/_fuzz.ts";
import { withTempDir } from "../tests/_helpers.ts";
import { JobFileError, parseJobFileText } from "./jobfile.ts";
import { type FioSetting, FioSettings } from "./fio_settings.ts";
import { hostKeywords } from "./fio_values.ts";

const size = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("4k", "8k", "4096", "1m", "64k", "4kib", "4KiB", "512") },
  fc.constantFrom("1.5k", " 4k", "4 k", "0x1000", "2g", "1mb", "3kb", "1t", "0", "-4k", "4z", "k"),
  fc.constantFrom("", "4kx"),
  fc.tuple(fc.integer({ min: 1, max: 4096 }), fc.constantFrom("", "k", "K", "m", "ki", "mib", "b"))
    .map(([n, u]) => `${n}${u}`),
);
const time = fc.oneof(
  fc.constantFrom("10", "10s", "250ms", "2m", "1h", "10sec", "5us", "3d", "-5", "x", "1.5"),
  fc.tuple(fc.integer({ min: 0, max: 100000 }), fc.constantFrom("", "s", "ms", "us", "m"))
    .map(([n, u]) => `${n}${u}`),
);
const int = (min: number, max: number) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.integer({ min, max }).map(String) },
    fc.constantFrom("-1", "0", "x", "", "4k", "1e3", "0x10", "7 ", "100", "101", "99999999999"),
  );
const flag = fc.constantFrom(undefined, "1", "0", "2", "yes", "", "-1", " 1");
const words = (ws: string[]) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...ws) },
    fc.constantFrom("bogus", "", "READ"),
  );

/** One option line's key and value (undefined: a bare key). */
const OPTIONS: Record<string, fc.Arbitrary<string | undefined>> = {
  bs: fc.oneof(size, fc.tuple(size, size).map(([a, b]) => `${a},${b}`)),
  blocksize: size,
  ba: size,
  size: fc.oneof(size, fc.constantFrom("50%", "100%", "0%", "150%")),
  io_size: size,
  filesize: fc.oneof(size, fc.tuple(size, size).map(([a, b]) => `${a}-${b}`)),
  offset: fc.oneof(size, fc.constantFrom("10%", "3%")),
  bsrange: fc.oneof(
    fc.tuple(size, size).map(([a, b]) => `${a}-${b}`),
    fc.tuple(size, size, size, size).map(([a, b, c, d]) => `${a}:${b},${c}-${d}`),
    size,
  ),
  bssplit: fc.oneof(
    fc.constantFrom("4k/50:8k/50", "4k/10:64k/90,8k", "512/10:1k/5:4k/85", "4k/60:8k/60:16k"),
    fc.constantFrom("4k/", "4k", "x/10", "4k/101:8k/", "4k/70:8k/70:1k/1"),
  ),
  iodepth: int(0, 64),
  numjobs: int(1, 8),
  nrfiles: int(1, 8),
  loops: int(0, 4),
  rwmixread: int(0, 100),
  rwmixwrite: int(0, 100),
  percentage_random: fc.oneof(int(0, 100), fc.constantFrom("30,70", "101")),
  buffer_compress_percentage: int(0, 100),
  dedupe_percentage: int(0, 100),
  log_avg_msec: int(0, 1000),
  fsync: int(0, 64),
  thinktime: int(0, 1000),
  flow: int(0, 9),
  rate: fc.oneof(size, fc.tuple(size, size).map(([a, b]) => `${a},${b}`)),
  rate_iops: fc.oneof(int(0, 10000), fc.constantFrom("100,200")),
  number_ios: int(0, 1000),
  randseed: int(0, 100000),
  runtime: time,
  timeout: time,
  ramp_time: time,
  startdelay: fc.oneof(time, fc.constantFrom("1-3", "2:5")),
  direct: flag,
  buffered: flag,
  time_based: flag,
  norandommap: flag,
  randrepeat: flag,
  end_fsync: flag,
  invalidate: flag,
  group_reporting: flag,
  thread: flag,
  refill_buffers: flag,
  zero_buffers: flag,
  stonewall: flag,
  rw: fc.oneof(
    words(["read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim"]),
    fc.constantFrom("randread:8", "read:4k", "read:-8k", "write:x", "randrw:2", "read:"),
  ),
  readwrite: words(["read", "randwrite"]),
  ioengine: words(["psync", "libaio", "io_uring", "null", "sync", "mmap"]),
  random_distribution: fc.oneof(
    words(["random", "zipf", "pareto", "normal", "gauss", "zoned"]),
    fc.constantFrom(
      "zipf:1.2",
      "zipf:1",
      "pareto:0.3",
      "pareto:1.5",
      "normal:10",
      "normal:150",
      "zipf:0.8:0.5",
      "zipf:0.8:2",
      "zoned:50/5:30/15:20/",
      "zoned:50/5:30/15",
      "zoned:60/10:40/90",
      "zoned_abs:50/4m:50/8m",
      "zoned:x",
    ),
  ),
  file_service_type: fc.oneof(
    words(["roundrobin", "sequential", "random", "zipf"]),
    fc.constantFrom("roundrobin:4", "random:2", "zipf:1.2", "pareto:2"),
  ),
  fallocate: words(["none", "native", "posix", "keep", "truncate", "0", "1"]),
  fadvise_hint: words(["0", "1", "sequential", "random"]),
  rate_process: words(["linear", "poisson"]),
  continue_on_error: words(["none", "read", "write", "io", "all", "1", "0"]),
  dedupe_mode: words(["repeat", "working_set"]),
  rw_sequencer: words(["sequential", "identical"]),
  sync: words(["none", "0", "1", "sync", "dsync"]),
  io_submit_mode: words(["inline", "offload"]),
  exit_what: words(["group", "stonewall", "all"]),
  ignore_error: fc.constantFrom("EIO", "EIO:ENOSPC,5", ",ENOSPC", "EFOO", "x"),
  buffer_pattern: fc.constantFrom("0xdeadbeef", '"abcd"', "-12", '0xdead"ab"', '"open', "x"),
  name: fc.constantFrom("a", "job 2", "x"),
  description: fc.constantFrom("a test", ""),
  filename: fc.constantFrom("f1", "f1:f2", "a\\:b", ""),
  kb_base: words(["1024", "1000"]),
  zonemode: words(["none", "strided", "zbd"]),
  rwmixcycle: int(0, 10),
  bogus_option: fc.constantFrom("1", undefined),
  threads: int(1, 4),
};
const KEYS = Object.keys(OPTIONS);

/** One line: the option in one of its spellings, maybe a comment after it. */
const line = fc.constantFrom(...KEYS).chain((key) =>
  fc.tuple(
    fc.constant(key),
    OPTIONS[key]!,
    fc.constantFrom("", "", "", " ; a comment", " # another", "\t;x"),
    fc.constantFrom("=", "=", "=", " = ", "= "),
  ).map(([k, v, comment, eq]) => (v === undefined ? `${k}${comment}` : `${k}${eq}${v}${comment}`))
);
const special = fc.constantFrom(
  "rw=${TB_FUZZ_RW}",
  "bs=${TB_FUZZ_UNSET}",
  "numjobs=$ncpus",
  "size=$mb_memory*2",
  "iodepth=$ncpus/2",
  "; only a comment",
  "",
  "   ",
);
const section = fc.tuple(
  fc.constantFrom("global", "a", "b", "job x"),
  fc.array(fc.oneof({ weight: 6, arbitrary: line }, { weight: 1, arbitrary: special }), {
    minLength: 1,
    maxLength: 4,
  }),
).map(([name, lines]) => `[${name}]\n${lines.join("\n")}\n`);
const jobFile = fc.array(section, { minLength: 1, maxLength: 3 }).map((s) => s.join(""));

/** Each option's numbers as fio's --debug=parse printed them (ret=0 parts), in order. */
function fioNumbers(debug: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  let current: string | undefined;
  for (const l of debug.split("\n")) {
    const h = /__handle_option=([^,]+), type=/.exec(l);
    if (h) {
      current = h[1]!;
      if (!out.has(current)) out.set(current, []);
      continue;
    }
    const r = /ret=0, out=(\d+)/.exec(l);
    if (r && current) {
      const v = BigInt(r[1]!);
      // a percentage is stored as 2^64 - 1 - p
      out.get(current)!.push(v > 1n << 63n ? -Number((1n << 64n) - 1n - v) : Number(v));
    }
  }
  return out;
}

/** tierbench's numbers of the same options, read section by section as fio reads them. */
function ourNumbers(sections: readonly (readonly FioSetting[])[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const s of sections) {
    for (const x of s) {
      if (x.value.kind !== "numbers" || !x.value.parts) continue;
      out.set(x.facts.name, [...(out.get(x.facts.name) ?? []), ...x.value.parts]);
    }
  }
  return out;
}

const ENV: Record<string, string> = { TB_FUZZ_RW: "randwrite" };

Deno.test(
  needing(["fio"], {
    name: "a generated job file: what fio refuses tierbench refuses; what fio accepts " +
      "tierbench accepts with the same numbers, or refuses naming file, line and option",
    async fn() {
      await withTempDir(async (dir) => {
        const path = join(dir, "j.fio");
        let accepted = 0, refusedByBoth = 0, refusedByName = 0;
        await fc.assert(
          fc.asyncProperty(jobFile, async (text) => {
            await Deno.writeTextFile(path, text);
            const out = await new Deno.Command("fio", {
              args: ["--parse-only", "--debug=parse", path],
              env: ENV,
              stdout: "piped",
              stderr: "piped",
            }).output();
            const debug = new TextDecoder().decode(out.stdout) +
              new TextDecoder().decode(out.stderr);
            const fioOk = out.code === 0;
            let ours: Map<string, number[]> | undefined;
            let refusal: JobFileError | undefined;
            try {
              const parsed = parseJobFileText(text, path, {
                keywords: hostKeywords(),
                env: (n) => ENV[n],
              });
              // fio reads each section once: its [global] sections as it goes, then each job,
              // each section's own options in the light of the globals before it (kb_base)
              const histories: FioSetting[][] = [];
              const globals: typeof parsed.sections[number]["entries"][number][] = [];
              for (const s of parsed.sections) {
                const read = FioSettings.read([...globals, ...s.entries], () => new Uint8Array(1));
                if (s.global) globals.push(...s.entries);
                const own = new Set(s.entries);
                histories.push(read.history().filter((x) => own.has(x.entry)));
                const refused = read.refusals()[0];
                if (refused && !s.global) {
                  throw new JobFileError(refused.entry.where, refused.entry.key, refused.note);
                }
              }
              ours = ourNumbers(histories);
            } catch (e) {
              if (!(e instanceof JobFileError)) throw e;
              refusal = e;
            }
            if (!fioOk) {
              assert.ok(refusal, `fio refused, tierbench accepted:\n${text}\n${debug}`);
              refusedByBoth++;
              return;
            }
            if (refusal) {
              assert.match(
                refusal.message,
                new RegExp(`^${path}(:\\d+)?: \\S+: `),
                refusal.message,
              );
              refusedByName++;
              return;
            }
            const theirs = fioNumbers(debug);
            for (const [name, values] of ours!) {
              assert.deepEqual(values, theirs.get(name) ?? [], `${name} in:\n${text}\n${debug}`);
            }
            accepted++;
          }),
          { seed: SEED, numRuns: 300 },
        );
        console.log(
          `fio and tierbench: ${accepted} accepted alike, ${refusedByBoth} refused by both, ` +
            `${refusedByName} accepted by fio and refused by tierbench by name`,
        );
        assert.ok(accepted > 0 && refusedByBoth > 0, "the generator reaches both outcomes");
      });
    },
  }),
);
