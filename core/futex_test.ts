import assert from "node:assert/strict";
import { openGate, waitForGate } from "./futex.ts";

const WORKERS = 4;
/** word[0]: Workers arrived; word[1]: a neighbour that must stay 7; word[2]: the gate. */
const ARRIVED = 0, NEIGHBOUR = 1, GATE = 2;

/** Workers that count themselves in, wait at the gate, and post what they read there. */
function gatedWorkers(word: Int32Array): { workers: Worker[]; passed: Promise<number[]> } {
  const code = `
    import { waitForGate } from ${JSON.stringify(new URL("./futex.ts", import.meta.url).href)};
    self.onmessage = (e) => {
      const word = new Int32Array(e.data);
      Atomics.add(word, ${ARRIVED}, 1);
      waitForGate(word, ${GATE});
      self.postMessage(Atomics.load(word, ${GATE}));
    };`;
  const url = URL.createObjectURL(new Blob([code], { type: "application/javascript" }));
  const workers = Array.from({ length: WORKERS }, () => new Worker(url, { type: "module" }));
  const passed = Promise.all(workers.map((w) =>
    new Promise<number>((resolve) => {
      w.onmessage = (e: MessageEvent<number>) => resolve(e.data);
      w.postMessage(word.buffer);
    })
  ));
  return { workers, passed };
}

Deno.test("waitForGate holds Workers asleep in the kernel until openGate opens that word, then lets every one through", async () => {
  const word = new Int32Array(new SharedArrayBuffer(16));
  word[NEIGHBOUR] = 7;
  const { workers, passed } = gatedWorkers(word);
  let through = 0;
  passed.then(() => through = WORKERS);
  try {
    while (Atomics.load(word, ARRIVED) < WORKERS) await new Promise((r) => setTimeout(r, 10));
    // Blocked, not spinning: four threads that looped on the word would burn about 0.3 s of
    // CPU here (on the neighbour, say, had the gate's index been ignored).
    const cpu0 = await cpuSeconds();
    await new Promise((r) => setTimeout(r, 300));
    const spent = (await cpuSeconds()) - cpu0;
    assert.equal(through, 0, "no Worker passed a closed gate");
    assert.ok(spent < 0.1, `${spent.toFixed(3)} s of CPU while ${WORKERS} Workers waited`);
    openGate(word, GATE);
    assert.deepEqual(await passed, Array(WORKERS).fill(1));
    assert.equal(word[NEIGHBOUR], 7);
  } finally {
    for (const w of workers) w.terminate();
  }
});

Deno.test("waitForGate returns at once on a gate already open", () => {
  const word = new Int32Array(new SharedArrayBuffer(16));
  openGate(word, GATE);
  waitForGate(word, GATE);
  assert.equal(Atomics.load(word, GATE), 1);
  assert.equal(Atomics.load(word, 0), 0);
});

/** This process's user + system CPU, s (/proc/self/stat, every thread). */
async function cpuSeconds(): Promise<number> {
  const stat = await Deno.readTextFile("/proc/self/stat");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields 14 and 15 (utime, stime) in clock ticks of 1/100 s, counted after the name
  return (Number(f[11]) + Number(f[12])) / 100;
}
