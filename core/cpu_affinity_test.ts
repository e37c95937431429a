import assert from "node:assert/strict";
import {
  cloneCpus,
  cpusConfigured,
  cpusOfMask,
  formatCpuList,
  parseCpuList,
  pinJobThread,
  threadCpus,
} from "./cpu_affinity.ts";

Deno.test("parseCpuList reads fio's cpus_allowed forms: CPUs, ranges, lists, blanks, repeats", () => {
  assert.deepEqual(parseCpuList("3", 8), [3]);
  assert.deepEqual(parseCpuList("0,5,2-3", 8), [0, 2, 3, 5]);
  assert.deepEqual(parseCpuList(" 1 , 0 - 2 ,1", 8), [0, 1, 2]);
  assert.deepEqual(parseCpuList("7-7", 8), [7]);
});

Deno.test("parseCpuList refuses what fio's atoi would misread, a backward range and CPUs the host lacks", () => {
  assert.throws(() => parseCpuList("a", 8), /^Error: "a" is not a CPU or a range/);
  assert.throws(() => parseCpuList("0,,1", 8), /"0,,1": "" is not a CPU or a range/);
  assert.throws(() => parseCpuList("", 8), /is not a CPU or a range/);
  assert.throws(() => parseCpuList("0,1-", 8), /"0,1-": "1-" is not a CPU or a range/);
  assert.throws(() => parseCpuList("3-1", 8), /the range 3-1 runs backwards/);
  assert.throws(() => parseCpuList("0,8", 8), /CPU 8 is beyond this host's CPUs \(0-7\)/);
  assert.throws(() => parseCpuList("1", 1), /CPU 1 is beyond this host's CPUs \(0\)/);
});

Deno.test("cpusOfMask reads fio's cpumask bits 0-31 and refuses an empty mask or CPUs beyond the host", () => {
  assert.deepEqual(cpusOfMask(34, 8), [1, 5]);
  assert.deepEqual(cpusOfMask(2 ** 31, 32), [31]);
  assert.throws(() => cpusOfMask(0, 8), /names no CPU/);
  assert.throws(() => cpusOfMask(256, 8), /256 \(0x100\) names CPU 8, beyond this host's CPUs/);
  assert.throws(() => cpusOfMask(2 ** 32, 64), /a mask of CPUs 0-31/);
});

Deno.test("cloneCpus: shared gives every clone the set; split hands one CPU round it by fio's thread_number", () => {
  const shared = { cpus: [1, 4, 6], policy: "shared", firstThread: 3 } as const;
  assert.deepEqual(cloneCpus(shared, 5), [1, 4, 6]);
  // fio's backend: thread_number t (from 1) runs on the ((t − 1) mod n)-th CPU of the set
  const split = { cpus: [1, 4, 6], policy: "split", firstThread: 3 } as const;
  const got = [0, 1, 2, 3].map((k) => cloneCpus(split, k)[0]);
  assert.deepEqual(got, [6, 1, 4, 6]);
});

Deno.test("formatCpuList writes CPUs as the kernel's Cpus_allowed_list does", () => {
  assert.equal(formatCpuList([0, 1, 2, 3, 5, 8, 9]), "0-3,5,8-9");
  assert.equal(formatCpuList([4]), "4");
  assert.equal(formatCpuList([]), "");
});

Deno.test("pinJobThread pins the calling thread as the kernel then reports it, and gives its CPUs back", () => {
  const before = threadCpus();
  const status = () =>
    /Cpus_allowed_list:\s*(\S+)/.exec(Deno.readTextFileSync("/proc/thread-self/status"))![1];
  assert.equal(status(), formatCpuList(before));
  const cpu = before.at(-1)!;
  try {
    pinJobThread([cpu]);
    assert.deepEqual(threadCpus(), [cpu]);
    assert.equal(status(), String(cpu));
    pinJobThread(undefined);
    assert.deepEqual(threadCpus(), before);
    assert.equal(status(), formatCpuList(before));
  } finally {
    pinJobThread(before);
  }
});

Deno.test("pinJobThread names the CPUs and the errno when the kernel refuses them", () => {
  const before = threadCpus();
  const beyond = cpusConfigured() + 64; // no such CPU: EINVAL
  try {
    assert.throws(
      () => pinJobThread([beyond]),
      (e: Error) =>
        e.name === "cpus_allowed" &&
        e.message.includes(`CPUs ${beyond} (sched_setaffinity: EINVAL`),
    );
    assert.deepEqual(threadCpus(), before);
  } finally {
    pinJobThread(before);
  }
});
