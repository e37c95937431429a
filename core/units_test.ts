import assert from "node:assert/strict";
import {
  badSize,
  formatRate,
  formatSize,
  isSizeTooLarge,
  parseDuration,
  parseSize,
} from "./units.ts";

Deno.test("parseSize() reads binary suffixes as fio does", () => {
  assert.deepEqual(parseSize("4k"), 4096);
  assert.deepEqual(parseSize("1m"), 1048576);
  assert.deepEqual(parseSize("512M"), 512 * 1048576);
  assert.deepEqual(parseSize("8g"), 8 * 1024 ** 3);
  assert.deepEqual(parseSize("1MiB"), 1048576);
  assert.deepEqual(parseSize("4096"), 4096);
});

Deno.test("parseSize() rejects text that is not a size", () => {
  for (const bad of ["", "k", "ten", "1x", "-4k", "1 m b"]) {
    assert.deepEqual(parseSize(bad), undefined);
  }
});

Deno.test("formatSize() writes what parseSize() reads back", () => {
  for (const n of [1, 1536, 4096, 1048576, 3 * 1024 ** 3]) {
    assert.deepEqual(parseSize(formatSize(n)), n);
  }
  assert.deepEqual(formatSize(1048576), "1m");
});

Deno.test("parseDuration() takes seconds by default and ms/s/m/h suffixes", () => {
  assert.deepEqual(parseDuration("5"), 5000);
  assert.deepEqual(parseDuration("1.5s"), 1500);
  assert.deepEqual(parseDuration("250ms"), 250);
  assert.deepEqual(parseDuration("2m"), 120000);
  assert.deepEqual(parseDuration("soon"), undefined);
});

Deno.test("formatRate() picks a binary unit", () => {
  assert.deepEqual(formatRate(512), "512 B/s");
  assert.deepEqual(formatRate(1536 * 1024), "1.5 MiB/s");
});

Deno.test("isSizeTooLarge() tells a size past 2^53 − 1 bytes from text that is not a size", () => {
  assert.deepEqual(parseSize("8192t"), undefined);
  assert.equal(isSizeTooLarge("8192t"), true);
  assert.equal(isSizeTooLarge("9007199254740992"), true);
  assert.equal(isSizeTooLarge("9007199254740991"), false);
  for (const other of ["8191t", "ten", "1x", ""]) assert.equal(isSizeTooLarge(other), false);
});

Deno.test("badSize() says too large for a size past 2^53 − 1 bytes, else what the text is not", () => {
  assert.equal(badSize("12q"), '"12q" is not a size');
  assert.equal(badSize("1x", "a rate in bytes/s"), '"1x" is not a rate in bytes/s');
  assert.equal(
    badSize("8192t/s", "a rate in bytes/s", "8192t"),
    '"8192t/s" is too large: a size is at most 2^53 − 1 bytes (8 PiB)',
  );
  assert.equal(badSize("8m/h", "a rate in bytes/s", "8m/h"), '"8m/h" is not a rate in bytes/s');
  for (const big of ["8192t", 2 ** 53]) {
    assert.equal(badSize(big), `"${big}" is too large: a size is at most 2^53 − 1 bytes (8 PiB)`);
  }
});
