// The e2e deployment: passthrough routes to an openai_chat, an anthropic_messages and an
// openai_responses target (`e2e-chat`, `e2e-messages`, `e2e-responses`), two llm_classifier routes
// whose judge is the same fake upstream (`e2e-auto`: a Chat judge; `e2e-auto-responses`: a Responses
// judge and weak target; `e2e-auto-gemini`: the Chat judge with `message_hash_fallback`, for
// Gemini CLI, which sends no session header), a composite route over the Chat and Messages targets with the Chat judge
// (`e2e-composite`), and a route named after a model of Codex's catalog (`gpt-5.5` by default)
// on the target a patch scenario tests.
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"

export const JUDGE_MODEL = "e2e-judge"
export const RESPONSES_JUDGE_MODEL = "e2e-judge-responses"
export const CHAT_MODEL = "e2e-chat-model"
export const MESSAGES_MODEL = "e2e-messages-model"
export const RESPONSES_MODEL = "e2e-responses-model"
export const JUDGES = [JUDGE_MODEL, RESPONSES_JUDGE_MODEL]
/**
 * The one model of Codex 0.171.0's bundled catalog whose requests carry their tools in `tools`
 * (apply_patch freeform); the newer ones put them in an `additional_tools` input item.
 */
export const CODEX_MODEL = "gpt-5.5"

/** The e2e targets a Codex catalog route may point at. */
export type E2eTarget = "chat" | "messages" | "responses"

/**
 * The deployment for the fake upstream at `upstream` (no `/v1`). The Codex catalog route `codexModel`
 * goes to `codexModelTarget` (a patch scenario starts a server of its own with it on its target).
 */
export const e2eDeployment = (
  upstream: string,
  codexModelTarget: E2eTarget = "chat",
  codexModel = CODEX_MODEL
): D.Deployment => {
  const client = (format: D.Format, base_url: string, timeout_ms: number) =>
    D.client(format, base_url, { max_retries: 0, timeout_ms })
  // weak = the Chat target, strong = the Messages target; the fake judge answers p_solve 0.9 (weak).
  // judge_failure = "error": a judge that cannot be consulted fails the turn instead of hiding.
  const auto = (id: string, classifier_target: string, weak_target: string, message_hash_fallback = false) =>
    D.capability(id, {
      classifier_target,
      weak_target,
      strong_target: "messages",
      base_threshold: 0.7,
      classify_trigger: "user_turn",
      judge_failure: "error",
      ...(message_hash_fallback ? { message_hash_fallback } : {})
    })
  return {
    llm_clients: {
      fake_chat: client("openai_chat", `${upstream}/v1`, 30000),
      fake_messages: client("anthropic_messages", upstream, 30000),
      fake_responses: client("openai_responses", `${upstream}/v1`, 30000),
      fake_judge: client("openai_chat", `${upstream}/v1`, 5000),
      fake_judge_responses: client("openai_responses", `${upstream}/v1`, 5000)
    },
    targets: {
      chat: D.target(CHAT_MODEL, "fake_chat"),
      messages: D.target(MESSAGES_MODEL, "fake_messages"),
      responses: D.target(RESPONSES_MODEL, "fake_responses"),
      judge: D.target(JUDGE_MODEL, "fake_judge"),
      judge_responses: D.target(RESPONSES_JUDGE_MODEL, "fake_judge_responses")
    },
    routes: {
      chat: D.passthrough("e2e-chat", "chat"),
      messages: D.passthrough("e2e-messages", "messages"),
      responses: D.passthrough("e2e-responses", "responses"),
      codex_model: D.passthrough(codexModel, codexModelTarget),
      auto: auto("e2e-auto", "judge", "chat"),
      // The same over Responses: the judge (asked buffered) and the weak target are openai_responses.
      auto_responses: auto("e2e-auto-responses", "judge_responses", "responses"),
      // Gemini CLI sends no session header: its requests are keyed by their first user message (its
      // session context, naming the workspace, and the first prompt), so a tool continuation keeps
      // the tier its user turn got.
      auto_gemini: auto("e2e-auto-gemini", "judge", "chat", true),
      // The stage router over the Chat (efficient) and Messages (capable) targets, the chat judge's
      // verdict (weak) setting the tier it falls open to, once per user turn.
      composite: D.composite("e2e-composite", {
        judge_failure: "error",
        classifier: { target: "judge", base_threshold: 0.7, classify_trigger: "user_turn" },
        stage: { capable_target: "messages", efficient_target: "chat", confidence_threshold: 0.5 }
      })
    }
  }
}

/** The deployment file's text, headed by where it comes from. */
export const e2eToml = (...args: Parameters<typeof e2eDeployment>): string =>
  `# Written by scripts/src/e2e/deployment.ts for one run.\n${D.toToml(e2eDeployment(...args))}`
