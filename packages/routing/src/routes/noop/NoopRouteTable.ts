/**
 * `[routes.<n>]` with `type = "noop"` (docs/configuration.md): the route answers `OK` itself,
 * without any upstream. Only the keys every route has.
 */
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import type * as Schema from "effect/Schema"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import { keysOf } from "../../tables/Toml.js"
import type * as Noop from "./Noop.js"

/** A noop route, validated: `Noop.make` takes it as it is. */
export type Spec = RouteSpecOf<Noop.Options, { readonly type: "noop" }>

const keys = keysOf(routeKeyFields("noop"))

/** The noop route table: its keys, then the common keys' rules. */
export const table = routeTable(
  keys,
  (_keys, _context, common): Effect.Effect<Spec, ParseResult.ParseIssue> => Effect.succeed({ ...common, type: "noop" })
)

/** Decodes the noop route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
