import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import { allocAligned, cString, errnoName, freeAligned, lastErrno, libc, O } from "./libc.ts";

Deno.test("O.DIRECT has this architecture's value", () => {
  assert.equal(O.DIRECT, Deno.build.arch === "aarch64" ? 0o200000 : 0o40000);
});

Deno.test("allocAligned() returns page-aligned memory", () => {
  const b = allocAligned(8192, 4096);
  try {
    assert.equal(b.address % 4096n, 0n);
    assert.equal(b.bytes.byteLength, 8192);
  } finally {
    freeAligned(b);
  }
});

Deno.test("pread() with O_DIRECT and a misaligned offset fails with its own errno (EINVAL)", async () => {
  const dir = await tempDirOnDisk();
  const path = join(dir, "f");
  await Deno.writeFile(path, new Uint8Array(65536));
  const c = libc();
  const fd = c.open(cString(path), O.RDONLY | O.DIRECT, 0);
  assert.ok(fd >= 0);
  const buf = allocAligned(4096, 4096);
  try {
    assert.equal(c.pread(fd, buf.pointer, 4096n, 0n), 4096);
    assert.equal(c.pread(fd, buf.pointer, 4096n, 1n), -1);
    assert.equal(errnoName(lastErrno()), "EINVAL");
  } finally {
    freeAligned(buf);
    c.close(fd);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("open() of a missing file reports ENOENT", () => {
  assert.equal(libc().open(cString("/nonexistent/x"), O.RDONLY, 0), -1);
  assert.equal(errnoName(lastErrno()), "ENOENT");
});
