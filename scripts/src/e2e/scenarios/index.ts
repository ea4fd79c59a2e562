// Every scenario, in the order they run, and the ones that run only when named in --only.
import type { Scenario } from "../context.js"
import { CHAT_MODEL, MESSAGES_MODEL, RESPONSES_MODEL } from "../deployment.js"
import { autoScenario, compositeScenario, plainScenario, toolScenario } from "./claude.js"
import {
  codexAutoScenario,
  codexCatalogScenario,
  codexCompactScenario,
  codexPatchScenario,
  codexToolScenario,
  type Format
} from "./codex.js"
import { geminiAutoScenario, geminiPlainScenario, geminiToolScenario } from "./gemini.js"

const chat: Format = { target: "chat", api: "openai", path: "/v1/chat/completions", model: CHAT_MODEL }
const messages: Format = { target: "messages", api: "anthropic", path: "/v1/messages", model: MESSAGES_MODEL }
const responses: Format = { target: "responses", api: "responses", path: "/v1/responses", model: RESPONSES_MODEL }

export const SCENARIOS: ReadonlyArray<readonly [string, Scenario]> = [
  ["chat-plain", plainScenario("chat-plain", "e2e-chat", chat.path, chat.model)],
  ["chat-tool", toolScenario("chat-tool", "e2e-chat", chat.path, chat.model)],
  ["messages-plain", plainScenario("messages-plain", "e2e-messages", messages.path, messages.model)],
  ["messages-tool", toolScenario("messages-tool", "e2e-messages", messages.path, messages.model)],
  ["responses-plain", plainScenario("responses-plain", "e2e-responses", responses.path, responses.model)],
  ["responses-tool", toolScenario("responses-tool", "e2e-responses", responses.path, responses.model)],
  ["auto-turns", autoScenario],
  ["composite-tool", compositeScenario],
  ["codex-chat-tool", codexToolScenario("codex-chat-tool", "e2e-chat", chat)],
  ["codex-messages-tool", codexToolScenario("codex-messages-tool", "e2e-messages", messages)],
  ["codex-responses-tool", codexToolScenario("codex-responses-tool", "e2e-responses", responses)],
  ["codex-chat-patch", codexPatchScenario("codex-chat-patch", chat)],
  ["codex-messages-patch", codexPatchScenario("codex-messages-patch", messages)],
  ["codex-responses-patch", codexPatchScenario("codex-responses-patch", responses)],
  ["codex-auto-turns", codexAutoScenario],
  ["codex-compact", codexCompactScenario],
  ["gemini-chat-plain", geminiPlainScenario("gemini-chat-plain", "e2e-chat")],
  ["gemini-chat-tool", geminiToolScenario("gemini-chat-tool", "e2e-chat")],
  ["gemini-auto-turns", geminiAutoScenario],
  ["codex-catalog-plain", codexCatalogScenario]
]

/** Run only when named in --only. */
export const OPT_IN = new Set(["codex-catalog-plain"])
