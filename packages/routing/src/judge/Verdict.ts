/**
 * The capability judge's verdict: its schema (also sent upstream as JSON Schema), decoding of the
 * judge's reply text (markdown fences stripped, unknown keys rejected), and the consistency rules
 * that make a verdict usable. Anything unusable is an `InvalidVerdict`, which never fails a
 * request: the route goes on without a verdict.
 */
import * as ExpectedFailure from "@switchyard-ts/client/ExpectedFailure"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

/** `capability_boundary` values. */
export const Boundary = Schema.Literal("supported", "uncertain", "unmatched", "unsupported")
export type Boundary = typeof Boundary.Type

/** `primary_rule` values; each family belongs to one boundary. */
export const Rule = Schema.Literal(
  "SUP-1",
  "SUP-2",
  "SUP-3",
  "SUP-4",
  "SUP-5",
  "UNC-1",
  "UNC-2",
  "LIM-1",
  "LIM-2",
  "none"
)
export type Rule = typeof Rule.Type

/** A verdict as the judge writes it: exactly these four keys. */
export const Verdict = Schema.Struct({
  crux: Schema.String,
  primary_rule: Rule,
  capability_boundary: Boundary,
  p_solve: Schema.Number
})
export type Verdict = typeof Verdict.Type

/** Why a judge consultation produced no usable verdict (bounded labels, the posture table (README.md)). */
export type InvalidReason = "invalid_response" | "parse_error"

/**
 * The judge answered, but not with a usable verdict: its HTTP body was not a chat completion
 * (`invalid_response`), or its reply was not a valid, consistent verdict (`parse_error`: not JSON,
 * schema-invalid, `p_solve` out of range, blank `crux`, a rule contradicting its boundary,
 * truncated, empty). `detail` is ours, never the judge's text.
 */
export class InvalidVerdict extends Schema.TaggedError<InvalidVerdict>()("InvalidVerdict", {
  reason: Schema.Literal("invalid_response", "parse_error"),
  detail: Schema.String
}) {}

/** An `InvalidVerdict`, made without a stack trace (`ExpectedFailure`): an expected outcome of a consultation. */
export const invalid = (reason: InvalidReason, detail: string): InvalidVerdict =>
  ExpectedFailure.make(() => new InvalidVerdict({ reason, detail }))

/** The boundary each rule family belongs to. */
export const boundaryOfRule = (rule: Rule): Boundary =>
  rule.startsWith("SUP-")
    ? "supported"
    : rule.startsWith("UNC-")
    ? "uncertain"
    : rule.startsWith("LIM-")
    ? "unsupported"
    : "unmatched"

/** The inner JSON Schema of a verdict, as sent to the judge. */
export const jsonSchema = {
  type: "object",
  additionalProperties: false,
  required: ["crux", "primary_rule", "capability_boundary", "p_solve"],
  properties: {
    crux: { type: "string", minLength: 1 },
    primary_rule: { type: "string", enum: Rule.literals },
    capability_boundary: { type: "string", enum: Boundary.literals },
    p_solve: { type: "number", minimum: 0, maximum: 1 }
  }
} as const

/** The `response_format` of a `json_schema` judge request. */
export const responseFormatJsonSchema = {
  type: "json_schema",
  json_schema: { name: "CapabilityClassifierDecision", strict: true, schema: jsonSchema }
} as const

/**
 * Strip one markdown fence around the reply: a leading three backticks with an optional lowercase
 * `json` tag, and trailing three backticks. Anything else is left as is.
 */
export const stripFences = (text: string): string => {
  let body = text.trim()
  if (body.startsWith("```")) {
    body = body.slice(3)
    if (body.startsWith("json")) body = body.slice(4)
    body = body.replace(/^[\r\n]+/, "")
    if (body.endsWith("```")) body = body.slice(0, -3)
    body = body.trim()
  }
  return body
}

const decodeStrict = Schema.decodeUnknownEither(Schema.parseJson(Verdict), { onExcessProperty: "error" })

const parseError = (detail: string) => invalid("parse_error", detail)

/** Check that a schema-valid verdict is usable: range, non-blank crux, rule matching boundary. */
export const check = (verdict: Verdict): Either.Either<Verdict, InvalidVerdict> => {
  if (!Number.isFinite(verdict.p_solve) || verdict.p_solve < 0 || verdict.p_solve > 1) {
    return Either.left(parseError("p_solve is outside [0, 1]"))
  }
  if (verdict.crux.trim() === "") return Either.left(parseError("crux is blank"))
  if (boundaryOfRule(verdict.primary_rule) !== verdict.capability_boundary) {
    return Either.left(parseError(`rule ${verdict.primary_rule} contradicts boundary ${verdict.capability_boundary}`))
  }
  return Either.right(verdict)
}

/** Decode the judge's reply text into a usable verdict. */
export const decode = (text: string): Effect.Effect<Verdict, InvalidVerdict> => {
  const body = stripFences(text)
  if (body === "") return Effect.fail(parseError("empty reply"))
  return Either.match(decodeStrict(body), {
    onLeft: () => Effect.fail(parseError("reply is not a verdict object")),
    onRight: (verdict) => Either.match(check(verdict), { onLeft: Effect.fail, onRight: Effect.succeed })
  })
}
