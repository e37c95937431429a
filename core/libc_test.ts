import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDirOnDisk } from "../tests/_helpers.ts";
import {
  allocAligned,
  allocIoBuffer,
  cString,
  errnoName,
  freeAligned,
  lastErrno,
  libc,
  O,
  pageSize,
} from "./libc.ts";

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

Deno.test("allocIoBuffer() starts an I/O buffer on a page boundary when the device asks for 512-byte sectors, as fio's buffers for direct I/O", () => {
  assert.equal(pageSize(), 4096);
  // posix_memalign at 512 alone hands back addresses 512 or 2,048 bytes into a page.
  for (const length of [4096, 65536, 1 << 20, 8 << 20]) {
    const b = allocIoBuffer(length, 512);
    try {
      assert.equal(b.address % 4096n, 0n, `${length} bytes at ${b.address.toString(16)}`);
      assert.equal(b.bytes.byteLength, length);
    } finally {
      freeAligned(b);
    }
  }
  const wide = allocIoBuffer(8192, 8192);
  try {
    assert.equal(wide.address % 8192n, 0n);
  } finally {
    freeAligned(wide);
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
