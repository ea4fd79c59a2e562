/**
 * `[routes.<n>]` with `type = "random"` (docs/configuration.md): a weighted pick among `targets`;
 * the others are fallbacks in config order.
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { integerInRange, lookupTarget, maxU64 } from "../../tables/KeyRules.js"
import { type RouteContext, routeKeyFields, type RouteSpecOf, routeTable } from "../../tables/RouteKeys.js"
import * as Table from "../../tables/Table.js"
import { arrayOf, failAt, keysOf, TomlInteger, TomlNumber, TomlString } from "../../tables/Toml.js"
import type * as RandomRoute from "./RandomRoute.js"

/**
 * A random route, validated: `RandomRoute.make` takes it as it is. `weights` has one finite,
 * non-negative weight per target, at least one positive (all 1 when omitted); `seed` (0..2^64-1)
 * makes the pick sequence repeat for an identical order of calls.
 */
export type Spec = RouteSpecOf<RandomRoute.Options, { readonly type: "random" }>

const keys = keysOf({
  ...routeKeyFields("random"),
  targets: arrayOf(TomlString),
  weights: Schema.optional(arrayOf(TomlNumber)),
  seed: Schema.optional(TomlInteger)
})

/** `targets`: known and unique, at least one. */
const targetsOf = (context: RouteContext, names: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const resolved = yield* Effect.forEach(names, (name, i) => lookupTarget(context.targets, ["targets", i], name))
    for (const [i, name] of names.entries()) {
      if (names.indexOf(name) !== i) {
        return yield* failAt(["targets", i], `random targets must be unique; ${JSON.stringify(name)} is listed twice`)
      }
    }
    if (!Arr.isNonEmptyReadonlyArray(resolved)) return yield* failAt(["targets"], "no routing targets are configured")
    return resolved
  })

/** `weights`: one per target, finite, non-negative, at least one positive; all 1 when omitted. */
const weightsOf = (count: number, weights: ReadonlyArray<number> | undefined) =>
  Effect.gen(function*() {
    if (weights === undefined) return Arr.replicate(1, count)
    if (weights.length !== count) {
      return yield* failAt(["weights"], `invalid random weights: expected ${count} weights, got ${weights.length}`)
    }
    for (const [i, weight] of weights.entries()) {
      if (!Number.isFinite(weight) || weight < 0) {
        return yield* failAt(["weights", i], `weights must be finite and nonnegative, got ${weight}`)
      }
    }
    if (!weights.some((weight) => weight > 0)) return yield* failAt(["weights"], "at least one weight must be positive")
    return weights
  })

/** The random route table: the common keys → `targets` → `weights` → `seed`. */
export const table = routeTable(
  keys,
  (keys, context, common): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const targets = yield* targetsOf(context, keys.targets)
      const weights = yield* weightsOf(targets.length, keys.weights)
      const seed = keys.seed === undefined
        ? Option.none()
        : Option.some(yield* integerInRange(["seed"], keys.seed, 0n, maxU64))
      return { ...common, type: "random", targets, weights, seed }
    })
)

/** Decodes the random route table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: RouteContext): Schema.Schema<Spec, typeof keys.Encoded> => Table.schema(table, context)
