import assert from "node:assert/strict";
import { join } from "node:path";
import { withTempDir } from "../tests/_helpers.ts";
import { JobFileError, parseJobFileText, readJobFileText } from "./jobfile.ts";
import { hostResolveContext, type ResolvedJobFile, resolveJobFile } from "./jobfile_resolve.ts";

const keywords = { pagesize: 4096, mbMemory: 2048, ncpus: 4 };

function resolve(text: string, cwd: string, env: Record<string, string> = {}): ResolvedJobFile {
  const parsed = parseJobFileText(text, join(cwd, "j.fio"), { keywords, env: (n) => env[n] });
  return resolveJobFile(parsed, { ...hostResolveContext(), cwd });
}

/** A fresh temporary directory for `fn`, removed afterwards. */
function withTempDirSync(fn: (dir: string) => void): void {
  const dir = Deno.makeTempDirSync({ prefix: "tb-jobfile-" });
  try {
    fn(dir);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof JobFileError) return e.message;
    throw e;
  }
  throw new Error("not refused");
}

Deno.test("comments anywhere fio allows them, blanks around keys, a DOS line end", () => {
  const f = parseJobFileText(
    "; head\n  [global]  # a\nbs = 4k ; why\r\n\t# indented\n[a]\nrw=read#x\nnumjobs=$ncpus\n",
    "x.fio",
    { keywords },
  );
  const [g, a] = f.sections;
  assert.equal(g!.global, true);
  assert.deepEqual(g!.entries.map((e) => [e.key, e.value]), [["bs", " 4k"]]);
  assert.deepEqual(a!.entries.map((e) => [e.key, e.value]), [["rw", "read"], ["numjobs", "4"]]);
  assert.equal(a!.entries[0]!.where, "x.fio:6");
});

Deno.test("include: the included lines join the section, relative to the including file", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(join(dir, "sub"));
    await Deno.writeTextFile(join(dir, "sub", "common.fio"), "bs=8k\nsize=1m\n");
    const text = "[a]\ninclude common.fio\nrw=randread\n";
    const f = parseJobFileText(text, join(dir, "sub", "main.fio"), { keywords });
    assert.deepEqual(f.sections[0]!.entries.map((e) => e.key), ["bs", "size", "rw"]);
    assert.equal(f.sections[0]!.entries[0]!.where, `${join(dir, "sub", "common.fio")}:1`);
    await Deno.writeTextFile(join(dir, "sub", "bad.fio"), "[b]\n");
    assert.match(
      refusal(() =>
        parseJobFileText("[a]\ninclude bad.fio\n", join(dir, "sub", "m.fio"), { keywords })
      ),
      /bad\.fio:1: \[b\]: an included file cannot start a new section/,
    );
  });
});

Deno.test("with cwd, a relative include, job file and buffer_pattern file are read from it, not this process's directory", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(join(dir, "common.fio"), "ioengine=null\nsize=1m\n");
    await Deno.writeTextFile(
      join(dir, "main.fio"),
      "[a]\ninclude common.fio\nbuffer_pattern='p'\n",
    );
    await Deno.writeFile(join(dir, "p"), new Uint8Array([1, 2, 3]));
    const f = readJobFileText("main.fio", { keywords, cwd: dir });
    assert.deepEqual(f.sections[0]!.entries.map((e) => e.key), [
      "ioengine",
      "size",
      "buffer_pattern",
    ]);
    const r = resolveJobFile(f, hostResolveContext(dir));
    assert.deepEqual(r.jobs[0]!.job.fio!.data.pattern, [1, 2, 3]);
  });
});

Deno.test("command-line options are defaults under the file's own; --section picks jobs", () => {
  withTempDirSync((dir) => {
    const text = "[global]\nioengine=null\nsize=1m\n[a]\nbs=8k\n[b]\nrw=randread\n";
    const parsed = parseJobFileText(text, "j.fio", {
      keywords,
      commandLine: [{ key: "bs", value: "16k" }, { key: "rw", value: "write" }],
      sections: ["b"],
    });
    const r = resolveJobFile(parsed, { ...hostResolveContext(), cwd: dir });
    assert.deepEqual(r.jobs.map((j) => j.name), ["b"]);
    assert.equal(r.jobs[0]!.job.bs, 16 * 1024);
    assert.equal(r.jobs[0]!.job.rw, "randread");
    assert.deepEqual(r.global, { ioengine: "null", size: "1m" });
  });
});

