import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { lockPath, NodeLocks, removeLockDir, runLockDir } from "./_node_lock.ts";
import { withTempDir } from "../tests/_helpers.ts";

Deno.test("NodeLocks: a lock another process holds is taken only after that process releases it", async () => {
  await withTempDir(async (dir) => {
    const log = join(dir, "log");
    const module = pathToFileURL(join(import.meta.dirname!, "_node_lock.ts")).href;
    // the other process: take the lock, say so, wait for a line, note its release, release
    const code = `
      import { NodeLocks } from ${JSON.stringify(module)};
      const locks = new NodeLocks(${JSON.stringify(dir)});
      await locks.acquire("t");
      await Deno.writeTextFile(${JSON.stringify(log)}, "A in\\n", { append: true });
      console.log("held");
      for await (const _ of Deno.stdin.readable) break;
      await Deno.writeTextFile(${JSON.stringify(log)}, "A out\\n", { append: true });
      locks.release("t");
      locks.close();
    `;
    const child = new Deno.Command(Deno.execPath(), {
      args: ["eval", "--ext=ts", code],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let said = "";
    while (!said.includes("held")) {
      const { value, done } = await reader.read();
      assert.ok(!done, "the other process ended before it held the lock");
      said += value;
    }
    const mine = new NodeLocks(dir);
    const got = mine.acquire("t").then(() => Deno.writeTextFile(log, "B in\n", { append: true }));
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode("go\n"));
    await w.close();
    assert.equal((await child.status).code, 0);
    await got;
    mine.release("t");
    mine.close();
    reader.releaseLock();
    await child.stdout.cancel().catch(() => {});
    assert.equal(await Deno.readTextFile(log), "A in\nA out\nB in\n");
  });
});

Deno.test("NodeLocks refuses to release a lock it does not hold, and odd lock names", async () => {
  await withTempDir(async (dir) => {
    const locks = new NodeLocks(dir);
    assert.throws(() => locks.release("read"), /not held/);
    await locks.acquire("read");
    await assert.rejects(() => locks.acquire("read"), /already held/);
    locks.release("read");
    locks.close();
  });
  assert.throws(() => lockPath("../x", "/tmp"), RangeError);
  assert.equal(lockPath("read", "/run/x"), "/run/x/dist_opt_read_lock.file");
  assert.equal(runLockDir("20261124-a/b", "/dev/shm"), "/dev/shm/tierbench-locks-20261124-a_b");
  assert.throws(() => runLockDir(""), RangeError);
});

Deno.test("NodeLocks makes its run's lock folder on first use; removeLockDir() takes it away, and is quiet when it was never made", async () => {
  await withTempDir(async (base) => {
    const dir = runLockDir("run1", base);
    const locks = new NodeLocks(dir);
    await locks.acquire("write");
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["dist_opt_write_lock.file"]);
    locks.release("write");
    locks.close();
    await removeLockDir(dir);
    assert.deepEqual([...Deno.readDirSync(base)], []);
    await removeLockDir(dir);
  });
});

Deno.test("NodeLocks.releaseAll() lets a waiter on a lock the failed rank held take it, and the rank may take it again", async () => {
  await withTempDir(async (dir) => {
    const failed = new NodeLocks(dir);
    const other = new NodeLocks(dir);
    try {
      await failed.acquire("write");
      await failed.acquire("read");
      let got = false;
      const waiting = other.acquire("write").then(() => got = true);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(got, false, "the lock was taken while held");
      failed.releaseAll();
      await waiting;
      assert.equal(got, true);
      // nothing is held any more: "read" can be taken again by this rank
      await failed.acquire("read");
      failed.release("read");
      other.release("write");
    } finally {
      failed.close();
      other.close();
    }
  });
});
