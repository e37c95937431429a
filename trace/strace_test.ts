import assert from "node:assert/strict";
import type { IoEvent, ReapEvent, SubmitEvent, TraceEvent } from "./events.ts";
import { StraceImporter } from "./strace.ts";
import { classifyLine, parseCall, splitTop } from "./_strace_syntax.ts";

/** The events of an strace log given as lines. */
function importLines(
  lines: string[],
  only?: string,
): { events: TraceEvent[]; imp: StraceImporter } {
  const imp = new StraceImporter("test.txt", { only });
  const events: TraceEvent[] = [];
  lines.forEach((l, i) => imp.line(l, i + 1, events));
  return { events, imp };
}

const io = (events: TraceEvent[]) =>
  events.filter((e): e is IoEvent => e.kind === "read" || e.kind === "write");

Deno.test("strace lines: pid in front, [pid N], none; -tt and -ttt times; unfinished and resumed", () => {
  assert.deepEqual(classifyLine("12 10:00:01.5 close(3) = 0"), {
    kind: "call",
    tid: 12,
    us: 36_001_500_000,
    text: "close(3) = 0",
  });
  assert.equal(classifyLine("[pid  77] 1700000000.000250 close(3) = 0")?.tid, 77);
  assert.equal(classifyLine("[pid  77] 1700000000.000250 close(3) = 0")?.us, 1700000000000250);
  assert.equal(classifyLine("10:00:00.000001 close(3) = 0")?.tid, 0);
  const u = classifyLine("5 10:00:00.000000 read(6,  <unfinished ...>");
  assert.deepEqual(u, { kind: "unfinished", tid: 5, us: 36e9, text: "read(6, " });
  const r = classifyLine('5 10:00:00.000100 <... read resumed>"", 50000) = 0 <0.000024>');
  assert.equal(r?.kind, "resumed");
  assert.equal(classifyLine("5 10:00:00.1 +++ exited with 0 +++")?.kind, "exit");
  assert.equal(classifyLine("not strace"), undefined);
});

Deno.test("strace calls: quoted strings with brackets and commas, -y paths, errors and durations", () => {
  const c = parseCall('write(1</dev/pts/0>, "a) = 5, [b", 9) = 9 <0.000012>')!;
  assert.deepEqual(c.args, ["1</dev/pts/0>", '"a) = 5, [b"', "9"]);
  assert.equal(c.ret, 9);
  assert.equal(c.dur, 12);
  const o = parseCall('openat(AT_FDCWD</tmp/x (1)>, "f", O_RDONLY) = 3</tmp/x (1)/f> <0.000002>')!;
  assert.equal(o.retPath, "/tmp/x (1)/f");
  assert.deepEqual(o.args, ["AT_FDCWD</tmp/x (1)>", '"f"', "O_RDONLY"]);
  const e = parseCall('openat(AT_FDCWD, "/no", O_RDONLY) = -1 ENOENT (No such file or directory)')!;
  assert.equal(e.errno, "ENOENT");
  assert.equal(e.dur, -1);
  assert.equal(parseCall("read(3, "), undefined, "a call strace cut is not a call");
  assert.equal(Number.isNaN(parseCall("exit_group(0) = ?")!.ret), true);
  assert.deepEqual(splitTop("[{a=1, b=2}, {a=3}], 2"), ["[{a=1, b=2}, {a=3}]", "2"]);
});

Deno.test("descriptors: a number closed and opened again names the new file; dups follow the old", () => {
  const { events } = importLines([
    '1 10:00:00.000000 openat(AT_FDCWD, "/d/a", O_RDONLY) = 5 <0.000001>',
    '1 10:00:00.000010 pread64(5, "", 4096, 0) = 4096 <0.000001>',
    "1 10:00:00.000020 close(5) = 0 <0.000001>",
    '1 10:00:00.000030 openat(AT_FDCWD, "/d/b", O_WRONLY|O_CREAT, 0600) = 5 <0.000001>',
    '1 10:00:00.000040 pwrite64(5, "x", 1, 7) = 1 <0.000001>',
    "1 10:00:00.000050 dup2(5, 9) = 9 <0.000001>",
    "1 10:00:00.000060 close(5) = 0 <0.000001>",
    '1 10:00:00.000070 write(9, "yy", 2) = 2 <0.000001>',
    "1 10:00:00.000080 fcntl(9, F_DUPFD_CLOEXEC, 20) = 21 <0.000001>",
    '1 10:00:00.000090 write(21, "zz", 2) = 2 <0.000001>',
  ]);
  assert.deepEqual(io(events).map((e) => [e.kind, e.file, e.offset, e.length]), [
    ["read", "/d/a", 0, 4096],
    ["write", "/d/b", 7, 1],
    ["write", "/d/b", 0, 2],
    ["write", "/d/b", 2, 2], // a dup shares the position
  ]);
});

