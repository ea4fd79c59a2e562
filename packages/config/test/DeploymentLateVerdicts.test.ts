/**
 * `late_verdict_ms` and `max_late_verdicts` on every classifier that runs through the classifier
 * cascade (capability and custom routes, a `subagents` classifier, a stage router's `[classifier]`):
 * values, defaults, and one test per rule with its key path. Escalation routes do not take them.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as Deployment from "@switchyard-ts/config/Deployment"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Rejections from "./rejections.js"
import { doc, expectInvalid, load, table, target } from "./support.js"

/** The judge and a second answer target (`weak` is in the base document). */
const targets = target("judge", "qwen3-30b", "hosted") + target("strong", "frontier-coder", "hosted")

/** A custom classifier's keys, on a route or in a `subagents` table. */
const customKeys = `mode = "custom"
classifier_target = "judge"
targets = ["weak", "strong"]
default_target = "strong"
prompt = "Answer with the target for this task."
response_schema = '{"type": "object", "properties": {"route": {"type": "string"}}, "required": ["route"]}'
policy = { type = "target_selector", selector = "/route" }`

/** A route table `[routes.<id>]` of `type` with `lines`, after the targets. */
const routeDoc = (id: string, lines: string, tail = "") =>
  doc({ more: [targets, table(`routes.${id}`, `id = "${id}"`, lines), tail].join("\n") })

const capability = (lines: string) =>
  routeDoc(
    "auto",
    `type = "llm_classifier"\nclassifier_target = "judge"\nweak_target = "weak"\nstrong_target = "strong"\nbase_threshold = 0.5\n${lines}`
  )

const custom = (lines: string) => routeDoc("auto", `type = "llm_classifier"\n${customKeys}\n${lines}`)

const stage = (lines: string) =>
  routeDoc(
    "stage",
    `type = "stage_router"\ncapable_target = "strong"\nefficient_target = "weak"\npicker = "efficient_first"\nconfidence_threshold = 0.5`,
    `[routes.stage.classifier]\ntarget = "judge"\nbase_threshold = 0.5\n${lines}`
  )

const escalation = (lines: string) =>
  routeDoc(
    "auto",
    `type = "llm_classifier"\nmode = "escalation"\nclassifier_target = "judge"\nweak_target = "weak"\nstrong_target = "strong"\n${lines}`,
    "[routes.auto.escalation]"
  )

const lateOf = (deployment: Deployment.Deployment, id: string) => {
  const route = deployment.routes.find((r) => r.id === id) ?? assert.fail(`no route ${id}`)
  if (route.type === "llm_classifier" && route.mode !== "escalation") {
    return { lateVerdictMs: route.lateVerdictMs, maxLateVerdicts: route.maxLateVerdicts }
  }
  if (route.type === "stage_router" && Option.isSome(route.classifier)) {
    return {
      lateVerdictMs: route.classifier.value.lateVerdictMs,
      maxLateVerdicts: route.classifier.value.maxLateVerdicts
    }
  }
  return assert.fail(`route ${id} has no cascade classifier`)
}

const enabled = "judge_failure = \"fail_open\"\njudge_timeout_ms = 1000"

const kinds = [
  { name: "capability route", text: capability, id: "auto", at: "routes.auto" },
  { name: "custom route", text: custom, id: "auto", at: "routes.auto" },
  { name: "stage router [classifier]", text: stage, id: "stage", at: "routes.stage.classifier" }
] as const

