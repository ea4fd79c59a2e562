/**
 * Branded identifiers shared by every package.
 */
import * as Schema from "effect/Schema"

/** The public model name of a route (what clients send as `model`). */
export const RouteId = Schema.String.pipe(Schema.brand("RouteId"))
export type RouteId = typeof RouteId.Type

/** A session identity (`x-switchyard-session-id`, or a hash of the first user message). */
export const SessionId = Schema.String.pipe(Schema.brand("SessionId"))
export type SessionId = typeof SessionId.Type
