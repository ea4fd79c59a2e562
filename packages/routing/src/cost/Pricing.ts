/**
 * Prices and the cost of one model call, exactly: the pricing file's format (the compatible
 * system's `--pricing-file`: served model id → USD per million tokens for `input`, `output`,
 * `cache_read`, `cache_write` and optionally `cache_write_1h`), its validation, and the cost of a
 * call's token counts — or the provider's own charge, which wins when reported (also when zero).
 *
 * Arithmetic is exact: a rate is held as an integer number of nano-dollars per million tokens
 * (femto-dollars per token; rates with more than nine decimals are rounded to nine, half to even),
 * a cost as an integer number of femto-dollars, and totals are sums of those integers, so no total
 * drifts however many calls it adds up. `usd` turns one into a JavaScript number for display.
 *
 * The table in force is the {@link Prices} service (replaced as a whole on a reload); `countsOf`
 * reads a call's buckets off its Chat usage; `CallCost` and `TotalsJson` are the JSON forms the
 * routing log and the HTTP API write.
 */
import { tokenCounts, type Usage } from "@switchyard-ts/protocol/OpenAiChat"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** An amount of money, in femto-dollars (1e-15 USD). */
export type Femto = bigint

/** Femto-dollars per dollar. */
const perUsd = 10n ** 15n

/** The amount as US dollars (a number, for display and JSON; the amount itself stays exact; may be negative). */
export const usd = (amount: Femto): number => {
  const magnitude = amount < 0n ? -amount : amount
  const whole = magnitude / perUsd
  const fraction = magnitude % perUsd
  // the nearest double of the exact decimal (one rounding, not two)
  return Number(`${amount < 0n ? "-" : ""}${whole}.${fraction.toString().padStart(15, "0")}`)
}

/** One model's rates, in nano-dollars per million tokens (= femto-dollars per token). */
export interface Rates {
  readonly input: bigint
  readonly output: bigint
  readonly cacheRead: bigint
  readonly cacheWrite: bigint
  /** Cache writes kept for an hour; unset: such writes cannot be priced. */
  readonly cacheWrite1h?: bigint | undefined
}

/** A pricing table: served model id → its rates. */
export type Table = ReadonlyMap<string, Rates>

/** Why a pricing file was refused (the compatible system's messages). */
export class PricingError extends Schema.TaggedError<PricingError>()("PricingError", {
  message: Schema.String
}) {}

/** Largest rate, USD per million tokens. */
export const maxRate = 10_000

/**
 * A rate in USD per million tokens as nano-dollars per million tokens: the number's shortest
 * decimal form (the one JSON wrote), rounded half to even beyond nine decimals.
 */
export const nanoRate = (rate: number): bigint => scaled(rate, 9)

/** `value`'s shortest decimal form times 10^`decimals`, rounded half to even to an integer. */
const scaled = (value: number, decimals: number): bigint => {
  const [mantissa = "0", exponent = "0"] = value.toString().toLowerCase().split("e")
  const [whole = "0", fraction = ""] = mantissa.split(".")
  const digits = BigInt(`${whole}${fraction}`)
  // value = digits × 10^(exp − fraction.length); result = value × 10^decimals
  const shift = Number(exponent) - fraction.length + decimals
  if (shift >= 0) return digits * 10n ** BigInt(shift)
  const divisor = 10n ** BigInt(-shift)
  const quotient = digits / divisor
  const remainder = digits % divisor
  const twice = remainder * 2n
  return twice > divisor || (twice === divisor && quotient % 2n === 1n) ? quotient + 1n : quotient
}

/** A rate: a number from 0 to {@link maxRate} (the messages are the pricing file's). */
const Rate = Schema.Number.annotations({ message: () => "must be a number" }).pipe(
  Schema.filter((rate) => Number.isFinite(rate) && rate >= 0 && rate <= maxRate, {
    message: () => `must be from 0 to ${maxRate}`
  })
)
const Entry = Schema.Struct({
  input: Rate,
  output: Rate,
  cache_read: Rate,
  cache_write: Rate,
  cache_write_1h: Schema.optionalWith(Rate, { exact: true })
})
const decodeEntry = Schema.decodeUnknownEither(Entry, { onExcessProperty: "error", errors: "all" })

/**
 * An entry refused: the model, what is wrong with it (`unknown field "discount"`, `missing
 * "output"`, `"input" must be from 0 to 10000`, …), then the compatible system's sentence.
 */
const invalidEntry = (model: string, problems: ReadonlyArray<string>) =>
  new PricingError({
    message: `invalid pricing for model ${JSON.stringify(model)}: ${
      problems.join(", ")
    }; use a nonempty model ID and rates from 0 to ${maxRate} USD per million tokens`
  })

