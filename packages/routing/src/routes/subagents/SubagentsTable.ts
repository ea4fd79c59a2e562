/**
 * A route's `subagents` table (passthrough and stage router routes; docs/configuration.md): how
 * delegated sub-agent work is routed instead of by the route itself — `type = "passthrough"` with
 * one `target`, or `type = "llm_classifier"` in `mode = "custom"` with a custom classifier's keys
 * (without the route-wide ones), whose `classify_trigger` is `every_request` or `new_session`.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Types from "effect/Types"
import { lookupTarget } from "../../tables/KeyRules.js"
import * as Table from "../../tables/Table.js"
import { failAt, keysOf, TomlString, TomlTable, TomlVariant, unknownVariant } from "../../tables/Toml.js"
import { settleSubagents } from "../classifier/ClassifierMode.js"
import { customClassifier, type CustomClassifierSettings, customFields } from "../custom/CustomClassifierKeys.js"
import type * as Passthrough from "../passthrough/Passthrough.js"

/** `subagents = { type = "passthrough", target = "<target>" }`: delegated work goes to one target. */
export type PassthroughSpec = Types.Simplify<{ readonly type: "passthrough" } & Pick<Passthrough.Options, "target">>

/**
 * `subagents` with `type = "llm_classifier"`, `mode = "custom"`: a custom classifier picks the
 * sub-agent's target; its selections are keyed by session id and agent id.
 */
export type ClassifierSpec = Types.Simplify<
  {
    readonly type: "llm_classifier"
    readonly mode: "custom"
    /** `every_request` (default) or `new_session`: a sub-agent is identified by its session and agent ids. */
    readonly classifyTrigger: "every_request" | "new_session"
  } & CustomClassifierSettings
>

/** A `subagents` table, validated. */
export type Spec = PassthroughSpec | ClassifierSpec

const PassthroughKeys = keysOf({ type: TomlVariant("passthrough"), target: TomlString })
const ClassifierKeys = keysOf({ type: TomlVariant("llm_classifier"), ...customFields })
type Keys = typeof PassthroughKeys.Type | typeof ClassifierKeys.Type
type Encoded = typeof PassthroughKeys.Encoded | typeof ClassifierKeys.Encoded

const types = ["passthrough", "llm_classifier"] as const
const TypeHead = Schema.Struct({ type: TomlString })

/** The keys of a `subagents` table: by its `type`, and for a classifier after its mode is settled. */
const keys = Schema.declare<Keys, Encoded, readonly [typeof PassthroughKeys, typeof ClassifierKeys]>(
  [PassthroughKeys, ClassifierKeys],
  {
    decode: (passthrough, classifier) => (input, options) =>
      Effect.gen(function*() {
        yield* ParseResult.decodeUnknown(TomlTable)(input)
        const { type } = yield* ParseResult.decodeUnknown(TypeHead)(input, { ...options, onExcessProperty: "ignore" })
        if (type === "passthrough") return yield* ParseResult.decodeUnknown(passthrough)(input, options)
        if (type !== "llm_classifier") return yield* failAt(["type"], unknownVariant(type, types))
        yield* settleSubagents(input)
        return yield* ParseResult.decodeUnknown(classifier)(input, options)
      }),
    encode: () => (input, _options, ast) =>
      ParseResult.fail(new ParseResult.Forbidden(ast, input, "subagents keys are not encoded back"))
  }
)

/**
 * A classifier's rules: `classify_trigger = "user_turn"` and `message_hash_fallback = true` are
 * rejected first, then the custom classifier's own.
 */
const classifierRules = (keys: typeof ClassifierKeys.Type, targets: ReadonlyMap<string, Target>) =>
  Effect.gen(function*() {
    if (keys.classify_trigger === "user_turn") {
      return yield* failAt(
        ["classify_trigger"],
        "subagents classify_trigger must be every_request or new_session, got user_turn"
      )
    }
    if (keys.message_hash_fallback === true) {
      return yield* failAt(
        ["message_hash_fallback"],
        "subagents cannot use message_hash_fallback: a sub-agent is identified by its session id and agent id"
      )
    }
    const { settings } = yield* customClassifier(keys, targets)
    const spec: ClassifierSpec = {
      type: "llm_classifier",
      mode: "custom",
      ...settings,
      classifyTrigger: keys.classify_trigger === "new_session" ? "new_session" : "every_request"
    }
    return spec
  })

/** The `subagents` table: its keys, then its rules over the deployment's targets by table name. */
export const table: Table.Table<Keys, Encoded, Spec, ReadonlyMap<string, Target>> = Table.make(
  keys,
  (keys, targets): Effect.Effect<Spec, ParseResult.ParseIssue> =>
    keys.type === "passthrough"
      ? Effect.map(lookupTarget(targets, ["target"], keys.target), (target) => ({ type: "passthrough", target }))
      : classifierRules(keys, targets)
)

/**
 * Decodes a `subagents` table over `targets` (by table name). Fails with an issue at the key path
 * of the first problem: an unknown `type`, a classifier `mode` other than `custom`, unknown keys,
 * unknown targets, and every custom classifier rule.
 */
export const schema = (targets: ReadonlyMap<string, Target>): Schema.Schema<Spec, Encoded> =>
  Table.schema(table, targets)

/** The rules of a route's optional `subagents` table (issues under `subagents`), run after the route's own. */
export const optional = (
  keys: Keys | undefined,
  targets: ReadonlyMap<string, Target>
): Effect.Effect<Option.Option<Spec>, ParseResult.ParseIssue> =>
  keys === undefined ? Effect.succeedNone : Effect.asSome(Table.nested(["subagents"], table.rules(keys, targets)))
