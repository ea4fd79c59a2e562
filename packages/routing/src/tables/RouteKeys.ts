/**
 * The keys every `[routes.<n>]` table has (`id`, `type`, `context_window`, `tool_calling`,
 * `reasoning`, `vision`, `request_timeout_ms`, `baseline_target`), what a route table's rules are given (its table name and the deployment's
 * targets), and the shape of a route spec: the route module's options with every key set, plus
 * these common keys.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Types from "effect/Types"
import { lookupTarget, maxU32, optionalInteger, positive } from "./KeyRules.js"
import * as Table from "./Table.js"
import { TomlBoolean, TomlInteger, TomlString, TomlVariant } from "./Toml.js"

/** What a route table's rules are given: its table name and the deployment's targets by table name. */
export interface RouteContext {
  /** The TOML table name (`[routes.<name>]`). */
  readonly name: string
  readonly targets: ReadonlyMap<string, Target>
}

/** Keys every route table shares, validated. */
export interface RouteCommon {
  /** The TOML table name (`[routes.<name>]`). */
  readonly name: string
  /** The public model name clients send. */
  readonly id: string
  /** Advertised by `/v1/models` only. */
  readonly contextWindow: Option.Option<number>
  /** Advertised by `/v1/models`; `false` refuses requests with tools or tool history (400). */
  readonly toolCalling: Option.Option<boolean>
  /**
   * `reasoning`: `false` refuses requests with reasoning controls (400); not advertised. Absent
   * when the key is unset.
   */
  readonly reasoning?: Option.Option<boolean>
  /**
   * `vision`: advertised by `/v1/models` (`capabilities.vision`); `false` refuses requests with
   * images (400). Absent when the key is unset.
   */
  readonly vision?: Option.Option<boolean>
  /**
   * `request_timeout_ms` (positive integer, unset by default): bounds each request of the route —
   * routing, judge and answer call, retries included; a stream until its headers — with a 504.
   */
  readonly requestTimeoutMs: Option.Option<number>
  /**
   * `baseline_target` (a target of the deployment, unset by default): the target whose price the
   * route's savings are measured against. Absent when the key is unset: the route type's default
   * (`Deployment.baselineTarget`).
   */
  readonly baselineTarget?: Target
}

/**
 * A route spec: `Tag` (`type`, and `mode` for classifiers), the common keys, and the route
 * module's `Options` with every optional key set — what the route's `make` takes as it is.
 */
export type RouteSpecOf<Options, Tag> = Types.Simplify<
  Tag & RouteCommon & Required<Omit<Options, keyof RouteCommon>>
>

/** The common keys, by TOML key; `type` is the route type's own variant. */
export const routeKeyFields = <const Type extends string>(type: Type) => ({
  id: TomlString,
  type: TomlVariant(type),
  context_window: Schema.optional(TomlInteger),
  tool_calling: Schema.optional(TomlBoolean),
  reasoning: Schema.optional(TomlBoolean),
  vision: Schema.optional(TomlBoolean),
  request_timeout_ms: Schema.optional(TomlInteger),
  baseline_target: Schema.optional(TomlString)
})

/**
 * The common keys' rules, checked first: `context_window` (1..2^32-1), then `request_timeout_ms`,
 * then `baseline_target` (a known target).
 */
const routeCommon = (
  keys: {
    readonly id: string
    readonly context_window?: bigint | undefined
    readonly tool_calling?: boolean | undefined
    readonly reasoning?: boolean | undefined
    readonly vision?: boolean | undefined
    readonly request_timeout_ms?: bigint | undefined
    readonly baseline_target?: string | undefined
  },
  context: RouteContext
): Effect.Effect<RouteCommon, ParseResult.ParseIssue> =>
  Effect.gen(function*() {
    const contextWindow = yield* optionalInteger(["context_window"], keys.context_window, {
      min: 1n,
      max: maxU32,
      belowMin: "must be greater than zero"
    })
    const requestTimeoutMs = yield* optionalInteger(["request_timeout_ms"], keys.request_timeout_ms, positive)
    const baselineTarget = keys.baseline_target === undefined
      ? undefined
      : yield* lookupTarget(context.targets, ["baseline_target"], keys.baseline_target)
    return {
      name: context.name,
      id: keys.id,
      contextWindow,
      toolCalling: Option.fromNullable(keys.tool_calling),
      ...(keys.reasoning === undefined ? {} : { reasoning: Option.some(keys.reasoning) }),
      ...(keys.vision === undefined ? {} : { vision: Option.some(keys.vision) }),
      requestTimeoutMs,
      ...(baselineTarget === undefined ? {} : { baselineTarget })
    }
  })

/**
 * A route table: `keys`, then the common keys' rules, then the route type's own `rules`, given
 * the validated common keys.
 */
export const routeTable = <K extends Schema.Struct.Type<ReturnType<typeof routeKeyFields>>, I, A>(
  keys: Schema.Schema<K, I>,
  rules: (keys: K, context: RouteContext, common: RouteCommon) => Effect.Effect<A, ParseResult.ParseIssue>
): Table.Table<K, I, A, RouteContext> =>
  Table.make(
    keys,
    (keys, context) => Effect.flatMap(routeCommon(keys, context), (common) => rules(keys, context, common))
  )

/** A route table whose keys are decoded: its route id, and its rules over the deployment's context. */
export interface Read<Spec> {
  readonly id: string
  readonly rules: (context: RouteContext) => Effect.Effect<Spec, ParseResult.ParseIssue>
}

/**
 * How a deployment loader reads a route table with `table`: its keys now (failing at the first
 * structural problem), its rules later, once every table's keys are read.
 */
export const reader =
  <K extends { readonly id: string }, I, Spec>(table: Table.Table<K, I, Spec, RouteContext>) =>
  (input: unknown): Effect.Effect<Read<Spec>, ParseResult.ParseIssue> =>
    Effect.map(ParseResult.decodeUnknown(table.keys)(input), (keys) => ({
      id: keys.id,
      rules: (context: RouteContext) => table.rules(keys, context)
    }))
