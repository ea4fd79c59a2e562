/**
 * A custom classifier's keys and rules, shared by a `mode = "custom"` route and a `subagents`
 * classifier: the judge, the labelled `targets` and `default_target`, the verdict's
 * `response_schema` and the `policy` selector, then the shared judge keys.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as JsonPointer from "../../judge/JsonPointer.js"
import * as JsonSchema from "../../judge/JsonSchema.js"
import {
  chain,
  chainFields,
  checkPrompt,
  judgeCall,
  judgeCallFields,
  lateVerdictFields,
  lateVerdicts,
  triggerFields,
  triggers
} from "../../tables/JudgeKeys.js"
import { lookupTarget } from "../../tables/KeyRules.js"
import { arrayOf, failAt, subtable, tableOf, TomlString, TomlVariant } from "../../tables/Toml.js"
import type * as CustomRoute from "./CustomRoute.js"

/** A custom classifier's settings: every key of a custom route's options but the route-wide ones and the triggers. */
export type CustomClassifierSettings =
  & Required<
    Omit<
      CustomRoute.Options,
      | "id"
      | "name"
      | "contextWindow"
      | "toolCalling"
      | "affinity"
      | "classifyTrigger"
      | "messageHashFallback"
      | "groups"
    >
  >
  & Pick<CustomRoute.Options, "groups">

/** `policy = { type = "target_selector", selector = "<JSON Pointer>" }` (or a `[routes.<n>.policy]` table). */
const Policy = subtable({ type: TomlVariant("target_selector"), selector: TomlString })

