/**
 * The `passthrough` route: always its one target, no fallbacks.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Decision from "../../Decision.js"
import type { Route } from "../../Route.js"

/** Options of a passthrough route. */
export interface Options {
  readonly id: string
  readonly name: string
  readonly target: Target
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/** Build a passthrough route. */
export const make = (options: Options): Route => ({
  id: options.id,
  name: options.name,
  algorithm: "passthrough",
  targets: [options.target],
  contextWindow: options.contextWindow ?? Option.none(),
  toolCalling: options.toolCalling ?? Option.none(),
  decide: () =>
    Effect.succeed(Decision.routed({
      route: { id: options.id, name: options.name, algorithm: "passthrough" },
      selected: options.target,
      fallbacks: [],
      evidence: { source: "passthrough" }
    }))
})
