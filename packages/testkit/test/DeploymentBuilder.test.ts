/**
 * DeploymentBuilder: the exact text of each kind of value and table, and a deployment with every
 * route type that the real CLI (`--dry-run`) loads.
 */
import { assert, describe, it } from "@effect/vitest"
import { DeploymentBuilder as D, ServerProcess } from "@switchyard-ts/testkit"
import * as Effect from "effect/Effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"

describe("DeploymentBuilder.toToml", () => {
  it("writes schema_version, clients, targets and routes in order, one key a line", () => {
    const text = D.toToml({
      llm_clients: { sim: D.client("openai_chat", "http://127.0.0.1:1/v1", { max_retries: 0, timeout_ms: 3000 }) },
      targets: { weak: D.target("weak-model", "sim", { extra_body: { temperature: 0.5, top_k: 3 } }) },
      routes: { fast: D.passthrough("fast", "weak"), ping: D.noop("ping") }
    })
    assert.strictEqual(
      text,
      `schema_version = 1

[llm_clients.sim]
format = "openai_chat"
base_url = "http://127.0.0.1:1/v1"
max_retries = 0
timeout_ms = 3000

[targets.weak]
id = "weak-model"
llm_client = "sim"
extra_body = { temperature = 0.5, top_k = 3 }

[routes.fast]
id = "fast"
type = "passthrough"
target = "weak"

[routes.ping]
id = "ping"
type = "noop"
`
    )
  })

  it("escapes strings, quotes keys that cannot be bare, and spells numbers, arrays and inline tables", () => {
    const text = D.toToml({
      server: { api_keys_env: ["A", "B"], metrics_auth: true },
      sessions: { store: "memory", max_entries: 10 },
      llm_clients: {
        "the client": D.client("anthropic_messages", "http://h", {
          extra_headers: { "anthropic-beta": "a, b", "x.y": "q\"uote\\" },
          breaker: { failure_threshold: 2, cooldown_ms: 60000 }
        })
      },
      targets: { t: D.target("m", "the client") },
      routes: {
        mix: D.random("mix", ["t"], { weights: [1, 0.25], seed: 18446744073709551615n }),
        odd: D.custom("odd", {
          classifier_target: "t",
          targets: ["t"],
          default_target: "t",
          prompt: "line 1\nline 2\ttab \u007f",
          response_schema: "{\"type\": \"object\"}",
          policy: { type: "target_selector", selector: "/route" }
        })
      }
    })
    assert.include(text, "[server]\napi_keys_env = [\"A\", \"B\"]\nmetrics_auth = true\n")
    assert.include(text, "[sessions]\nstore = \"memory\"\nmax_entries = 10\n")
    assert.include(text, "[llm_clients.\"the client\"]\n")
    assert.include(text, "extra_headers = { anthropic-beta = \"a, b\", \"x.y\" = \"q\\\"uote\\\\\" }\n")
    assert.include(text, "breaker = { failure_threshold = 2, cooldown_ms = 60000 }\n")
    assert.include(text, "llm_client = \"the client\"\n")
    assert.include(text, "weights = [1, 0.25]\nseed = 18446744073709551615\n")
    assert.include(text, "prompt = \"line 1\\nline 2\\ttab \\u007f\"\n")
    assert.include(text, "response_schema = \"{\\\"type\\\": \\\"object\\\"}\"\n")
    assert.include(text, "policy = { type = \"target_selector\", selector = \"/route\" }\n")
  })

  it("writes a stage router's classifier and handoff notes, and subagents, as sub-sections", () => {
    const text = D.toToml({
      targets: {},
      routes: {
        stage: D.stageRouter("stage", {
          capable_target: "strong",
          efficient_target: "weak",
          picker: "efficient_first",
          confidence_threshold: 0.5,
          handoff_notes: { escalation_note: "NOTE" },
          classifier: { target: "judge", base_threshold: 0.5, judge_failure: "fail_open" },
          subagents: { type: "passthrough", target: "weak" }
        })
      }
    })
    assert.strictEqual(
      text,
      `schema_version = 1

[routes.stage]
id = "stage"
type = "stage_router"
capable_target = "strong"
efficient_target = "weak"
picker = "efficient_first"
confidence_threshold = 0.5

[routes.stage.handoff_notes]
escalation_note = "NOTE"

[routes.stage.classifier]
target = "judge"
base_threshold = 0.5
judge_failure = "fail_open"

[routes.stage.subagents]
type = "passthrough"
target = "weak"
`
    )
  })

  it("spells non-finite and negative-zero numbers as TOML does", () => {
    const text = D.toToml({
      targets: { t: D.target("m", "c", { extra_body: { a: NaN, b: Infinity, c: -0 } }) },
      routes: {}
    })
    assert.include(text, "extra_body = { a = nan, b = inf, c = -0.0 }")
  })
})

