/**
 * `[routes.<n>]` with `type = "llm_classifier"` and `mode = "custom"` (docs/configuration.md): the
 * judge answers the route's `prompt` with a JSON value matching `response_schema`, and
 * `policy.selector` names one of `targets` (else `default_target`).
 */
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import type * as Schema from "effect/Schema"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import { keysOf } from "../../tables/Toml.js"
import { customClassifier, customFields } from "./CustomClassifierKeys.js"
import type * as CustomRoute from "./CustomRoute.js"

/**
 * A custom classifier route, validated: `CustomRoute.make` takes it as it is (its selections keyed
 * by session, the default affinity).
 */
export type Spec =
  & RouteSpecOf<
    Omit<CustomRoute.Options, "affinity" | "groups">,
    { readonly type: "llm_classifier"; readonly mode: "custom" }
  >
  & Pick<CustomRoute.Options, "groups">

const keys = keysOf({ ...routeKeyFields("llm_classifier"), ...customFields })

/** The custom route table: the common keys → the custom classifier's keys. */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const { classifyTrigger, messageHashFallback, settings } = yield* customClassifier(keys, context.targets)
      return { ...common, type: "llm_classifier", mode: "custom", ...settings, classifyTrigger, messageHashFallback }
    })
)

/** Decodes the custom route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