Deno.test("descriptors: one thread opens, another submits; a forked child's fd 3 is its own", () => {
  const { events } = importLines([
    '10 10:00:00.000000 openat(AT_FDCWD, "/nvme/x.swp", O_WRONLY|O_CREAT|O_DIRECT, 0600) = 3 <0.000010>',
    '11 10:00:00.000100 io_submit(0x7f00, 1, [{aio_data=0, aio_lio_opcode=IOCB_CMD_PWRITE, aio_fildes=3, aio_buf="\\0\\1"..., aio_nbytes=1048576, aio_offset=0}]) = 1 <0.000050>',
    '12 10:00:00.000200 openat(AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 4 <0.000001>',
    '12 10:00:00.000300 read(4, "x", 10) = 10 <0.000001>',
    "11 10:00:00.000400 io_pgetevents(0x7f00, 1, 1, [{data=0, obj=0x1, res=1048576, res2=0}], NULL, {sigmask=NULL, sigsetsize=8}) = 1 <0.000001>",
  ], "/nvme");
  const submit = events.find((e): e is SubmitEvent => e.kind === "submit")!;
  assert.equal(submit.thread, "11");
  assert.deepEqual(submit.iocbs, [{
    op: "write",
    file: "/nvme/x.swp",
    offset: 0,
    length: 1048576,
  }]);
  const reap = events.find((e): e is ReapEvent => e.kind === "reap")!;
  assert.deepEqual(reap.results, [1048576]);
  assert.equal(io(events).length, 0, "--only /nvme leaves /etc out");
});

Deno.test("clone lines: a thread shares its parent's table, a forked child gets a copy", () => {
  const { events, imp } = importLines([
    '1 10:00:00.000000 openat(AT_FDCWD, "/d/a", O_RDONLY) = 3 <0.000001>',
    "1 10:00:00.000010 clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM, exit_signal=0}, 88) = 2 <0.000001>",
    "1 10:00:00.000020 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD) = 50 <0.000001>",
    "1 10:00:00.000030 close(3) = 0 <0.000001>",
    '2 10:00:00.000040 openat(AT_FDCWD, "/d/b", O_RDONLY) = 3 <0.000001>',
    '50 10:00:00.000050 pread64(3, "", 8, 0) = 8 <0.000001>',
    '2 10:00:00.000060 pread64(3, "", 8, 0) = 8 <0.000001>',
  ]);
  assert.deepEqual(io(events).map((e) => [e.thread, e.file]), [["50", "/d/a"], ["2", "/d/b"]]);
  assert.equal(imp.processOf("2"), "1");
  assert.equal(imp.processOf("50"), "50");
});

Deno.test("lseek moves the position; readv and preadv add up iov_len; -y paths name the file", () => {
  const { events } = importLines([
    '1 10:00:00.000000 openat(AT_FDCWD</w>, "rel", O_RDWR) = 3</w/rel> <0.000001>',
    "1 10:00:00.000010 lseek(3</w/rel>, 8192, SEEK_SET) = 8192 <0.000001>",
    '1 10:00:00.000020 readv(3</w/rel>, [{iov_base="", iov_len=4096}, {iov_base="", iov_len=4096}], 2) = 8192 <0.000001>',
    '1 10:00:00.000030 preadv(3</w/rel>, [{iov_base="", iov_len=512}], 1, 100) = 512 <0.000001>',
    '1 10:00:00.000040 read(3</w/rel>, "", 10) = 0 <0.000001>',
  ]);
  assert.deepEqual(io(events).map((e) => [e.file, e.offset, e.length, e.res]), [
    ["/w/rel", 8192, 8192, 8192],
    ["/w/rel", 100, 512, 512],
    ["/w/rel", 16384, 10, 0],
  ]);
  assert.equal(events[0]?.kind === "open" && events[0].file, "/w/rel");
});

