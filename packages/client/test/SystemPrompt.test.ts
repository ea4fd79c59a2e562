/**
 * A target's `system_prompt` in the body of a call (`Wire.chatWire`): prepended to the caller's
 * instructions by the target's format — a Chat `system` message, a Messages `system` block,
 * Responses `instructions` — on answer calls (`completion: true`) only; a routing-only call to the
 * same target (a judge, a reviewer) never carries it. Translated and replayed bodies alike.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Wire from "../src/internal/wire.js"
import type { Format, NativeBody, Target } from "../src/Target.js"
import type { CallOptions } from "../src/UpstreamClient.js"
import { target } from "./support.js"

const record = (value: unknown): Record<string, unknown> => (Predicate.isRecord(value) ? value : {})

const prompted = (format: Format, systemPrompt = "Answer in French."): Target => {
  const base = target("a")
  return { ...base, client: { ...base.client, format }, systemPrompt }
}

/** The body `options` sends (buffered). */
const bodyOf = (options: CallOptions): Record<string, unknown> =>
  Either.match(Wire.chatWire(options, false), {
    onLeft: (error) => assert.fail(`unexpected ${error._tag}: ${error.message}`),
    onRight: (wire) => ({ ...wire.body })
  })

const chat = (messages: ReadonlyArray<unknown>) => ({ model: "route", messages })

const native = (format: Format, body: Record<string, unknown>): NativeBody => ({ format, body })

describe("a target's system_prompt", () => {
  it("Chat: a system message before the caller's messages, the caller's own system message kept after it", () => {
    const caller = chat([{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }])
    const body = bodyOf({ target: prompted("openai_chat"), body: caller, headers: {}, completion: true })
    assert.deepStrictEqual(body["messages"], [
      { role: "system", content: "Answer in French." },
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" }
    ])
    assert.strictEqual(caller.messages.length, 2)
  })

  it("is never sent on a call that is not an answer call (a judge or reviewer call to the same target)", () => {
    const caller = chat([{ role: "user", content: "hi" }])
    for (const format of ["openai_chat", "anthropic_messages", "openai_responses"] as const) {
      for (const completion of [false, undefined]) {
        const options: CallOptions = completion === undefined
          ? { target: prompted(format), body: caller, headers: {} }
          : { target: prompted(format), body: caller, headers: {}, completion }
        assert.notInclude(JSON.stringify(bodyOf(options)), "Answer in French.", `${format} ${completion}`)
      }
    }
  })

  it("a target without a prompt sends the caller's instructions as they came", () => {
    const caller = chat([{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }])
    const body = bodyOf({ target: target("a"), body: caller, headers: {}, completion: true })
    assert.deepStrictEqual(body["messages"], caller.messages)
  })

  it("Messages: the prompt as system when the caller has none, else a text block before the caller's system", () => {
    const messages = [{ role: "user", content: "hi" }]
    const send = (body: Record<string, unknown>) =>
      bodyOf({
        target: prompted("anthropic_messages"),
        body: chat(messages),
        native: native("anthropic_messages", { model: "route", max_tokens: 10, messages, ...body }),
        headers: {},
        completion: true
      })["system"]
    assert.strictEqual(send({}), "Answer in French.")
    assert.deepStrictEqual(send({ system: "Be brief." }), [
      { type: "text", text: "Answer in French." },
      { type: "text", text: "Be brief." }
    ])
    const cached = { type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }
    assert.deepStrictEqual(send({ system: [cached] }), [{ type: "text", text: "Answer in French." }, cached])
  })

  it("Messages from a Chat caller: the prompt first, then the caller's system message", () => {
    const caller = chat([{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }])
    const system = bodyOf({ target: prompted("anthropic_messages"), body: caller, headers: {}, completion: true })[
      "system"
    ]
    const texts = Array.isArray(system) ? system.map((block) => record(block)["text"]) : [system]
    assert.deepStrictEqual(texts, ["Answer in French.", "Be brief."])
  })

  it("Responses: instructions become the prompt, or the prompt, a blank line and the caller's instructions", () => {
    const send = (body: Record<string, unknown>) =>
      bodyOf({
        target: prompted("openai_responses"),
        body: chat([{ role: "user", content: "hi" }]),
        native: native("openai_responses", { model: "route", input: "hi", ...body }),
        headers: {},
        completion: true
      })["instructions"]
    assert.strictEqual(send({}), "Answer in French.")
    assert.strictEqual(send({ instructions: "Be brief." }), "Answer in French.\n\nBe brief.")
  })

  it("Responses from a Chat caller: the prompt as instructions, the caller's system message kept in the input", () => {
    const caller = chat([{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }])
    const body = bodyOf({ target: prompted("openai_responses"), body: caller, headers: {}, completion: true })
    assert.strictEqual(body["instructions"], "Answer in French.")
    assert.include(JSON.stringify(body["input"]), "Be brief.")
  })
})
