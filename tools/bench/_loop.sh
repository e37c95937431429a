# shellcheck shell=bash
# A file tier that does not share the virtual disk with anything else, for the rounds scripts
# (DEVICE=loop in replay_rounds.sh): an ext4 file system on a loop device over a sparse file on
# /dev/shm, mounted at DIR. Its speed is set by memory and CPU, not by the host's page cache, and
# Ceph's own writes to the disk do not reach it; a THROTTLE (tools/bench/_throttle.sh) then caps
# it at a known rate. Root only. Sourced; the caller removes it at exit with `loop_remove`.
#
#   . tools/bench/_loop.sh
#   loop_make 8g "$FILE_DIR" replay_rounds
#   …
#   loop_remove

LOOP_DEV=
LOOP_IMG=
LOOP_DIR=

# loop_make SIZE DIR WHO: makes the file system (SIZE bytes, sparse) and mounts it at DIR;
# exits 2 naming WHO when not root.
loop_make() {
  local size=$1 dir=$2 who=$3
  [ "$(id -u)" = 0 ] || {
    echo "$who: DEVICE=loop needs root to make and mount a loop device" >&2
    exit 2
  }
  LOOP_IMG=$(mktemp /dev/shm/tierbench-loop-XXXXXX.img)
  truncate -s "$size" "$LOOP_IMG"
  LOOP_DEV=$(losetup --find --show "$LOOP_IMG")
  mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$LOOP_DEV"
  # discard: a removed file gives its memory back to /dev/shm
  mount -o discard "$LOOP_DEV" "$dir"
  LOOP_DIR=$dir
  echo "file tier on $LOOP_DEV (ext4 over $LOOP_IMG, $size sparse) at $dir"
}

loop_remove() {
  [ -n "$LOOP_DIR" ] && mountpoint -q "$LOOP_DIR" && umount "$LOOP_DIR"
  [ -n "$LOOP_DEV" ] && losetup -d "$LOOP_DEV" 2>/dev/null
  [ -n "$LOOP_IMG" ] && rm -f "$LOOP_IMG"
  LOOP_DIR= LOOP_DEV= LOOP_IMG=
  return 0
}
