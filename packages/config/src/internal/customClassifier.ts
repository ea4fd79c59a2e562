/**
 * A custom classifier's keys and rules, shared by a `mode = "custom"` route and a `subagents`
 * classifier: the judge, the labelled `targets` and `default_target`, the verdict's
 * `response_schema` and the `policy` selector, then the shared judge keys.
 */
import type { Target } from "@switchyard-ts/client/Target"
import type * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import * as JsonPointer from "@switchyard-ts/routing/JsonPointer"
import * as JsonSchema from "@switchyard-ts/routing/JsonSchema"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import {
  checkPrompt,
  judgeCall,
  judgeCallFields,
  lateVerdictFields,
  lateVerdicts,
  triggerFields,
  triggers
} from "./judgeKeys.js"
import { lookupTarget } from "./rules.js"
import { arrayOf, failAt, subtable, TomlString, TomlVariant } from "./toml.js"

/** A custom classifier's settings: every key of a custom route's options but the route-wide ones and the triggers. */
export type CustomClassifierSettings = Required<
  Omit<
    CustomRoute.Options,
    "id" | "name" | "contextWindow" | "toolCalling" | "affinity" | "classifyTrigger" | "messageHashFallback"
  >
>

/** `policy = { type = "target_selector", selector = "<JSON Pointer>" }` (or a `[routes.<n>.policy]` table). */
const Policy = subtable({ type: TomlVariant("target_selector"), selector: TomlString })

/** The keys of a custom classifier, after its `type`. */
export const customFields = {
  mode: TomlVariant("custom"),
  classifier_target: TomlString,
  targets: arrayOf(TomlString),
  default_target: TomlString,
  prompt: TomlString,
  response_schema: TomlString,
  policy: Policy,
  ...triggerFields,
  // custom mode always sends its own json_schema format; only the default may be spelled out
  response_format_type: Schema.optional(TomlVariant("json_schema")),
  ...judgeCallFields,
  ...lateVerdictFields
}

type Keys = Schema.Struct.Type<typeof customFields>

/**
 * `targets`: at least two labels (target table names, trimmed), non-blank, unique, known, and
 * resolving to distinct model ids.
 */
const labelledTargets = (targets: ReadonlyMap<string, Target>, labels: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (labels.length < 2) return yield* failAt(["targets"], "custom classifier requires at least two targets")
    const resolved: Array<Target> = []
    for (const [i, rawLabel] of labels.entries()) {
      const path = ["targets", i]
      const label = rawLabel.trim()
      if (label === "") return yield* failAt(path, "custom classifier target labels must not be empty")
      if (resolved.some((target) => target.name === label)) {
        return yield* failAt(path, `custom classifier targets must be unique; ${JSON.stringify(label)} is listed twice`)
      }
      const target = yield* lookupTarget(targets, path, label)
      const twin = resolved.find((other) => other.id === target.id)
      if (twin !== undefined) {
        return yield* failAt(
          path,
          `resolved target ${JSON.stringify(target.id)} is duplicated (targets ${JSON.stringify(twin.name)} and ${
            JSON.stringify(label)
          } name the same model)`
        )
      }
      resolved.push(target)
    }
    return resolved
  })

/**
 * `response_schema`: a TOML string holding the inner JSON Schema of the verdict — JSON, an object,
 * not a provider wrapper (`json_schema` key), within the supported subset (`JsonSchema.compile`).
 */
const responseSchema = (text: string) =>
  Effect.gen(function*() {
    const path = ["response_schema"]
    const parsed = Schema.decodeUnknownEither(Schema.parseJson())(text)
    if (Either.isLeft(parsed)) return yield* failAt(path, "response_schema is invalid JSON")
    const document = parsed.right
    if (!Predicate.isRecord(document)) return yield* failAt(path, "response_schema must be a JSON object")
    if (Object.hasOwn(document, "json_schema")) {
      return yield* failAt(
        path,
        "response_schema must be the inner JSON Schema, not a provider response_format wrapper (it has a json_schema key)"
      )
    }
    const compiled = JsonSchema.compile(document)
    if (Either.isLeft(compiled)) {
      const { at, message } = compiled.left
      return yield* failAt(path, `response_schema is not a supported JSON Schema at ${JSON.stringify(at)}: ${message}`)
    }
    return { responseSchema: document, compiledSchema: compiled.right }
  })

/** `policy.selector`: an RFC 6901 JSON Pointer, not the root. */
const selectorOf = (selector: string): Effect.Effect<JsonPointer.JsonPointer, ParseResult.ParseIssue> => {
  const path = ["policy", "selector"]
  const parsed = JsonPointer.parse(selector)
  if (Either.isLeft(parsed)) return failAt(path, `selector is not a valid JSON Pointer: ${parsed.left}`)
  return JsonPointer.isRoot(parsed.right)
    ? failAt(path, "selector must not be the root pointer \"\"; point at the member naming the target")
    : Effect.succeed(parsed.right)
}

/**
 * The rules of a custom classifier, in order: `classifier_target` → `targets` → `default_target`
 * (one of `targets`) → triggers → `prompt` (required) → `response_schema` → `policy.selector` →
 * the judge call → late verdicts.
 */
export const customClassifier = (keys: Keys, targets: ReadonlyMap<string, Target>) =>
  Effect.gen(function*() {
    const judge = yield* lookupTarget(targets, ["classifier_target"], keys.classifier_target)
    const resolved = yield* labelledTargets(targets, keys.targets)
    const defaultLabel = keys.default_target.trim()
    const defaultTarget = resolved.find((target) => target.name === defaultLabel)
    if (defaultTarget === undefined) {
      return yield* failAt(["default_target"], `default_target ${JSON.stringify(defaultLabel)} must be one of targets`)
    }
    const { classifyTrigger, messageHashFallback, recentTurnWindow } = yield* triggers(keys)
    const prompt = yield* checkPrompt(keys.prompt)
    const schema = yield* responseSchema(keys.response_schema)
    const selector = yield* selectorOf(keys.policy.selector)
    const call = yield* judgeCall(keys)
    const late = yield* lateVerdicts(keys, call)
    const settings: CustomClassifierSettings = {
      judge,
      targets: resolved,
      defaultTarget,
      prompt,
      ...schema,
      selector,
      recentTurnWindow,
      ...call,
      ...late
    }
    return { settings, classifyTrigger, messageHashFallback }
  })
