/**
 * Helpers of the cost tests: exact amounts from decimal strings, the expected totals of
 * `Pricing.TotalsJson`, and routing log lines of session `prop` carrying a given cost.
 */
import * as Pricing from "@switchyard-ts/routing/Pricing"
import type * as RoutingLog from "@switchyard-ts/server/RoutingLog"
import { lineOf as linesLineOf } from "./lines.js"

/** Femto-dollars of a decimal USD string. */
export const femto = (decimal: string): bigint => Pricing.femtoOfUsd(Number(decimal))

/** Expected totals: `known` in femto-dollars and the calls of each kind. */
export const totals = (known: bigint, calls: { unknown?: number; estimated?: number; reported?: number }) => ({
  known_usd: Pricing.usd(known),
  total_usd: (calls.unknown ?? 0) > 0 ? null : Pricing.usd(known),
  unknown_calls: calls.unknown ?? 0,
  estimated_calls: calls.estimated ?? 0,
  provider_reported_calls: calls.reported ?? 0
})

/**
 * A line of session `prop` of `kind` with `cost` (and what it says of it), one prompt and one
 * completion token; a response line with `baseline` also names its baseline model and cost.
 */
export const lineOf = (
  kind: "judge" | "response",
  cost: Pricing.Cost | undefined,
  baseline?: { readonly cost: Pricing.Cost | undefined }
): RoutingLog.Line =>
  linesLineOf({
    kind,
    session: "prop",
    model: kind === "judge" ? "j" : "m",
    cost,
    prompt: 1,
    completion: 1,
    ...(baseline === undefined ? {} : { baseline })
  })
