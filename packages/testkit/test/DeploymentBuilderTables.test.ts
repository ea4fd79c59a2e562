/**
 * The DeploymentBuilder takes every key of every table: for each table of a deployment — every
 * route type of the routing registry, the LLM clients, targets, `[sessions]` and `[server]` —
 * values of its keys, generated from the table's own Schema (`tableKeys.ts`), written with
 * `toToml`, read back by smol-toml as the loader reads (`integersAsBigInt`) and decoded by the
 * table's `keys` are the values written. A table that gains a key of a shape the builder cannot
 * write fails here.
 */
import { assert, describe, it } from "@effect/vitest"
import * as LlmClientTable from "@switchyard-ts/config/LlmClientTable"
import * as ServerTable from "@switchyard-ts/config/ServerTable"
import * as SessionsTable from "@switchyard-ts/config/SessionsTable"
import * as TargetTable from "@switchyard-ts/config/TargetTable"
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Toml from "smol-toml"
import * as TableKeys from "./tableKeys.js"

/** A table of the deployment: its `keys` Schema. */
interface Table {
  readonly keys: Schema.Schema.AnyNoContext
}

/**
 * Whether `u` holds keys of `table` (its decoded side) made of TOML values: then it is a value of
 * the builder's type for the table, which is that decoded side with TOML values where the table
 * leaves a value undecoded.
 */
const writable = <T extends Table>(table: T) => {
  const isKeys = Schema.is(Schema.typeSchema(table.keys))
  return (u: unknown): u is D.KeysOf<T> => isKeys(u) && TableKeys.isToml(u)
}

/** The value at `path` of a parsed document. */
const at = (document: unknown, path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>((value, key) => (Predicate.isRecord(value) ? value[key] : undefined), document)

/**
 * Writes `keys` with `write` (a deployment holding them at `path`), reads the text back and
 * decodes the table at `path` with `table.keys`: it must decode to `keys`.
 */
const readBack = <T extends Table>(
  table: T,
  path: ReadonlyArray<string>,
  keys: unknown,
  write: (keys: D.KeysOf<T>) => D.Deployment
) => {
  if (!writable(table)(keys)) return assert.fail(`generated keys that are not the table's: ${String(keys)}`)
  const text = D.toToml(write(keys))
  const document = Toml.parse(text, { integersAsBigInt: true })
  const decoded = ParseResult.decodeUnknownEither(table.keys)(at(document, path))
  if (Either.isLeft(decoded)) {
    return assert.fail(`${ParseResult.TreeFormatter.formatIssueSync(decoded.left)}\nin:\n${text}`)
  }
  assert.deepStrictEqual(decoded.right, keys, text)
}

const runs = { numRuns: 150 }

const formats = [
  "openai_chat",
  "openai_responses",
  "anthropic_messages",
  "gemini_generate_content"
] as const satisfies ReadonlyArray<D.Format>
// every format is listed: a format missing here makes this `true` a type error
const everyFormat: [Exclude<D.Format, (typeof formats)[number]>] extends [never] ? true : false = true

describe("DeploymentBuilder writes every key of every table", () => {
  it.each(RouteTypes.kinds)("the %s route table", (kind) => {
    const table = RouteTypes.routeTypes[kind].table
    FastCheck.assert(
      FastCheck.property(
        TableKeys.of(table.keys),
        (keys) => readBack(table, ["routes", "r"], keys, (route) => ({ targets: {}, routes: { r: route } }))
      ),
      runs
    )
  })

  it("the LLM client table", () => {
    assert.isTrue(everyFormat)
    FastCheck.assert(
      FastCheck.property(
        TableKeys.of(LlmClientTable.table.keys, { format: FastCheck.constantFrom(...formats) }),
        (keys) =>
          readBack(
            LlmClientTable.table,
            ["llm_clients", "c"],
            keys,
            (client) => ({ llm_clients: { c: client }, targets: {}, routes: {} })
          )
      ),
      runs
    )
  })

  it("the target table", () => {
    FastCheck.assert(
      FastCheck.property(
        TableKeys.of(TargetTable.table.keys),
        (keys) =>
          readBack(TargetTable.table, ["targets", "t"], keys, (target) => ({ targets: { t: target }, routes: {} }))
      ),
      runs
    )
  })

  it("the sessions table", () => {
    FastCheck.assert(
      FastCheck.property(
        TableKeys.of(SessionsTable.table.keys),
        (keys) =>
          readBack(SessionsTable.table, ["sessions"], keys, (sessions) => ({ sessions, targets: {}, routes: {} }))
      ),
      runs
    )
  })

  it("the server table", () => {
    FastCheck.assert(
      FastCheck.property(
        TableKeys.of(ServerTable.table.keys),
        (keys) => readBack(ServerTable.table, ["server"], keys, (server) => ({ server, targets: {}, routes: {} }))
      ),
      runs
    )
  })
})
