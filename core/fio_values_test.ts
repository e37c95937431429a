import assert from "node:assert/strict";
import { FIO_OPTION_FACTS } from "./fio_option_table.ts";
import { readFioValue, replaceKeywords, substituteEnv } from "./fio_values.ts";

const opt = (name: string) => FIO_OPTION_FACTS.find((o) => o.name === name && !o.engine)!;
const parts = (name: string, value: string | undefined, kbBase = 1024) => {
  const v = readFioValue(opt(name), value, kbBase);
  return v.kind === "numbers" ? v.parts : v;
};

Deno.test("fio's surprises are kept: a blank before the number, decimals, kib, sec", () => {
  // each as fio 3.33 --parse-only --debug=parse reads it
  assert.deepEqual(parts("bs", " 4k"), [4]);
  assert.deepEqual(parts("bs", "1.5k"), [1]);
  assert.deepEqual(parts("bs", "4kib"), [4000]);
  assert.deepEqual(parts("bs", "4kib", 1000), [4096]);
  assert.deepEqual(parts("bs", "4k", 1000), [4000]);
  assert.deepEqual(parts("runtime", "10sec"), [10]);
  assert.deepEqual(parts("runtime", "10ms"), [10_000]);
  assert.deepEqual(parts("bs", ",8k"), [8192]);
  assert.deepEqual(parts("size", "50%"), [-50]);
});

Deno.test("a number past a signed 64-bit integer is refused, as fio's strtoll fails it", () => {
  // fio 3.33 --parse-only: 2^63 - 1 is read, 2^63 (and a seed of 300 digits) fails parsing
  assert.deepEqual(parts("randseed", "9223372036854775807"), [9223372036854775807]);
  assert.deepEqual(parts("randseed", "0x7fffffffffffffff"), [9223372036854775807]);
  for (const v of ["9223372036854775808", "0x8000000000000000", "9".repeat(300)]) {
    assert.throws(() => readFioValue(opt("randseed"), v, 1024), /is not a number/, v);
  }
  assert.throws(() => readFioValue(opt("size"), "9223372036854775808", 1024), /is not a number/);
});

Deno.test("per-direction values fill read, write and trim as fio stores them", () => {
  const v = readFioValue(opt("bs"), "4k,8k", 1024);
  assert.equal(v.kind, "numbers");
  assert.deepEqual(v.kind === "numbers" && v.slots, [4096, 8192, 8192]);
  const r = readFioValue(opt("bsrange"), "8k-4k,1k:2k", 1024);
  assert.deepEqual(r.kind === "ranges" && r.slots, [[4096, 8192], [1024, 2048], [1024, 2048]]);
});

Deno.test("what fio refuses is refused: a bool above 1, iodepth 0, a deprecated option, an unknown word", () => {
  assert.throws(() => readFioValue(opt("direct"), "5", 1024), /above/);
  assert.throws(() => readFioValue(opt("iodepth"), "0", 1024), /below/);
  assert.throws(() => readFioValue(opt("rwmixcycle"), "5", 1024), /deprecated/);
  assert.throws(() => readFioValue(opt("rw"), "readx", 1024), /not one of/);
  assert.throws(() => readFioValue(opt("direct"), undefined, 1024), /needs a value/);
});

Deno.test(
  "arithmetic in parentheses as fio's expression parser reads it (values from fio 3.33 built " +
    "with lex/yacc: Debian's build has no arithmetic)",
  () => {
    const cases: [string, string, number[]][] = [
      ["bs", "(4*1024)", [4096]],
      ["bs", "(2k*3)", [6144]],
      ["bs", "((4*8)-16)k", [16384, 16]],
      ["bs", "(1m/4)", [262144]],
      ["bs", "(10%3)", [1]],
      ["bs", "(2^12)", [4096]],
      ["size", "(1g+512m)", [1610612736]],
      ["bs", "(1.5*1024)", [1536]],
      ["bs", "(4kib)", [4000]],
      ["runtime", "(1+1)", [2_000_000]],
      ["runtime", "(2m)", [120_000_000]],
      ["runtime", "(1s+500ms)", [1_000_000]],
      ["ramp_time", "(2500ms)", [2_000_000]],
      ["thinktime", "(1ms)", [1000]],
      ["startdelay", "(2*1000)", [2_000_000_000]],
    ];
    for (const [name, value, want] of cases) assert.deepEqual(parts(name, value), want, value);
  },
);

Deno.test("${VAR} is the environment's, empty when unset; keywords with bc's whole-number math", () => {
  const env = (n: string) => (n === "SIZE" ? "64m" : undefined);
  assert.equal(substituteEnv("size=${SIZE}", env), "size=64m");
  assert.equal(substituteEnv("rw=${NOPE}", env), "rw=");
  assert.equal(substituteEnv("x=${}y", env), "x=y");
  const k = { pagesize: 4096, mbMemory: 1000, ncpus: 3 };
  assert.equal(replaceKeywords("size=8*$mb_memory", k), "size=8000");
  assert.equal(replaceKeywords("iodepth=$ncpus/2", k), "iodepth=1");
  assert.equal(replaceKeywords("bs=$pagesize", k), "bs=4096");
  assert.equal(replaceKeywords("bs=$pagesize*2k", k), undefined); // bc fails on letters
  assert.equal(replaceKeywords("bs=4k+1", k), "bs=4k+1"); // no keyword, no math
});