describe("DeploymentToml.parse: late_verdict_ms and max_late_verdicts", () => {
  for (const kind of kinds) {
    describe(kind.name, () => {
      it.effect("unset by default (max_late_verdicts 16)", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(lateOf(yield* load(kind.text(enabled)), kind.id), {
            lateVerdictMs: Option.none(),
            maxLateVerdicts: 16
          })
        }))

      it.effect("values when set; max_late_verdicts defaults to 16", () =>
        Effect.gen(function*() {
          assert.deepStrictEqual(lateOf(yield* load(kind.text(`${enabled}\nlate_verdict_ms = 4000`)), kind.id), {
            lateVerdictMs: Option.some(4000),
            maxLateVerdicts: 16
          })
          assert.deepStrictEqual(
            lateOf(yield* load(kind.text(`${enabled}\nlate_verdict_ms = 4000\nmax_late_verdicts = 3`)), kind.id),
            { lateVerdictMs: Option.some(4000), maxLateVerdicts: 3 }
          )
        }))

      it.effect("late_verdict_ms is a positive integer", () =>
        Effect.gen(function*() {
          yield* expectInvalid(
            kind.text(`${enabled}\nlate_verdict_ms = 0`),
            `${kind.at}.late_verdict_ms`,
            "must be a positive integer, got 0"
          )
          yield* expectInvalid(
            kind.text(`${enabled}\nlate_verdict_ms = "2s"`),
            `${kind.at}.late_verdict_ms`,
            "expected an integer, got string"
          )
        }))

      it.effect("late_verdict_ms requires judge_failure = \"fail_open\"", () =>
        Effect.gen(function*() {
          yield* expectInvalid(
            kind.text("judge_timeout_ms = 1000\nlate_verdict_ms = 500"),
            `${kind.at}.late_verdict_ms`,
            "requires judge_failure = \"fail_open\""
          )
          yield* expectInvalid(
            kind.text("judge_failure = \"error\"\njudge_timeout_ms = 1000\nlate_verdict_ms = 500"),
            `${kind.at}.late_verdict_ms`,
            "requires judge_failure = \"fail_open\""
          )
        }))

      Rejections.each([
        [
          "late_verdict_ms requires judge_timeout_ms",
          kind.text("judge_failure = \"fail_open\"\nlate_verdict_ms = 500"),
          `${kind.at}.late_verdict_ms`,
          "requires judge_timeout_ms"
        ],
        [
          "max_late_verdicts requires late_verdict_ms",
          kind.text(`${enabled}\nmax_late_verdicts = 4`),
          `${kind.at}.max_late_verdicts`,
          "max_late_verdicts requires late_verdict_ms"
        ]
      ])

      it.effect("max_late_verdicts is a positive integer", () =>
        Effect.gen(function*() {
          yield* expectInvalid(
            kind.text(`${enabled}\nlate_verdict_ms = 500\nmax_late_verdicts = 0`),
            `${kind.at}.max_late_verdicts`,
            "must be a positive integer, got 0"
          )
          yield* expectInvalid(
            kind.text(`${enabled}\nlate_verdict_ms = 500\nmax_late_verdicts = 1.5`),
            `${kind.at}.max_late_verdicts`,
            "expected an integer"
          )
        }))
    })
  }

  it.effect("a subagents classifier takes them too", () =>
    Effect.gen(function*() {
      const text = routeDoc(
        "pass",
        "type = \"passthrough\"\ntarget = \"strong\"",
        `[routes.pass.subagents]\ntype = "llm_classifier"\n${customKeys}\n${enabled}\nlate_verdict_ms = 700\nmax_late_verdicts = 2`
      )
      const route = (yield* load(text)).routes.find((r) => r.id === "pass")
      assert.isTrue(route?.type === "passthrough" && Option.isSome(route.subagents))
      if (route?.type === "passthrough" && Option.isSome(route.subagents)) {
        const subagents = route.subagents.value
        assert.strictEqual(subagents.type, "llm_classifier")
        if (subagents.type === "llm_classifier") {
          assert.deepStrictEqual(subagents.lateVerdictMs, Option.some(700))
          assert.strictEqual(subagents.maxLateVerdicts, 2)
        }
      }
      yield* expectInvalid(
        text.replace("late_verdict_ms = 700\n", ""),
        "routes.pass.subagents.max_late_verdicts",
        "max_late_verdicts requires late_verdict_ms"
      )
    }))

  it.effect("an escalation route does not take them (its judge reads a finished turn)", () =>
    expectInvalid(escalation(`${enabled}\nlate_verdict_ms = 500`), "routes.auto.late_verdict_ms", "unknown field"))
})
