/**
 * `[targets.<name>]` (docs/configuration.md): which model (`id`) on which LLM client
 * (`llm_client`), with the `extra_body` fields added to requests that lack them, the
 * `reasoning_effort` every request is sent with (not on an `anthropic_messages` or
 * `gemini_generate_content` client) and the
 * `system_prompt` its answer calls are given.
 */
import type { LlmClient, Target } from "@switchyard-ts/client/Target"
import * as Table from "@switchyard-ts/routing/Table"
import { failAt, keysOf, toJsonTable, TomlString, TomlTable } from "@switchyard-ts/routing/Toml"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

/** What a target table's rules are given: its table name and the deployment's clients by table name. */
export interface Context {
  readonly name: string
  readonly clients: ReadonlyMap<string, LlmClient>
}

const keys = keysOf({
  id: TomlString,
  llm_client: TomlString,
  extra_body: Schema.optional(TomlTable),
  reasoning_effort: Schema.optional(TomlString),
  system_prompt: Schema.optional(TomlString)
})

/**
 * The target table: `llm_client` names a client table, then `extra_body` becomes JSON (integers
 * safe, floats finite, no TOML datetimes).
 */
export const table = Table.make(
  keys,
  (keys, context: Context): Effect.Effect<Target, ParseResult.ParseIssue> =>
    Effect.gen(function*() {
      const client = context.clients.get(keys.llm_client)
      if (client === undefined) {
        return yield* failAt(["llm_client"], `references unknown llm client ${JSON.stringify(keys.llm_client)}`)
      }
      const extraBody = keys.extra_body === undefined ? {} : yield* toJsonTable(keys.extra_body, ["extra_body"])
      const base = {
        name: context.name,
        id: keys.id,
        client,
        extraBody,
        ...(keys.system_prompt === undefined ? {} : { systemPrompt: keys.system_prompt })
      }
      const effort = keys.reasoning_effort
      if (effort === undefined) return base
      if (effort.trim() === "" || effort.trim() !== effort) {
        return yield* failAt(["reasoning_effort"], "must be a non-empty effort name without surrounding whitespace")
      }
      if (client.format === "anthropic_messages" || client.format === "gemini_generate_content") {
        return yield* failAt(
          ["reasoning_effort"],
          `is not supported on ${client.format} clients (llm client ${JSON.stringify(keys.llm_client)})`
        )
      }
      return { ...base, reasoningEffort: effort }
    })
)

/** Decodes the target table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: Context): Schema.Schema<Target, typeof keys.Encoded> => Table.schema(table, context)
