/**
 * Evidence: the one record per routed request that says why its target was chosen. Returned by
 * `/v1/decision`, set on the `libsy.run` span, summarised in `x-switchyard-evidence-source`.
 */
import * as Schema from "effect/Schema"

/** A `passthrough` route chose its only target. */
export const Passthrough = Schema.Struct({ source: Schema.Literal("passthrough") })
/** A `random` route made a weighted pick. */
export const Random = Schema.Struct({ source: Schema.Literal("random") })
/** A `noop` route answered by itself. */
export const Noop = Schema.Struct({ source: Schema.Literal("noop") })

/** Every evidence record, discriminated by `source`. */
export const Evidence = Schema.Union(Passthrough, Random, Noop)
export type Evidence = typeof Evidence.Type

/** The `source` values. */
export type Source = Evidence["source"]