const allRouteTypes = (upstreamUrl: string): D.Deployment => ({
  server: { api_keys_env: "SWITCHYARD_TESTKIT_KEY" },
  sessions: { max_entries: 100, ttl_ms: 60000 },
  llm_clients: {
    sim: D.client("openai_chat", upstreamUrl, { max_retries: 0, breaker: { failure_threshold: 2, cooldown_ms: 1000 } }),
    judge: D.client("openai_chat", upstreamUrl, { max_retries: 0, timeout_ms: 3000 }),
    claude: D.client("anthropic_messages", upstreamUrl.replace(/\/v1$/, ""), { extra_headers: { "x-team": "t" } }),
    resp: D.client("openai_responses", upstreamUrl, { timeout_ms: 60000 })
  },
  targets: {
    weak: D.target("weak-model", "sim", { extra_body: { temperature: 0 } }),
    strong: D.target("strong-model", "claude"),
    judge: D.target("judge-model", "judge"),
    reviewer: D.target("reviewer-model", "resp")
  },
  routes: D.byId(
    D.noop("ping"),
    D.passthrough("fast", "weak", { context_window: 200000, tool_calling: true, request_timeout_ms: 60000 }),
    D.random("mix", ["weak", "strong"], { weights: [3, 1], seed: 7 }),
    D.capability("auto", {
      classifier_target: "judge",
      weak_target: "weak",
      strong_target: "strong",
      base_threshold: 0.7,
      threshold_step: 0.1,
      classify_trigger: "user_turn",
      recent_turn_window: 6,
      response_format_type: "json_object",
      max_output_tokens: 512,
      judge_failure: "fail_open",
      judge_timeout_ms: 1500,
      late_verdict_ms: 5000,
      max_late_verdicts: 4
    }),
    D.custom("pick", {
      classifier_target: "judge",
      targets: ["weak", "strong"],
      default_target: "strong",
      prompt: "Name the target.",
      response_schema:
        "{\"type\": \"object\", \"properties\": {\"route\": {\"type\": \"string\", \"enum\": [\"weak\", \"strong\"]}}, \"required\": [\"route\"], \"additionalProperties\": false}",
      policy: { type: "target_selector", selector: "/route" },
      classify_trigger: "new_session"
    }),
    D.escalation("esc", {
      mode: "escalation",
      classifier_target: "judge",
      weak_target: "weak",
      strong_target: "strong",
      escalation: { confirmations: 2, recent_turn_window: 10, window_message_chars: 400 },
      judge_failure: "error"
    }),
    D.stageRouter("stage", {
      capable_target: "strong",
      efficient_target: "weak",
      picker: "efficient_first",
      confidence_threshold: 0.5,
      capable_system_prompt: "CAPABLE",
      handoff_notes: { escalation_note: "NOTE", only_on_wrong_signal_escalation: false },
      classifier: { target: "judge", base_threshold: 0.5, classify_trigger: "new_session" },
      subagents: { type: "passthrough", target: "weak" }
    }),
    D.auto("preset", { capable_target: "strong", efficient_target: "weak" }),
    D.composite("combo", {
      judge_failure: "fail_open",
      classifier: { target: "judge", base_threshold: 0.5, classify_trigger: "user_turn" },
      stage: {
        capable_target: "strong",
        efficient_target: "weak",
        confidence_threshold: 0.5,
        capable_hold_turns: 1,
        tool_semantics: { observe: ["lookup"] }
      }
    }),
    D.passthrough("agents", "strong", {
      subagents: {
        type: "llm_classifier",
        mode: "custom",
        classifier_target: "judge",
        targets: ["weak", "strong"],
        default_target: "weak",
        prompt: "Pick.",
        response_schema: "{\"type\": \"object\", \"properties\": {\"route\": {\"type\": \"string\"}}}",
        policy: { type: "target_selector", selector: "/route" },
        judge_failure: "fail_open"
      }
    }),
    D.advisor("gated", {
      executor_target: "weak",
      advisor_target: "reviewer",
      gate_trigger: "pattern",
      gate_trigger_pattern: "\\bDONE\\b",
      max_reviews: 2,
      advisor_temperature: 0.5,
      fail_open: false
    })
  )
})

describe("DeploymentBuilder with the CLI", () => {
  it.scopedLive("a deployment with every route type and table loads (switchyard --dry-run)", () =>
    Effect.gen(function*() {
      const file = path.join(mkdtempSync(path.join(tmpdir(), "switchyard-testkit-")), "routes.toml")
      writeFileSync(file, D.toToml(allRouteTypes("http://127.0.0.1:1/v1")))
      const cli = yield* ServerProcess.spawn({
        args: ["--config", file, "--dry-run"],
        env: { SWITCHYARD_TESTKIT_KEY: "k" }
      })
      const exit = yield* cli.exited
      assert.strictEqual(cli.stderr().split("\n").filter((l) => !l.startsWith("warning") && l !== "").join("\n"), "")
      assert.deepStrictEqual(exit, { code: 0, signal: null })
      assert.strictEqual(
        cli.stdout(),
        "server OK: agents, auto, combo, esc, fast, gated, mix, pick, ping, preset, stage\n"
      )
    }))
})