/** What is wrong with an entry's rates, one phrase per key (in the order the decoder met them). */
const problemsOf = (error: ParseResult.ParseError): ReadonlyArray<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => {
    const key = issue.path[0]
    if (key === undefined) return "expected an object of rates"
    const name = JSON.stringify(String(key))
    return issue._tag === "Unexpected"
      ? `unknown field ${name}`
      : issue._tag === "Missing"
      ? `missing ${name}`
      : `${name} ${issue.message}`
  })

/**
 * Reads a pricing file's JSON text (`path` names it in messages): an object of model id → rates.
 * Refused: text that is not JSON or not an object (`invalid pricing file <path>: …`), a model id
 * given twice (`duplicate pricing model "<id>"`), and an empty or padded id or an entry with a
 * missing, unknown or non-number field or a rate outside 0–10000 (`invalid pricing for model
 * "<id>": <the id's or each key's problem>; use a nonempty model ID and rates from 0 to 10000 USD
 * per million tokens`).
 */
export const parse = (text: string, path: string): Either.Either<Table, PricingError> => {
  const invalidFile = (why: string) =>
    Either.left(new PricingError({ message: `invalid pricing file ${path}: ${why}` }))
  let document: unknown
  try {
    document = JSON.parse(text)
  } catch (error) {
    return invalidFile(error instanceof Error ? error.message : "not JSON")
  }
  if (typeof document !== "object" || document === null || Array.isArray(document)) {
    return invalidFile("expected a JSON object of model id to rates")
  }
  const duplicate = duplicateKey(text)
  if (duplicate !== undefined) {
    return Either.left(new PricingError({ message: `duplicate pricing model ${JSON.stringify(duplicate)}` }))
  }
  const table = new Map<string, Rates>()
  for (const [model, value] of Object.entries(document)) {
    if (model === "") return Either.left(invalidEntry(model, ["the model ID is empty"]))
    if (model.trim() !== model) {
      return Either.left(invalidEntry(model, ["the model ID has leading or trailing whitespace"]))
    }
    const entry = decodeEntry(value)
    if (Either.isLeft(entry)) return Either.left(invalidEntry(model, problemsOf(entry.left)))
    const rates = entry.right
    table.set(model, {
      input: nanoRate(rates.input),
      output: nanoRate(rates.output),
      cacheRead: nanoRate(rates.cache_read),
      cacheWrite: nanoRate(rates.cache_write),
      cacheWrite1h: rates.cache_write_1h === undefined ? undefined : nanoRate(rates.cache_write_1h)
    })
  }
  return Either.right(table)
}

/**
 * The first top-level key that `text` (a JSON object) holds twice, if any: `JSON.parse` keeps the
 * last silently, a pricing file must not.
 */
const duplicateKey = (text: string): string | undefined => {
  const seen = new Set<string>()
  let depth = 0
  let expectKey = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === "\"") {
      let j = i + 1
      while (j < text.length && text[j] !== "\"") j += text[j] === "\\" ? 2 : 1
      if (depth === 1 && expectKey) {
        const key: unknown = JSON.parse(text.slice(i, j + 1))
        if (typeof key === "string") {
          if (seen.has(key)) return key
          seen.add(key)
        }
        expectKey = false
      }
      i = j
    } else if (c === "{" || c === "[") {
      depth++
      expectKey = depth === 1 && c === "{"
    } else if (c === "}" || c === "]") depth--
    else if (c === "," && depth === 1) expectKey = true
  }
  return undefined
}

/** What a call's cost is read from: its token buckets (disjoint) and the provider's own charge. */
export interface Counts {
  /** Input tokens that were neither read from nor written to a cache. */
  readonly input?: number | undefined
  /** Output tokens (reasoning included). */
  readonly output?: number | undefined
  readonly cacheRead?: number | undefined
  /** Every cache write (those kept for an hour included). */
  readonly cacheWrite?: number | undefined
  /** The cache writes kept for an hour. */
  readonly cacheWrite1h?: number | undefined
  /** The provider's charge for the call in USD (`usage.cost`), when it reported one. */
  readonly providerUsd?: number | undefined
}

/** The cost of one call: how much, and whether the provider said so or the table priced it. */
export interface Cost {
  readonly femto: Femto
  readonly source: "estimated" | "provider_reported"
}

const tokens = (count: number | undefined): bigint | undefined =>
  count === undefined ? 0n : Number.isSafeInteger(count) && count >= 0 ? BigInt(count) : undefined

