/**
 * Keeping credentials out of everything tierbench writes: results, logs,
 * progress and error messages.
 *
 * @module
 */

/** Environment variables whose values are secrets (or identify one). */
export const SECRET_ENV_VARS = [
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
] as const;

/** Values shorter than this are not redacted (they would mangle ordinary text). */
const MIN_SECRET_LENGTH = 8;

const registered = new Set<string>();

/**
 * Adds a secret to redact that does not come from the environment, such as
 * credentials an SDK read from a profile file. Per thread (Worker).
 *
 * @example
 * ```ts
 * import { redactSecrets, registerSecret } from "./secrets.ts";
 * registerSecret("wJalrXUtnFEMIK7MDENG");
 * console.assert(redactSecrets("key wJalrXUtnFEMIK7MDENG") === "key ***");
 * ```
 */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= MIN_SECRET_LENGTH) registered.add(value);
}

/**
 * `url` without its user information (`http://user:pass@host/` →
 * `http://host/`): an S3 endpoint is signed for with the AWS credentials, so
 * a user name or password written into its URL is never used, and dropping it
 * where the URL is first read keeps it out of every result, log and message.
 * Text that is not a URL is returned as it is (its check names it later).
 *
 * @example
 * ```ts
 * import { withoutUserInfo } from "./secrets.ts";
 * console.assert(withoutUserInfo("http://k:s@127.0.0.1:7480") === "http://127.0.0.1:7480");
 * console.assert(withoutUserInfo("http://127.0.0.1:7480/") === "http://127.0.0.1:7480/");
 * ```
 */
export function withoutUserInfo(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.username === "" && parsed.password === "") return url;
  // cut the user information out of the text as written, so nothing else of the URL changes
  const start = url.indexOf("//") + 2;
  const rest = url.slice(start);
  const end = rest.search(/[/?#]|$/);
  const at = rest.lastIndexOf("@", end);
  return at < 0 ? parsed.href : url.slice(0, start) + rest.slice(at + 1);
}

/**
 * `text` with every secret credential from the environment replaced by `***`,
 * and the user information of any URL (`http://user:pass@host`) removed.
 *
 * @example
 * ```ts
 * import { redactSecrets } from "./secrets.ts";
 * console.assert(redactSecrets("http://k:s@host:7480/") === "http://host:7480/");
 * ```
 */
export function redactSecrets(text: string): string {
  let out = text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/\s@]*@/gi, "$1");
  for (const name of SECRET_ENV_VARS) {
    let value: string | undefined;
    try {
      value = Deno.env.get(name);
    } catch {
      value = undefined; // no permission to read the environment: nothing of it can leak
    }
    if (value && value.length >= MIN_SECRET_LENGTH) out = out.replaceAll(value, "***");
  }
  for (const value of registered) out = out.replaceAll(value, "***");
  return out;
}
