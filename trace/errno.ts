/**
 * Linux errno names and numbers (the generic table x86-64 and aarch64
 * share), as strace prints them: a failed call's `-1 ENOENT`, a failed
 * completion's `res=-22`.
 *
 * @module
 */

const NAMES = (
  "EPERM ENOENT ESRCH EINTR EIO ENXIO E2BIG ENOEXEC EBADF ECHILD EAGAIN ENOMEM EACCES EFAULT " +
  "ENOTBLK EBUSY EEXIST EXDEV ENODEV ENOTDIR EISDIR EINVAL ENFILE EMFILE ENOTTY ETXTBSY EFBIG " +
  "ENOSPC ESPIPE EROFS EMLINK EPIPE EDOM ERANGE EDEADLK ENAMETOOLONG ENOLCK ENOSYS ENOTEMPTY " +
  "ELOOP - ENOMSG EIDRM ECHRNG EL2NSYNC EL3HLT EL3RST ELNRNG EUNATCH ENOCSI EL2HLT EBADE EBADR " +
  "EXFULL ENOANO EBADRQC EBADSLT - EBFONT ENOSTR ENODATA ETIME ENOSR ENONET ENOPKG EREMOTE " +
  "ENOLINK EADV ESRMNT ECOMM EPROTO EMULTIHOP EDOTDOT EBADMSG EOVERFLOW ENOTUNIQ EBADFD EREMCHG " +
  "ELIBACC ELIBBAD ELIBSCN ELIBMAX ELIBEXEC EILSEQ ERESTART ESTRPIPE EUSERS ENOTSOCK " +
  "EDESTADDRREQ EMSGSIZE EPROTOTYPE ENOPROTOOPT EPROTONOSUPPORT ESOCKTNOSUPPORT EOPNOTSUPP " +
  "EPFNOSUPPORT EAFNOSUPPORT EADDRINUSE EADDRNOTAVAIL ENETDOWN ENETUNREACH ENETRESET " +
  "ECONNABORTED ECONNRESET ENOBUFS EISCONN ENOTCONN ESHUTDOWN ETOOMANYREFS ETIMEDOUT " +
  "ECONNREFUSED EHOSTDOWN EHOSTUNREACH EALREADY EINPROGRESS ESTALE EUCLEAN ENOTNAM ENAVAIL " +
  "EISNAM EREMOTEIO EDQUOT ENOMEDIUM EMEDIUMTYPE ECANCELED ENOKEY EKEYEXPIRED EKEYREVOKED " +
  "EKEYREJECTED EOWNERDEAD ENOTRECOVERABLE ERFKILL EHWPOISON"
).split(" ");

const NUMBERS = new Map<string, number>([
  ...NAMES.flatMap((n, i): [string, number][] => (n === "-" ? [] : [[n, i + 1]])),
  ["EWOULDBLOCK", 11],
  ["EDEADLOCK", 35],
  ["ENOTSUP", 95],
]);

/**
 * The number of an errno name (`ENOENT` → 2); 0 for a name it does not know.
 *
 * @example
 * ```ts
 * import { errnoNumber } from "./errno.ts";
 * console.assert(errnoNumber("EINVAL") === 22);
 * ```
 */
export function errnoNumber(name: string): number {
  return NUMBERS.get(name) ?? 0;
}

/**
 * The name of errno `n` (22 → `EINVAL`), or `E<n>` when it has none.
 *
 * @example
 * ```ts
 * import { errnoText } from "./errno.ts";
 * console.assert(errnoText(28) === "ENOSPC");
 * ```
 */
export function errnoText(n: number): string {
  const name = NAMES[n - 1];
  return name === undefined || name === "-" ? `E${n}` : name;
}
