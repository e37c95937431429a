import assert from "node:assert/strict";
import { alive, procStat, signal, sleep } from "./process.ts";

/** Spawns `sh -c script`, returning the child and the first line it prints. */
async function spawnPrinting(script: string): Promise<{ child: Deno.ChildProcess; line: string }> {
  const child = new Deno.Command("sh", { args: ["-c", script], stdout: "piped" }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  reader.releaseLock();
  await child.stdout.cancel().catch(() => {});
  return { child, line: text.split("\n")[0] ?? "" };
}

Deno.test("alive() holds for a running process and not once it has been reaped", async () => {
  const child = new Deno.Command("sleep", { args: ["30"] }).spawn();
  const p = { pid: child.pid, start: (await procStat(child.pid))?.start ?? "" };
  assert.ok(await alive(p));
  await signal(p, "SIGKILL");
  await child.status;
  assert.ok(!await alive(p));
});

Deno.test("alive() is false for a pid whose process started at another time", async () => {
  const child = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    assert.ok(await alive({ pid: child.pid }));
    assert.ok(!await alive({ pid: child.pid, start: "1" }));
    // …and signal() then leaves the process alone.
    await signal({ pid: child.pid, start: "1" }, "SIGKILL");
    assert.ok(await alive({ pid: child.pid }));
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});

Deno.test("alive() is false for a zombie nobody reaps", async () => {
  // The exec'd `sleep 30` never reaps its child, which stays a zombie once it
  // exits. The child outlives the exec by a second: a child that exited before
  // it (`true &`) could be reaped by the shell first, and then no zombie came.
  const { child, line } = await spawnPrinting("sleep 1 & echo $!; exec sleep 30");
  try {
    const pid = Number(line);
    assert.ok(Number.isSafeInteger(pid) && pid > 0, `not a pid: ${line}`);
    const deadline = Date.now() + 20_000;
    for (let stat = await procStat(pid); stat?.state !== "Z"; stat = await procStat(pid)) {
      assert.ok(stat !== undefined, `pid ${pid} was reaped before it was seen a zombie`);
      assert.ok(Date.now() < deadline, `pid ${pid} is not a zombie 20 s on (${stat.state})`);
      await sleep(10);
    }
    assert.equal((await procStat(pid))?.threads, 1);
    assert.ok(!await alive({ pid }));
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});
