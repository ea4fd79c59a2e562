/**
 * `[targets.<name>]` (docs/configuration.md): which model (`id`) on which LLM client
 * (`llm_client`), with the `extra_body` fields added to requests that lack them.
 */
import type { LlmClient, Target } from "@switchyard-ts/client/Target"
import * as Effect from "effect/Effect"
import type * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Table from "./internal/table.js"
import { failAt, keysOf, toJsonTable, TomlString, TomlTable } from "./internal/toml.js"

/** What a target table's rules are given: its table name and the deployment's clients by table name. */
export interface Context {
  readonly name: string
  readonly clients: ReadonlyMap<string, LlmClient>
}

const keys = keysOf({
  id: TomlString,
  llm_client: TomlString,
  extra_body: Schema.optional(TomlTable)
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
      return { name: context.name, id: keys.id, client, extraBody }
    })
)

/** Decodes the target table named `context.name`; fails at the key path of its first problem. */
export const schema = (context: Context): Schema.Schema<Target, typeof keys.Encoded> => Table.schema(table, context)
