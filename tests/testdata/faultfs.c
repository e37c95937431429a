/*
 * faultfs: a pass-through FUSE file system over a directory that fails the
 * writes a test chooses with EIO, or gives removals no answer, the way a
 * failing disk or a hung network file system does. Built and mounted
 * by tests/_faultfs.ts (libfuse3).
 *
 *   faultfs BACKING MOUNTPOINT [--eio-write-at OFFSET] [--eio-after N] [--hang-remove]
 *           [--hang-writes-after N] [--flip-read-at OFFSET]
 *
 *   --eio-write-at OFFSET  a write whose bytes cover OFFSET fails with EIO
 *                          (each time it is tried), once N writes went by
 *   --eio-after N          how many writes of any file pass first (default 0)
 *   --hang-remove          unlink and rmdir get no answer, as from a hung
 *                          server, until the daemon gets SIGUSR2 (then they
 *                          are done) or the caller is killed (then they end
 *                          with EINTR: requests are interruptible, so a process
 *                          that exits does not wait for them)
 *   --hang-writes-after N  the same for every write once N writes went by
 *   --flip-read-at OFFSET  a read whose bytes cover OFFSET returns the byte
 *                          there inverted (the file itself is left intact), as
 *                          a device that corrupts data on its way back
 *
 * Files opened with O_DIRECT are served with direct_io, so O_DIRECT opens
 * work and their writes reach this daemon one by one, as the kernel's
 * asynchronous engines submit them.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <signal.h>
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int backing = -1;
static long long eio_at = -1;
static long long eio_after = 0;
static volatile sig_atomic_t hang_remove = 0;
static volatile sig_atomic_t hang_writes = 0;
static volatile long long hang_writes_after = -1;
static long long flip_at = -1;
static atomic_llong writes = 0;

/* `path` (always "/…") as a path relative to the backing directory. */
static const char *rel(const char *path) {
  return path[1] == '\0' ? "." : path + 1;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  if (fi) return fstat((int)fi->fh, st) < 0 ? -errno : 0;
  return fstatat(backing, rel(path), st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
  (void)off, (void)fi, (void)flags;
  int fd = openat(backing, rel(path), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -errno;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -errno;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) fill(buf, e->d_name, NULL, 0, 0);
  closedir(d);
  return 0;
}

static int fs_mkdir(const char *path, mode_t mode) {
  return mkdirat(backing, rel(path), mode) < 0 ? -errno : 0;
}

static void answer_again(int sig) {
  (void)sig;
  hang_remove = 0;
  hang_writes = 0;
  hang_writes_after = -1;
}

static void interrupted(int sig) {
  (void)sig; /* only wakes the handler's sleep; fuse_interrupted() says why */
}

/* While `*hung`: 0 once requests are answered again, -EINTR if the caller went away. */
static int wait_for_answer(volatile sig_atomic_t *hung) {
  while (*hung) {
    if (fuse_interrupted()) return -EINTR;
    usleep(20 * 1000);
  }
  return 0;
}

static int fs_rmdir(const char *path) {
  int rc = wait_for_answer(&hang_remove);
  if (rc) return rc;
  return unlinkat(backing, rel(path), AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int fs_unlink(const char *path) {
  int rc = wait_for_answer(&hang_remove);
  if (rc) return rc;
  return unlinkat(backing, rel(path), 0) < 0 ? -errno : 0;
}

static int fs_rename(const char *from, const char *to, unsigned int flags) {
  if (flags) return -EINVAL;
  return renameat(backing, rel(from), backing, rel(to)) < 0 ? -errno : 0;
}

static int open_flags(int flags) {
  return flags & ~(O_DIRECT | O_CREAT | O_EXCL | O_NOCTTY);
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
  int fd = openat(backing, rel(path), open_flags(fi->flags) | O_CREAT, mode);
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  fi->direct_io = (fi->flags & O_DIRECT) != 0;
  return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi) {
  int fd = openat(backing, rel(path), open_flags(fi->flags));
  if (fd < 0) return -errno;
  fi->fh = (uint64_t)fd;
  fi->direct_io = (fi->flags & O_DIRECT) != 0;
  return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi) {
  (void)path;
  ssize_t n = pread((int)fi->fh, buf, size, off);
  if (n < 0) return -errno;
  if (flip_at >= off && flip_at < off + n) buf[flip_at - off] = (char)~buf[flip_at - off];
  return (int)n;
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi) {
  (void)path;
  long long seen = atomic_fetch_add(&writes, 1);
  if (eio_at >= 0 && seen >= eio_after && off <= eio_at && eio_at < off + (off_t)size) {
    return -EIO;
  }
  if (hang_writes_after >= 0 && seen >= hang_writes_after) {
    hang_writes = 1;
    int rc = wait_for_answer(&hang_writes);
    if (rc) return rc;
  }
  ssize_t n = pwrite((int)fi->fh, buf, size, off);
  return n < 0 ? -errno : (int)n;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
  if (fi) return ftruncate((int)fi->fh, size) < 0 ? -errno : 0;
  int fd = openat(backing, rel(path), O_WRONLY);
  if (fd < 0) return -errno;
  int rc = ftruncate(fd, size) < 0 ? -errno : 0;
  close(fd);
  return rc;
}

static int fs_fallocate(const char *path, int mode, off_t off, off_t len,
                        struct fuse_file_info *fi) {
  (void)path;
  return fallocate((int)fi->fh, mode, off, len) < 0 ? -errno : 0;
}

static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)path;
  int rc = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
  return rc < 0 ? -errno : 0;
}

static int fs_release(const char *path, struct fuse_file_info *fi) {
  (void)path;
  close((int)fi->fh);
  return 0;
}

static int fs_statfs(const char *path, struct statvfs *st) {
  (void)path;
  return fstatvfs(backing, st) < 0 ? -errno : 0;
}

static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
  if (fi) return futimens((int)fi->fh, tv) < 0 ? -errno : 0;
  return utimensat(backing, rel(path), tv, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
  if (fi) return fchmod((int)fi->fh, mode) < 0 ? -errno : 0;
  return fchmodat(backing, rel(path), mode, 0) < 0 ? -errno : 0;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  (void)conn;
  cfg->intr = 1; /* a caller killed mid-request interrupts it (fuse_interrupted) */
  return NULL;
}

static const struct fuse_operations ops = {
    .init = fs_init,
    .getattr = fs_getattr,
    .readdir = fs_readdir,
    .mkdir = fs_mkdir,
    .rmdir = fs_rmdir,
    .unlink = fs_unlink,
    .rename = fs_rename,
    .create = fs_create,
    .open = fs_open,
    .read = fs_read,
    .write = fs_write,
    .truncate = fs_truncate,
    .fallocate = fs_fallocate,
    .fsync = fs_fsync,
    .release = fs_release,
    .statfs = fs_statfs,
    .utimens = fs_utimens,
    .chmod = fs_chmod,
};

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: faultfs BACKING MOUNTPOINT [--eio-write-at N] [--eio-after N] "
            "[--hang-remove] [--hang-writes-after N] [--flip-read-at N]\n");
    return 2;
  }
  backing = open(argv[1], O_RDONLY | O_DIRECTORY);
  if (backing < 0) {
    perror(argv[1]);
    return 1;
  }
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--eio-write-at") == 0 && i + 1 < argc) {
      eio_at = atoll(argv[++i]);
    } else if (strcmp(argv[i], "--eio-after") == 0 && i + 1 < argc) {
      eio_after = atoll(argv[++i]);
    } else if (strcmp(argv[i], "--hang-remove") == 0) {
      hang_remove = 1;
    } else if (strcmp(argv[i], "--hang-writes-after") == 0 && i + 1 < argc) {
      hang_writes_after = atoll(argv[++i]);
    } else if (strcmp(argv[i], "--flip-read-at") == 0 && i + 1 < argc) {
      flip_at = atoll(argv[++i]);
    } else {
      fprintf(stderr, "faultfs: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  signal(SIGUSR2, answer_again);
  /* how libfuse tells a handler thread its caller went away; set here as cfg->intr comes late */
  signal(SIGUSR1, interrupted);
  /* foreground, multi-threaded; libfuse tells a handler when its caller was interrupted */
  char *fargv[] = {argv[0], "-f", "-o", "fsname=faultfs,subtype=faultfs", argv[2], NULL};
  return fuse_main(5, fargv, &ops, NULL);
}
