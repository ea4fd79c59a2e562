/**
 * Inbound auth (`[server] api_keys_env`): the one check every protected endpoint runs, on the lean
 * edge and on the platform router alike. A caller presents a key as `Authorization: Bearer <key>`
 * or `x-api-key: <key>` — on the Gemini endpoints also `x-goog-api-key: <key>` or `?key=<key>`;
 * the key's SHA-256 is compared with the SHA-256 of every configured key
 * by `crypto.timingSafeEqual` (equal-length digests, every key compared, no early exit), so the
 * time taken says nothing about how much of a key matched nor which one. Each check is counted in
 * `switchyard_auth_requests_total{outcome}`; no key is ever logged or echoed.
 *
 * @internal
 */
import * as TaggedMetric from "@switchyard-ts/client/TaggedMetric"
import type { ServerSpec } from "@switchyard-ts/config/Deployment"
import { Unauthorized } from "@switchyard-ts/protocol/Errors"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { createHash, timingSafeEqual } from "node:crypto"
import * as Metrics from "../Metrics.js"

/** The configured inbound keys, as digests; built once at start-up. */
export interface Guard {
  readonly digests: ReadonlyArray<Buffer>
  /** Whether `/metrics` needs a key too (`metrics_auth`). */
  readonly metrics: boolean
}

/** The outcome of one check, the label of the metric. */
export type Outcome = "ok" | "missing" | "invalid"

const digest = (key: string): Buffer => createHash("sha256").update(key, "utf8").digest()

/** The guard of a `[server]` table; `undefined` when it configures no key (auth off). */
export const make = (spec: ServerSpec | undefined): Guard | undefined =>
  spec === undefined || spec.apiKeys.length === 0
    ? undefined
    : { digests: spec.apiKeys.map((key) => digest(Redacted.value(key))), metrics: spec.metricsAuth }

/** Whether `presented` is one of the guard's keys, in time independent of where they differ. */
const matches = (guard: Guard, presented: string): boolean => {
  const candidate = digest(presented)
  let found = false
  for (const known of guard.digests) found = timingSafeEqual(candidate, known) || found
  return found
}

/** The key of an `Authorization: Bearer <key>` value (scheme case-insensitive), if it is one. */
const bearerKey = (value: string | undefined): string | undefined => {
  if (value === undefined) return undefined
  const trimmed = value.trim()
  if (trimmed.length < 8 || trimmed.slice(0, 7).toLowerCase() !== "bearer ") return undefined
  const key = trimmed.slice(7).trim()
  return key === "" ? undefined : key
}

/** A header's value trimmed, none when absent or empty. */
const headerKey = (value: string | undefined): string | undefined => {
  const key = value?.trim()
  return key === "" ? undefined : key
}

/**
 * The keys a caller presents, by header: the token of `Authorization: Bearer`, then `x-api-key`,
 * then — on the Gemini endpoints only (`gemini`) — `x-goog-api-key` (into which they read `?key=`).
 * Elsewhere `x-goog-api-key` is no credential of ours.
 */
const presentedKeys = (
  headers: Readonly<Record<string, string | undefined>>,
  gemini = false
): ReadonlyArray<readonly [string, string | undefined]> => {
  const keys: Array<readonly [string, string | undefined]> = [
    ["authorization", bearerKey(headers["authorization"])],
    ["x-api-key", headerKey(headers["x-api-key"])]
  ]
  if (gemini) keys.push(["x-goog-api-key", headerKey(headers["x-goog-api-key"])])
  return keys
}

/**
 * The outcome of the caller's credentials (`headers`: lower-case names): `ok` when the bearer
 * token, the `x-api-key` or (`gemini`) the `x-goog-api-key` value is one of the guard's keys,
 * `missing` when no such header carries a key, `invalid` otherwise. Counted in the metric.
 * Synchronous and cheap: three SHA-256 digests at most, then one comparison per configured key.
 */
export const check = (
  guard: Guard,
  headers: Readonly<Record<string, string | undefined>>,
  gemini = false
): Outcome => {
  let outcome: Outcome = "missing"
  for (const [, key] of presentedKeys(headers, gemini)) {
    if (key === undefined) continue
    if (matches(guard, key)) {
      outcome = "ok"
      break
    }
    outcome = "invalid"
  }
  TaggedMetric.unsafeUpdate(Metrics.authRequestsTotal, { outcome }, 1)
  return outcome
}

/**
 * The caller's headers (`authorization`, `x-api-key`) that carry one of the guard's keys: the
 * router's own key, which a forwarded request never takes along. None without a guard.
 */
export const keyHeaders = (
  guard: Guard | undefined,
  headers: Readonly<Record<string, string | undefined>>
): ReadonlyArray<string> => {
  if (guard === undefined) return []
  return presentedKeys(headers).flatMap(([name, key]) => key !== undefined && matches(guard, key) ? [name] : [])
}

/**
 * `undefined` when the caller may proceed (no guard, or a valid key), else the 401 failure;
 * `gemini`: `x-goog-api-key` counts too (see {@link check}).
 */
export const refusal = (
  guard: Guard | undefined,
  headers: Readonly<Record<string, string | undefined>>,
  gemini = false
): Unauthorized | undefined => {
  if (guard === undefined) return undefined
  const outcome = check(guard, headers, gemini)
  return outcome === "ok" ? undefined : new Unauthorized({ reason: outcome })
}

/** {@link refusal} as an Effect: succeeds when the caller may proceed, fails with `Unauthorized`. */
export const admit = (
  guard: Guard | undefined,
  headers: Readonly<Record<string, string | undefined>>,
  gemini = false
): Effect.Effect<void, Unauthorized> =>
  Effect.suspend(() => {
    const refused = refusal(guard, headers, gemini)
    return refused === undefined ? Effect.void : Effect.fail(refused)
  })

/** Create the auth series at 0 for every outcome (only when auth is on). */
export const seed = (guard: Guard | undefined): Effect.Effect<void> =>
  guard === undefined ? Effect.void : Effect.sync(() => {
    for (const outcome of ["ok", "missing", "invalid"] as const) {
      TaggedMetric.unsafeUpdate(Metrics.authRequestsTotal, { outcome }, 0)
    }
  })
