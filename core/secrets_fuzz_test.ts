/**
 * Endpoints with user information at random (fast-check): whatever a user
 * writes before the `@` (percent-escaped or not, with `:` or without), the
 * endpoint kept names the same scheme, host, port and path, and none of it.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { redactSecrets, withoutUserInfo } from "./secrets.ts";
import { params } from "../tests/_fuzz.ts";

/** Text of user information: letters, digits and the characters URLs allow there. */
const part = fc.stringMatching(/^[A-Za-z0-9%._~!$&'()*+,;=-]{1,16}$/).filter((s) => s.length >= 8);

const endpoint = fc.record({
  scheme: fc.constantFrom("http", "https"),
  user: part,
  password: fc.option(part, { nil: undefined }),
  host: fc.constantFrom("127.0.0.1", "s3.example.com", "[::1]", "rgw"),
  port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
  path: fc.constantFrom("", "/", "/s3", "/a/b?x=1"),
});

Deno.test("an endpoint keeps its host, port and path and loses every byte of its user information", () => {
  fc.assert(
    fc.property(endpoint, (e) => {
      const info = e.password === undefined ? e.user : `${e.user}:${e.password}`;
      const authority = `${e.host}${e.port === undefined ? "" : `:${e.port}`}`;
      const url = `${e.scheme}://${info}@${authority}${e.path}`;
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return; // not a URL: left for resolveEndpoint to refuse, quoted redacted
      }
      const kept = withoutUserInfo(url);
      const back = new URL(kept);
      assert.equal(back.username, "", kept);
      assert.equal(back.password, "", kept);
      assert.equal(back.host, parsed.host, kept);
      assert.equal(back.pathname + back.search, parsed.pathname + parsed.search, kept);
      for (const secret of [e.user, e.password]) {
        if (secret !== undefined) assert.ok(!kept.includes(`${secret}@`), kept);
      }
      assert.ok(!redactSecrets(`at ${url} now`).includes(`${info}@`));
    }),
    params,
  );
});
