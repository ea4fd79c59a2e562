/**
 * `Pricing`: the pricing file's rules (each refused with the compatible system's message), the cost
 * of a call (the provider's charge first, else the table's rates over disjoint token buckets,
 * unknown where it cannot be priced), and exact arithmetic: totals are sums of integers.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Pricing from "@switchyard-ts/routing/Pricing"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"

const tableOf = (json: unknown) => Either.getOrThrow(Pricing.parse(JSON.stringify(json), "prices.json"))

const refused = (text: string) => {
  const result = Pricing.parse(text, "prices.json")
  return Either.isLeft(result) ? result.left.message : assert.fail(`accepted ${text}`)
}

const rates = { input: 1, output: 5, cache_read: 0.1, cache_write: 2, cache_write_1h: 3 }

describe("Pricing.parse", () => {
  it("reads model ids and rates, cache_write_1h optional", () => {
    const table = tableOf({ "m-1": rates, "m-2": { input: 0, output: 0, cache_read: 0, cache_write: 0 } })
    assert.deepStrictEqual(table.get("m-1"), {
      input: 1_000_000_000n,
      output: 5_000_000_000n,
      cacheRead: 100_000_000n,
      cacheWrite: 2_000_000_000n,
      cacheWrite1h: 3_000_000_000n
    })
    assert.strictEqual(table.get("m-2")?.cacheWrite1h, undefined)
    assert.strictEqual(table.size, 2)
  })

  it("refuses what is not a JSON object", () => {
    assert.match(refused("{"), /^invalid pricing file prices\.json: /)
    assert.strictEqual(refused("[]"), "invalid pricing file prices.json: expected a JSON object of model id to rates")
    assert.strictEqual(refused("3"), "invalid pricing file prices.json: expected a JSON object of model id to rates")
  })

  it("refuses a model id given twice, even with the same rates", () => {
    const entry = JSON.stringify(rates)
    assert.strictEqual(refused(`{"m": ${entry}, "n": ${entry}, "m": ${entry}}`), "duplicate pricing model \"m\"")
    // the same name nested deeper is no duplicate
    assert.isTrue(Either.isRight(Pricing.parse(`{"input": ${entry}, "m": ${entry}}`, "p")))
  })

  it("refuses empty or padded ids, rates outside 0..10000, missing, unknown or non-number fields, naming the key", () => {
    const message = (model: string, problem: string) =>
      `invalid pricing for model ${
        JSON.stringify(model)
      }: ${problem}; use a nonempty model ID and rates from 0 to 10000 USD per million tokens`
    assert.strictEqual(refused(JSON.stringify({ "": rates })), message("", "the model ID is empty"))
    assert.strictEqual(
      refused(JSON.stringify({ " m": rates })),
      message(" m", "the model ID has leading or trailing whitespace")
    )
    assert.strictEqual(
      refused(JSON.stringify({ m: { ...rates, input: -1 } })),
      message("m", "\"input\" must be from 0 to 10000")
    )
    assert.strictEqual(
      refused(JSON.stringify({ m: { ...rates, output: 10_000.5 } })),
      message("m", "\"output\" must be from 0 to 10000")
    )
    assert.strictEqual(
      refused(JSON.stringify({ m: { ...rates, cache_write_1h: 10_001 } })),
      message("m", "\"cache_write_1h\" must be from 0 to 10000")
    )
    assert.strictEqual(
      refused(JSON.stringify({ m: { input: 1, output: 1, cache_read: 1 } })),
      message("m", "missing \"cache_write\"")
    )
    assert.strictEqual(
      refused(JSON.stringify({ m: { ...rates, discount: 1 } })),
      message("m", "unknown field \"discount\"")
    )
    assert.strictEqual(
      refused(JSON.stringify({ m: { ...rates, input: "1" } })),
      message("m", "\"input\" must be a number")
    )
    assert.strictEqual(refused(JSON.stringify({ m: 3 })), message("m", "expected an object of rates"))
    // every problem of the entry, each with its key
    assert.strictEqual(
      refused(JSON.stringify({ m: { input: 1, discount: 1, cache_read: null, cache_write: 20_000 } })),
      message(
        "m",
        "unknown field \"discount\", missing \"output\", \"cache_read\" must be a number, \"cache_write\" must be from 0 to 10000"
      )
    )
    assert.isTrue(Either.isRight(Pricing.parse(JSON.stringify({ m: { ...rates, input: 10_000 } }), "p")))
  })
})

describe("Pricing.costOf", () => {
  const table = tableOf({ m: rates, free: { input: 0, output: 0, cache_read: 0, cache_write: 0 } })

  it("prices disjoint buckets: the compatible system's check gives 0.000172", () => {
    const cost = Pricing.costOf(table, "m", { input: 50, output: 10, cacheRead: 20, cacheWrite: 30, cacheWrite1h: 10 })
    assert.deepStrictEqual(cost, { femto: 172_000_000_000n, source: "estimated" })
    assert.strictEqual(Pricing.usd(cost?.femto ?? 0n), 0.000172)
  })

  it("the provider's charge wins, zero included; a bad one is ignored", () => {
    assert.deepStrictEqual(Pricing.costOf(table, "unpriced", { providerUsd: 0 }), {
      femto: 0n,
      source: "provider_reported"
    })
    assert.deepStrictEqual(Pricing.costOf(table, "m", { input: 1, output: 1, providerUsd: 0.0125 }), {
      femto: 12_500_000_000_000n,
      source: "provider_reported"
    })
    assert.strictEqual(Pricing.costOf(table, "m", { input: 1, output: 1, providerUsd: -1 })?.source, "estimated")
  })

  it("is unknown without a rate, without input or output, or with one-hour writes it cannot price", () => {
    assert.isUndefined(Pricing.costOf(table, "unpriced", { input: 1, output: 1 }))
    assert.isUndefined(Pricing.costOf(table, "m", { output: 1 }))
    assert.isUndefined(Pricing.costOf(table, "m", { input: 1 }))
    assert.isUndefined(Pricing.costOf(table, "m", { input: 1, output: 1, cacheWrite: 1, cacheWrite1h: 2 }))
    assert.isUndefined(Pricing.costOf(table, "free", { input: 1, output: 1, cacheWrite: 2, cacheWrite1h: 1 }))
    assert.deepStrictEqual(Pricing.costOf(table, "free", { input: 9, output: 9, cacheWrite: 2 }), {
      femto: 0n,
      source: "estimated"
    })
  })

  it("rates keep their decimals exactly (nine at most, half to even beyond)", () => {
    assert.strictEqual(Pricing.nanoRate(0.1), 100_000_000n)
    assert.strictEqual(Pricing.nanoRate(1e-9), 1n)
    assert.strictEqual(Pricing.nanoRate(2.5e-9), 2n)
    assert.strictEqual(Pricing.nanoRate(3.5e-9), 4n)
    assert.strictEqual(Pricing.nanoRate(1e21), 10n ** 30n)
    assert.strictEqual(Pricing.nanoRate(10_000), 10n ** 13n)
  })
})

describe("Pricing totals", () => {
  const rateArbitrary = FastCheck.integer({ min: 0, max: 10_000_000 }).map((n) => n / 1000)
  const countsArbitrary = FastCheck.record({
    input: FastCheck.integer({ min: 0, max: 2_000_000 }),
    output: FastCheck.integer({ min: 0, max: 200_000 }),
    cacheRead: FastCheck.integer({ min: 0, max: 2_000_000 })
  })

  it("adding costs is exact and does not depend on order: the sum of the calls = the call of the sums", () => {
    FastCheck.assert(
      FastCheck.property(
        FastCheck.tuple(rateArbitrary, rateArbitrary, rateArbitrary),
        FastCheck.array(countsArbitrary, { minLength: 1, maxLength: 40 }),
        ([input, output, read], calls) => {
          const table = tableOf({ m: { input, output, cache_read: read, cache_write: 0 } })
          const costs = calls.map((counts) => Pricing.costOf(table, "m", counts))
          const totals = costs.reduce(Pricing.add, Pricing.noTotals)
          const reversed = [...costs].reverse().reduce(Pricing.add, Pricing.noTotals)
          const summed = Pricing.costOf(table, "m", {
            input: calls.reduce((n, c) => n + c.input, 0),
            output: calls.reduce((n, c) => n + c.output, 0),
            cacheRead: calls.reduce((n, c) => n + c.cacheRead, 0)
          })
          assert.strictEqual(totals.knownFemto, summed?.femto)
          assert.deepStrictEqual(reversed, totals)
          assert.strictEqual(totals.estimatedCalls, calls.length)
        }
      )
    )
  })

  it("one unpriced call leaves the total unknown, the known part still counted", () => {
    const table = tableOf({ m: rates })
    const totals = [
      Pricing.costOf(table, "m", { input: 1_000_000, output: 0 }),
      Pricing.costOf(table, "other", { input: 1, output: 1 }),
      Pricing.costOf(table, "other", { providerUsd: 0.5 })
    ].reduce(Pricing.add, Pricing.noTotals)
    assert.deepStrictEqual(totals, {
      knownFemto: 1_500_000_000_000_000n,
      unknownCalls: 1,
      estimatedCalls: 1,
      providerReportedCalls: 1
    })
    assert.isNull(Pricing.totalUsd(totals))
    assert.strictEqual(Pricing.totalUsd(Pricing.noTotals), 0)
    assert.strictEqual(Pricing.usd(totals.knownFemto), 1.5)
  })
})

/** Femto-dollars of a decimal USD string. */
const femto = (decimal: string): bigint => Pricing.femtoOfUsd(Number(decimal))