Deno.test("${VAR} from the environment, [global] sections apply to the jobs after them", () => {
  withTempDirSync((dir) => {
    const r = resolve(
      "[global]\nioengine=null\nsize=${SIZE}\n[a]\n[global]\nbs=64k\n[b]\n",
      dir,
      { SIZE: "2m" },
    );
    assert.deepEqual(r.jobs.map((j) => [j.job.size, j.job.bs]), [[2 << 20, 4096], [
      2 << 20,
      65536,
    ]]);
  });
});

Deno.test("what cannot be honoured is refused in one line naming file:line, option and why", async () => {
  await withTempDir(async (dir) => {
    const file = join(dir, "j.fio");
    const cases: [string, RegExp][] = [
      ["[a]\nsize=1m\nzonemode=zbd\n", /j\.fio:3: zonemode: .*zoned block devices/],
      ["[a]\nsize=1m\nrw=randtrim\n", /j\.fio:3: rw: randtrim: trim is a device command/],
      ["[a]\nsize=1m\nioengine=rbd\n", /j\.fio:3: ioengine: rbd is not an engine tierbench has/],
      ["[a]\nioengine=cpuio\ncpuload=50\n", /j\.fio:2: ioengine: cpuio is not an engine/],
      ["[a]\nsize=1m\nnice=5\n", /j\.fio:3: nice: sets the priority or NUMA placement/],
      ["[a]\nsize=1m\nverify=crc32c\n", /j\.fio:3: verify: 0 or none only/],
      ["[a]\nsize=1m\nbogus=1\n", /j\.fio:3: bogus: is not an option fio knows/],
      ["[a]\nsize=1m\nrw=sideways\n", /j\.fio:3: rw: sideways: "sideways" is not one of/],
      ["[a]\ndirectory=nowhere\nsize=1m\n", /j\.fio:2: directory: nowhere does not exist/],
      ["[a]\nrw=read\n", /j\.fio:1: size: job "a": its files do not exist and it gives no size/],
      // a section named "" (fio reads "[!" so), named as such rather than as an empty value
      ["[!\nrw=read\n", /j\.fio:1: size: job "": its files do not exist/],
      ["[a]\nioengine=null\n", /j\.fio:1: size: job "a": needs size=/],
      ["[a]\nsize=1m\nwait_for=zz\n", /j\.fio:1: wait_for: no job is named zz/],
      ["[a]\nsize=1m\nrw=${RW}\n", /j\.fio:3: rw: .*is not one of/],
      ["bs=4k\n[a]\n", /j\.fio:1: bs: comes before any \[section\]/],
    ];
    for (const [text, want] of cases) {
      await Deno.writeTextFile(file, text);
      const message = refusal(() => resolve(text, dir));
      assert.match(message, want, text);
      assert.equal(message.split("\n").length, 1);
    }
  });
});

Deno.test("a value refused after it was read is quoted as the line wrote it, not as the number read", () => {
  withTempDirSync((dir) => {
    const text = "[global]\nrate=8192t\nsize=4096\n[a]\n";
    const message = refusal(() => resolve(text, dir));
    assert.match(
      message,
      /j\.fio:2: rate: "8192t" is too large: a size is at most 2\^53 − 1 bytes/,
    );
    assert.doesNotMatch(message, /9007199254740992/);
  });
});

Deno.test("a job's schedule and groups: stonewall, new_group, wait_for, startdelay, exitall", () => {
  withTempDirSync((dir) => {
    const r = resolve(
      "[global]\nioengine=null\nsize=1m\n[a]\nexitall\nexit_what=stonewall\n[b]\nwait_for=a\n" +
        "startdelay=2\n[c]\nstonewall\n",
      dir,
    );
    const [a, b, c] = r.jobs;
    assert.equal(a!.schedule.exitall, "stonewall");
    assert.equal(b!.schedule.waitFor, "a");
    assert.equal(b!.schedule.startDelayMs, 2000);
    assert.equal(c!.schedule.stonewall, true);
  });
});

Deno.test("files as fio names them: filename lists, filename_format, directories, clones", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(join(dir, "d1"));
    await Deno.mkdir(join(dir, "d2"));
    const r = resolve(
      "[global]\nsize=1m\n[a]\nfilename=x\\:y:z\n[b]\ndirectory=d1:d2\nnrfiles=2\nnumjobs=2\n" +
        "[c]\nfilename_format=f.$jobnum.$filenum.$jobname\nnumjobs=2\n",
      dir,
    );
    const names = (i: number) => r.jobs[i]!.job.fio!.clones.map((c) => c.files.map((f) => f.name));
    assert.deepEqual(names(0), [["x:y", "z"]]);
    assert.deepEqual(names(1), [["d1/b.0.0", "d1/b.0.1"], ["d2/b.1.0", "d2/b.1.1"]]);
    assert.deepEqual(names(2), [["f.0.0.c"], ["f.1.0.c"]]);
  });
});