/**
 * The cost of a call of `model` with `counts` under `table`: the provider's finite, non-negative
 * charge when reported (zero included); else the table's rates times the token buckets (missing
 * cache counts are 0; writes not kept for an hour at `cache_write`, those kept at
 * `cache_write_1h`). Unknown (`undefined`) without a rate for the model, without input or output
 * counts, with more one-hour writes than writes, or with one-hour writes and no one-hour rate.
 */
export const costOf = (table: Table, model: string, counts: Counts): Cost | undefined => {
  const reported = counts.providerUsd
  if (reported !== undefined && Number.isFinite(reported) && reported >= 0) {
    return { femto: nanoRate(reported) * 10n ** 6n, source: "provider_reported" }
  }
  const rates = table.get(model)
  if (rates === undefined || counts.input === undefined || counts.output === undefined) return undefined
  const input = tokens(counts.input)
  const output = tokens(counts.output)
  const read = tokens(counts.cacheRead)
  const writes = tokens(counts.cacheWrite)
  const long = tokens(counts.cacheWrite1h)
  if (input === undefined || output === undefined || read === undefined || writes === undefined || long === undefined) {
    return undefined
  }
  if (long > writes || (long > 0n && rates.cacheWrite1h === undefined)) return undefined
  const femto = input * rates.input + output * rates.output + read * rates.cacheRead +
    (writes - long) * rates.cacheWrite + long * (rates.cacheWrite1h ?? 0n)
  return { femto, source: "estimated" }
}

/** Costs added up: what is known, and how many calls of each kind (an unknown one leaves the total unknown). */
export interface Totals {
  readonly knownFemto: Femto
  readonly unknownCalls: number
  readonly estimatedCalls: number
  readonly providerReportedCalls: number
}

/** No calls. */
export const noTotals: Totals = { knownFemto: 0n, unknownCalls: 0, estimatedCalls: 0, providerReportedCalls: 0 }

/**
 * `totals` with one more call of `cost` (`undefined`: an unpriced call). Written field by field:
 * it runs for every priced call, and an object spread over it was ~1% of a request's CPU.
 */
export const add = (totals: Totals, cost: Cost | undefined): Totals => {
  const known = cost !== undefined
  return {
    knownFemto: known ? totals.knownFemto + cost.femto : totals.knownFemto,
    unknownCalls: known ? totals.unknownCalls : totals.unknownCalls + 1,
    estimatedCalls: known && cost.source === "estimated" ? totals.estimatedCalls + 1 : totals.estimatedCalls,
    providerReportedCalls: known && cost.source !== "estimated"
      ? totals.providerReportedCalls + 1
      : totals.providerReportedCalls
  }
}

/** The whole total in USD, or `null` when any call was unpriced. */
export const totalUsd = (totals: Totals): number | null => totals.unknownCalls > 0 ? null : usd(totals.knownFemto)

/**
 * The cost buckets of a Chat usage (`OpenAiChat.Usage`, the form every call's usage takes inside
 * the router): input not read from or written to a cache (prompt − reads − writes; unknown when
 * negative), output, reads, writes (one-hour ones apart) and the provider's charge.
 */
export const countsOf = (usage: Usage): Counts => {
  const tokens = tokenCounts(usage)
  const input = tokens.prompt - tokens.cached - tokens.cacheCreation
  return {
    input: input < 0 ? undefined : input,
    output: tokens.completion,
    cacheRead: tokens.cached,
    cacheWrite: tokens.cacheCreation,
    cacheWrite1h: tokens.cacheCreation1h,
    providerUsd: usage.cost ?? undefined
  }
}

/**
 * The cost of one call of `model` that reported `usage` (none: the call failed, or answered
 * without a usage — unknown, never zero).
 */
export const costOfUsage = (table: Table, model: string, usage: Usage | null | undefined): Cost | undefined =>
  usage === null || usage === undefined ? undefined : costOf(table, model, countsOf(usage))

/**
 * What an answer would have cost at the route's baseline model `baseline` (see `Route.baseline`):
 * served by that model itself, the answer's own `answer` cost; otherwise an estimate — the table's
 * rates for `baseline` times the answer's token buckets (a provider's charge for the answer does
 * not carry over). Unknown without a usage, without a rate for `baseline`, or (served by it) when
 * the answer's own cost is.
 */
export const baselineCostOf = (
  table: Table,
  baseline: string,
  served: string,
  usage: Usage | null | undefined,
  answer: Cost | undefined
): Cost | undefined =>
  baseline === served
    ? answer
    : usage === null || usage === undefined
    ? undefined
    : costOf(table, baseline, { ...countsOf(usage), providerUsd: undefined })