Deno.test("failures are kept: a failed submit, a failed completion, a failed open and pwrite", () => {
  const { events } = importLines([
    '1 10:00:00.000000 openat(AT_FDCWD, "/d/f", O_RDONLY|O_DIRECT) = 3 <0.000001>',
    '1 10:00:00.000001 openat(AT_FDCWD, "/d/missing", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000001>',
    "1 10:00:00.000002 io_setup(8, [0x7f01]) = 0 <0.000001>",
    "1 10:00:00.000003 io_submit(0x7f01, 2, [{aio_data=0, aio_lio_opcode=IOCB_CMD_PREAD, aio_fildes=3, aio_buf=0x1, aio_nbytes=4096, aio_offset=0}, {aio_data=0, aio_lio_opcode=IOCB_CMD_PREAD, aio_fildes=3, aio_buf=0x2, aio_nbytes=100, aio_offset=7}]) = 2 <0.000001>",
    "1 10:00:00.000004 io_getevents(0x7f01, 2, 2, [{data=0, obj=0x1, res=4096, res2=0}, {data=0, obj=0x2, res=-22, res2=0}], NULL) = 2 <0.000001>",
    "1 10:00:00.000005 io_submit(0x7f01, 1, [{aio_data=0, aio_lio_opcode=IOCB_CMD_PREAD, aio_fildes=3, aio_buf=0x1, aio_nbytes=4096, aio_offset=0}]) = -1 EAGAIN (Resource temporarily unavailable) <0.000001>",
    '1 10:00:00.000006 pwrite64(3, "x", 1, 0) = -1 EBADF (Bad file descriptor) <0.000001>',
  ]);
  const kinds = events.map((e) => e.kind);
  assert.deepEqual(kinds, ["open", "open", "io_setup", "submit", "reap", "submit", "write"]);
  assert.equal(events[1]?.kind === "open" && events[1].res, -2);
  assert.deepEqual((events[4] as ReapEvent).results, [4096, -22]);
  assert.equal((events[5] as SubmitEvent).res, -11);
  assert.equal((events[6] as IoEvent).res, -9);
});

Deno.test("markers start phases; the same marker written twice in a row is one", () => {
  const { events } = importLines([
    '1 10:00:00.000000 write(3, "TBMARK STEP 1 forward t=9.385", 29) = 29 <0.000001>',
    '1 10:00:00.000001 write(1, "TBMARK STEP 1 forward t=9.385", 29) = 29 <0.000001>',
    '1 10:00:00.000002 write(3, "TBMARK STEP 1 end loss=1.2 t=10", 31) = 31 <0.000001>',
  ]);
  assert.deepEqual(events.map((e) => e.kind === "phase" ? e.name : e.kind), [
    "STEP 1 forward",
    "STEP 1 end",
  ]);
});

Deno.test("an io_uring ring is said in the notes: its I/O is invisible to strace", () => {
  const { events, imp } = importLines([
    "4 10:00:00.000000 io_uring_setup(64, {flags=0, sq_thread_cpu=0, sq_thread_idle=0}) = 7 <0.000010>",
  ]);
  assert.equal(events[0]?.kind, "io_uring_setup");
  assert.match(imp.notes().join("\n"), /thread 4 set up an io_uring ring.*cannot see/);
});

Deno.test("a call cut by another thread's line is joined again at its start time", () => {
  const { events } = importLines([
    '1 10:00:00.000000 openat(AT_FDCWD, "/d/f", O_RDONLY) = 3 <0.000001>',
    "1 10:00:00.000010 pread64(3,  <unfinished ...>",
    '2 10:00:00.000020 openat(AT_FDCWD, "/d/g", O_RDONLY) = 4 <0.000001>',
    '1 10:00:00.000500 <... pread64 resumed>"", 4096, 0) = 4096 <0.000490>',
  ]);
  const r = io(events)[0]!;
  assert.equal(r.t, 10);
  assert.equal(r.dur, 490);
});

Deno.test("times cross midnight; the first line without a time is refused naming the fix", () => {
  const { events } = importLines([
    '1 23:59:59.999990 openat(AT_FDCWD, "/d/f", O_RDONLY) = 3 <0.000001>',
    '1 00:00:00.000010 pread64(3, "", 1, 0) = 1 <0.000001>',
  ]);
  assert.equal(io(events)[0]!.t, 20);
  assert.throws(
    () => importLines(['openat(AT_FDCWD, "/d/f", O_RDONLY) = 3']),
    /test\.txt: line 1: is not an strace log with times \(record with strace -f -tt -T\)/,
  );
});
