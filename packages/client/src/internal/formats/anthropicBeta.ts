/**
 * The `anthropic-beta` header a call carries: the caller's (never its `oauth-*` items unless its
 * credential is forwarded) merged with the client's `extra_headers` value. A native replay to a
 * client of any format carries it (each record's `carryHeaders`); only an `anthropic_messages`
 * client that forwards the caller's credential gets the caller's `oauth-*` items.
 *
 * @internal
 */
import type { LlmClient } from "../../Target.js"
import { headerValue } from "../prepare.js"

/** The `anthropic-beta` header. */
export const anthropicBetaHeader = "anthropic-beta"

/**
 * Comma-separated `anthropic-beta` values merged into one: items trimmed, empty ones dropped, the
 * first occurrence of each kept, in order. `undefined` when no item is left.
 */
export const mergeBetas = (values: ReadonlyArray<string | undefined>): string | undefined => {
  const items: Array<string> = []
  for (const value of values) {
    for (const raw of (value ?? "").split(",")) {
      const item = raw.trim()
      if (item !== "" && !items.includes(item)) items.push(item)
    }
  }
  return items.length === 0 ? undefined : items.join(",")
}

/**
 * The caller's `anthropic-beta` without its `oauth-*` items: those go with the caller's own OAuth
 * credential, which is never forwarded (the client's API key is sent instead).
 */
export const withoutOauthBetas = (value: string | undefined): string | undefined =>
  value?.split(",").filter((item) => !item.trim().toLowerCase().startsWith("oauth-")).join(",")

/** The caller's `anthropic-beta` reduced to its `oauth-*` items (those that go with its OAuth credential). */
const onlyOauthBetas = (value: string | undefined): string | undefined =>
  value?.split(",").filter((item) => item.trim().toLowerCase().startsWith("oauth-")).join(",")

/** Sets `out`'s `anthropic-beta` to `callerBetas` merged with the client's `extra_headers` one, when any is left. */
const setMerged = (out: Record<string, string>, client: LlmClient, callerBetas: string | undefined): void => {
  const merged = mergeBetas([callerBetas, headerValue(client.extraHeaders, anthropicBetaHeader)])
  if (merged !== undefined) out[anthropicBetaHeader] = merged
}

/**
 * On a native replay (the caller's own body sent to a client of its format), the caller's
 * `anthropic-beta` less its `oauth-*` items, merged with the `extra_headers` one (caller's items
 * first); otherwise the caller's is dropped (a translated body may not hold what the betas
 * announce) and `extra_headers` alone set it.
 */
export const onNativeReplay = (
  out: Record<string, string>,
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>,
  nativeReplay: boolean
): void => {
  if (nativeReplay) setMerged(out, client, withoutOauthBetas(headerValue(callerHeaders, anthropicBetaHeader)))
}

/**
 * {@link onNativeReplay}, except for a client that forwards the caller's credential
 * (`forward_auth`): the caller's `anthropic-beta` goes with it — whole on a native replay, else its
 * `oauth-*` items only (its `extra_headers` cannot set `anthropic-beta`).
 */
export const withForwardedCredential = (
  out: Record<string, string>,
  client: LlmClient,
  callerHeaders: Readonly<Record<string, string>>,
  nativeReplay: boolean
): void => {
  if (client.forwardAuth !== true) return onNativeReplay(out, client, callerHeaders, nativeReplay)
  const callerBetas = headerValue(callerHeaders, anthropicBetaHeader)
  setMerged(out, client, nativeReplay ? callerBetas : onlyOauthBetas(callerBetas))
}
