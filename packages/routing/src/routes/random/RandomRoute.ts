/**
 * The `random` route: a weighted pick among its targets; the other targets are the fallbacks, in
 * config order. With a seed, the pick sequence repeats for an identical order of calls.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Decision from "../../Decision.js"
import type { Route } from "../../Route.js"

/** Options of a random route (validated by config: weights finite, ≥ 0, one positive). */
export interface Options {
  readonly id: string
  readonly name: string
  readonly targets: readonly [Target, ...Array<Target>]
  /** Relative weights, one per target; equal when omitted. */
  readonly weights?: ReadonlyArray<number>
  /** Seed of the route's own generator; without it, the fiber's `Random` service is used. */
  readonly seed?: Option.Option<bigint>
  readonly contextWindow?: Option.Option<number>
  readonly toolCalling?: Option.Option<boolean>
}

/**
 * Index chosen for a uniform draw `u ∈ [0, 1)`: the first target whose cumulative weight exceeds
 * `u × total`. Zero-weight targets are never chosen.
 */
export const pick = (weights: ReadonlyArray<number>, u: number): number => {
  const total = weights.reduce((sum, w) => sum + w, 0)
  const point = u * total
  let cumulative = 0
  let last = 0
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i] ?? 0
    if (w <= 0) continue
    cumulative += w
    last = i
    if (point < cumulative) return i
  }
  return last
}

/** Build a random route. Its seeded generator (if any) lives as long as the route. */
export const make = (options: Options): Route => {
  const weights = options.weights ?? options.targets.map(() => 1)
  const seeded = Option.map(options.seed ?? Option.none(), (seed) => Random.make(seed))
  const draw = Option.match(seeded, { onNone: () => Random.next, onSome: (random) => random.next })
  const route = { id: options.id, name: options.name, algorithm: "random" } as const
  return {
    id: options.id,
    name: options.name,
    algorithm: "random",
    targets: options.targets,
    contextWindow: options.contextWindow ?? Option.none(),
    toolCalling: options.toolCalling ?? Option.none(),
    decide: () =>
      Effect.map(draw, (u) => {
        const index = pick(weights, u)
        const selected = options.targets[index] ?? options.targets[0]
        return Decision.routed({
          route,
          selected,
          fallbacks: options.targets.filter((_, i) => i !== index),
          evidence: { source: "random" }
        })
      })
  }
}