/** The keys of a custom classifier, after its `type`. */
export const customFields = {
  mode: TomlVariant("custom"),
  // the targets form: the judge and the labelled targets
  classifier_target: Schema.optional(TomlString),
  targets: Schema.optional(arrayOf(TomlString)),
  // the group form: named groups of targets, `judge` and `any` among them
  models: Schema.optional(tableOf(arrayOf(TomlString))),
  default_target: TomlString,
  prompt: TomlString,
  response_schema: TomlString,
  policy: Policy,
  ...triggerFields,
  ...chainFields,
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

/** The targets form's judge, labelled targets and default: `classifier_target`, `targets`, `default_target`. */
const targetsForm = (keys: Keys, targets: ReadonlyMap<string, Target>) =>
  Effect.gen(function*() {
    if (keys.classifier_target === undefined) {
      return yield* failAt(
        ["classifier_target"],
        "is missing (mode custom takes classifier_target and targets, or a models table)"
      )
    }
    if (keys.targets === undefined) {
      return yield* failAt(
        ["targets"],
        "is missing (mode custom takes classifier_target and targets, or a models table)"
      )
    }
    const judge = yield* lookupTarget(targets, ["classifier_target"], keys.classifier_target)
    const resolved = yield* labelledTargets(targets, keys.targets)
    const defaultLabel = keys.default_target.trim()
    const defaultTarget = resolved.find((target) => target.name === defaultLabel)
    if (defaultTarget === undefined) {
      return yield* failAt(["default_target"], `default_target ${JSON.stringify(defaultLabel)} must be one of targets`)
    }
    const judgeFallbacks: ReadonlyArray<string> = []
    return { judge, targets: resolved, defaultTarget, judgeFallbacks }
  })

/**
 * The group form (`[routes.<n>.models]`, the compatible system's after 0.3.0): `any` and `judge`
 * non-empty, `default_target` a non-empty group other than `judge`, every other group's targets in
 * `any`. `judge` lists the judge chain: its first target, then its fallbacks (`classifier_fallback`). A
 * group's candidates are its own targets, then `any`'s others; the route's targets are `any`'s.
 */
const groupsForm = (
  keys: Keys,
  models: Readonly<Record<string, ReadonlyArray<string>>>,
  targets: ReadonlyMap<string, Target>
) =>
  Effect.gen(function*() {
    if (keys.classifier_target !== undefined) {
      return yield* failAt(
        ["classifier_target"],
        "mode custom cannot use capability or escalation fields and response_format_type must be 'json_schema'"
      )
    }
    if (keys.targets !== undefined) {
      return yield* failAt(["targets"], "mode custom takes models groups or targets, not both")
    }
    for (const required of ["any", "judge"]) {
      if ((models[required] ?? []).length === 0) {
        return yield* failAt(["models", required], `models.${required} must contain at least one target`)
      }
    }
    const defaultLabel = keys.default_target.trim()
    if (defaultLabel === "") return yield* failAt(["default_target"], "has invalid default_target: empty group name")
    if (defaultLabel === "judge") return yield* failAt(["default_target"], "default_target cannot be judge")
    if ((models[defaultLabel] ?? []).length === 0) {
      return yield* failAt(
        ["models", defaultLabel],
        `models.${defaultLabel} must contain at least one target because it is the default_target`
      )
    }
    const any = models["any"] ?? []
    const resolved = new Map<string, Target>()
    for (const [label, names] of Object.entries(models)) {
      if (label.trim() === "") return yield* failAt(["models", label], "models group names must not be empty")
      for (const [i, name] of names.entries()) {
        if (label !== "judge" && label !== "any" && !any.includes(name)) {
          return yield* failAt(
            ["models", label, i],
            `models.${label} lists target ${name}, which must also appear in models.any`
          )
        }
        resolved.set(name, yield* lookupTarget(targets, ["models", label, i], name))
      }
    }
    // every name was resolved above
    const resolvedOf = (names: ReadonlyArray<string>): Array<Target> =>
      names.flatMap((name) => resolved.get(name) ?? [])
    const judgeNames = models["judge"] ?? []
    const groups: Array<CustomRoute.Group> = []
    for (const label of Object.keys(models).filter((name) => name !== "judge").sort()) {
      const own = [...new Set(models[label] ?? [])]
      const [first, ...rest] = resolvedOf([...own, ...any.filter((name) => !own.includes(name))])
      if (first !== undefined) groups.push({ label, candidates: [first, ...rest] })
    }
    const anyTargets = resolvedOf([...new Set(any)])
    const [judge] = resolvedOf(judgeNames)
    const defaultTarget = groups.find((group) => group.label === defaultLabel)?.candidates[0]
    if (judge === undefined || defaultTarget === undefined) {
      return yield* failAt(["models"], "models.any and models.judge must contain at least one target")
    }
    return {
      judge,
      targets: anyTargets,
      defaultTarget,
      groups: { groups, defaultLabel },
      // `models.judge = [a, b, …]`: `a` first, then `b, …` as its `classifier_fallback`
      judgeFallbacks: judgeNames.slice(1)
    }
  })

/**
 * The rules of a custom classifier, in order: the targets form (`classifier_target` → `targets` →
 * `default_target`, one of `targets`) or the group form (`models`, `default_target` a group) →
 * triggers → `prompt` (required) → `response_schema` → `policy.selector` → the judge call → late
 * verdicts.
 */
export const customClassifier = (keys: Keys, targets: ReadonlyMap<string, Target>) =>
  Effect.gen(function*() {
    const form = keys.models === undefined
      ? yield* targetsForm(keys, targets)
      : yield* groupsForm(keys, keys.models, targets)
    const { classifyTrigger, messageHashFallback, recentTurnWindow } = yield* triggers(keys)
    const prompt = yield* checkPrompt(keys.prompt)
    const schema = yield* responseSchema(keys.response_schema)
    const selector = yield* selectorOf(keys.policy.selector)
    const call = yield* judgeCall(keys)
    const late = yield* lateVerdicts(keys, call)
    const { judgeFallbacks: listed, ...chosen } = form
    if (listed.length > 0 && keys.classifier_fallback !== undefined) {
      return yield* failAt(
        ["classifier_fallback"],
        "models.judge already lists the judge's fallbacks; give them in one place"
      )
    }
    const judges = yield* chain(
      listed.length > 0 ? { ...keys, classifier_fallback: listed } : keys,
      targets,
      { judge: form.judge, destinations: form.targets, lateVerdictMs: late.lateVerdictMs },
      listed.length > 0 ? ["models", "judge"] : ["classifier_fallback"]
    )
    const settings: CustomClassifierSettings = {
      ...chosen,
      ...judges,
      prompt,
      ...schema,
      selector,
      recentTurnWindow,
      ...call,
      ...late
    }
    return { settings, classifyTrigger, messageHashFallback }
  })