/**
 * Savings against the baseline: `baseline` − `cost` (answer + routing), exactly, negative when
 * routing cost more than it saved; unknown (`undefined`) when any call of either is unpriced.
 */
export const savings = (baseline: Totals, cost: Totals): Femto | undefined =>
  baseline.unknownCalls > 0 || cost.unknownCalls > 0 ? undefined : baseline.knownFemto - cost.knownFemto

/**
 * Savings as the HTTP API reports them: `total_usd` the baseline's total minus the cost's (negative:
 * routing cost more than it saved), `null` once any call of either is unpriced; `unknown_calls` the
 * unpriced calls of both.
 */
export const SavingsJson = Schema.Struct({
  total_usd: Schema.NullOr(Schema.Number),
  unknown_calls: Schema.Number
})
export type SavingsJson = typeof SavingsJson.Type

/** {@link SavingsJson} of a baseline's and a cost's totals. */
export const savingsJson = (baseline: Totals, cost: Totals): SavingsJson => {
  const saved = savings(baseline, cost)
  return {
    total_usd: saved === undefined ? null : usd(saved),
    unknown_calls: baseline.unknownCalls + cost.unknownCalls
  }
}

/** A call's cost as the routing log writes it: `{usd, source}`, or `null` when unknown. */
export const CallCost = Schema.NullOr(Schema.Struct({
  usd: Schema.Number,
  source: Schema.Literal("estimated", "provider_reported")
}))
export type CallCost = typeof CallCost.Type

/** {@link CallCost} of a cost. */
export const callCost = (cost: Cost | undefined): CallCost =>
  cost === undefined ? null : { usd: usd(cost.femto), source: cost.source }

/**
 * Totals as the HTTP API reports them (`/v1/session-stats`, `/v1/stats`): `known_usd` the sum of
 * the known costs, `total_usd` the same or `null` once any counted call is unknown (0 with no
 * calls), and the calls of each kind.
 */
export const TotalsJson = Schema.Struct({
  known_usd: Schema.Number,
  total_usd: Schema.NullOr(Schema.Number),
  unknown_calls: Schema.Number,
  estimated_calls: Schema.Number,
  provider_reported_calls: Schema.Number
})
export type TotalsJson = typeof TotalsJson.Type

/** {@link TotalsJson} of totals. */
export const totalsJson = (totals: Totals): TotalsJson => ({
  known_usd: usd(totals.knownFemto),
  total_usd: totalUsd(totals),
  unknown_calls: totals.unknownCalls,
  estimated_calls: totals.estimatedCalls,
  provider_reported_calls: totals.providerReportedCalls
})

/** Two totals added up. */
export const sum = (a: Totals, b: Totals): Totals => ({
  knownFemto: a.knownFemto + b.knownFemto,
  unknownCalls: a.unknownCalls + b.unknownCalls,
  estimatedCalls: a.estimatedCalls + b.estimatedCalls,
  providerReportedCalls: a.providerReportedCalls + b.providerReportedCalls
})

/**
 * A USD amount's femto-dollars, read from its shortest decimal form (what a routing log line
 * holds), rounded half to even beyond 15 decimals: exact for any amount a line wrote from fewer
 * than 16 significant digits.
 */
export const femtoOfUsd = (amount: number): Femto => scaled(amount, 15)

/** The empty table: every model unpriced. */
export const emptyTable: Table = new Map()

/**
 * The pricing table in force, read synchronously by whatever prices a call (the `/v1/stats`
 * recorder, the server's routing log) and replaced as a whole (the server's `SIGHUP` reload): a call
 * is priced by the table current when it is recorded.
 */
export class Prices extends Context.Tag("@switchyard-ts/routing/Pricing/Prices")<Prices, {
  readonly current: () => Table
  readonly replace: (table: Table) => Effect.Effect<void>
}>() {}

/** A {@link Prices} holding `table` until replaced. */
export const makePrices = (table: Table): Prices["Type"] => {
  let current = table
  return Prices.of({
    current: () => current,
    replace: (next) =>
      Effect.sync(() => {
        current = next
      })
  })
}

/** {@link makePrices} as a layer (a fresh holder per build). */
export const layer = (table: Table): Layer.Layer<Prices> => Layer.sync(Prices, () => makePrices(table))

/**
 * The table reader of the provided {@link Prices}, or of the empty table without one (every call
 * unpriced): how the recorders that price calls find it without requiring it.
 */
export const currentTable: Effect.Effect<() => Table> = Effect.map(
  Effect.serviceOption(Prices),
  Option.match({ onNone: () => () => emptyTable, onSome: (prices) => prices.current })
)