describe("Pricing savings", () => {
  const table = tableOf({ weak: rates, strong: { input: 10, output: 50, cache_read: 1, cache_write: 20 } })
  const usage = {
    prompt_tokens: 100,
    completion_tokens: 10,
    total_tokens: 110,
    prompt_tokens_details: { cached_tokens: 20 },
    cost: 0.5
  }

  it("the baseline prices the answer's buckets at the baseline model; a provider's charge does not carry over", () => {
    const answer = Pricing.costOfUsage(table, "weak", usage)
    assert.deepStrictEqual(answer, { femto: Pricing.femtoOfUsd(0.5), source: "provider_reported" })
    // 80 × 10 + 20 × 1 + 10 × 50 = 1320 µ$
    assert.deepStrictEqual(Pricing.baselineCostOf(table, "strong", "weak", usage, answer), {
      femto: Pricing.femtoOfUsd(0.00132),
      source: "estimated"
    })
    // served by the baseline model itself: its own cost
    assert.strictEqual(Pricing.baselineCostOf(table, "weak", "weak", usage, answer), answer)
    assert.isUndefined(Pricing.baselineCostOf(table, "unpriced", "weak", usage, answer))
    assert.isUndefined(Pricing.baselineCostOf(table, "strong", "weak", undefined, undefined))
  })

  it("savings = baseline − cost, exact and possibly negative; unknown when either has an unpriced call", () => {
    const of = (...femtos: ReadonlyArray<bigint | undefined>) =>
      femtos.reduce(
        (totals: Pricing.Totals, femto) =>
          Pricing.add(totals, femto === undefined ? undefined : { femto, source: "estimated" }),
        Pricing.noTotals
      )
    assert.strictEqual(Pricing.savings(of(1500n), of(150n, 17n)), 1333n)
    assert.strictEqual(Pricing.savings(of(1500n), of(150n, 2500n)), -1150n)
    assert.isUndefined(Pricing.savings(of(1500n, undefined), of(150n)))
    assert.isUndefined(Pricing.savings(of(1500n), of(undefined)))
    assert.deepStrictEqual(Pricing.savingsJson(of(femto("0.0015")), of(femto("0.00265"))), {
      total_usd: -0.00115,
      unknown_calls: 0
    })
    assert.deepStrictEqual(Pricing.savingsJson(of(1n), of(undefined, undefined)), { total_usd: null, unknown_calls: 2 })
  })

  it("usd shows a negative amount exactly as the positive one, with its sign", () => {
    FastCheck.assert(FastCheck.property(FastCheck.bigInt({ min: 1n, max: 10n ** 20n }), (amount) => {
      assert.strictEqual(Pricing.usd(-amount), -Pricing.usd(amount))
    }))
    assert.strictEqual(Pricing.usd(-1n), -1e-15)
    assert.strictEqual(Pricing.usd(-1_150_000_000_000n), -0.00115)
  })
})
