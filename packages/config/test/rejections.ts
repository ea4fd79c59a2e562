/**
 * Load-error tests as tables: one test per row, each expecting `expectInvalid(text, path,
 * fragment)` (support.ts). A row states only what is particular to it — the document (or the one
 * key line or edit that makes it), the key path and the fragment of the message — so a file's
 * rows read as the load-error contract of its table.
 */
import { it } from "@effect/vitest"
import { type Env, expectInvalid } from "./support.js"

/** A load error a test expects: its name, the document, the key path and a fragment of the message. */
export type Rejection = readonly [name: string, text: string, path: string, fragment: string]

/** One test per rejection: `expectInvalid(text, path, fragment, env)`. */
export const each = (rejections: ReadonlyArray<Rejection>, env?: Env): void => {
  for (const [name, text, path, fragment] of rejections) {
    it.effect(name, () => expectInvalid(text, path, fragment, env))
  }
}

/**
 * {@link each} with key paths relative to the table at `table` (`""` names the table itself,
 * `"a.b"` the key `<table>.a.b`).
 */
export const at = (table: string) => (rejections: ReadonlyArray<Rejection>, env?: Env): void =>
  each(
    rejections.map(([name, text, key, fragment]) => [name, text, key === "" ? table : `${table}.${key}`, fragment]),
    env
  )

/** The key of a `key = value` line (of the first line of several). */
const keyOf = (line: string): string => line.slice(0, line.indexOf(" = "))

/** `line` with its key spelled as a path from the top level (`routes.r.key = value`). */
const spelled = (table: string, line: string): string => table === "" ? line : `${table}.${line}`

/** The path of the key of `line` in the table at `table` (`""`: the top level). */
const pathOf = (table: string, line: string): string => table === "" ? keyOf(line) : `${table}.${keyOf(line)}`

/**
 * A key line a table is given and the fragment of the message it is refused with; the key
 * reported is the line's own (its first).
 */
export type LineRejection = readonly [line: string, fragment: string]

/**
 * One test per row: the document `text(line)` fails to load at `<table>.<key of line>` (`table`
 * `""`: the top level) with a message containing `fragment`. The test is named after the line,
 * its key spelled as a path, and the fragment.
 */
export const lines =
  (table: string, text: (line: string) => string) => (rows: ReadonlyArray<LineRejection>, env?: Env): void =>
    each(
      rows.map(([line, fragment]): Rejection => [
        `${spelled(table, line.replaceAll("\n", "; "))}: ${fragment === "" ? "refused" : fragment}`,
        text(line),
        pathOf(table, line),
        fragment
      ]),
      env
    )

/**
 * A line of a document, what replaces it (`""` removes it) and the fragment of the message the
 * edited document is refused with; the key reported is the line's own.
 */
export type EditRejection = readonly [line: string, replacement: string, fragment: string]

/**
 * One test per row: `text` with its first `line` replaced fails to load at `<table>.<key of line>`
 * with a message containing `fragment`. The test is named after the edit, its key spelled as a
 * path, and the fragment.
 */
export const edits = (table: string, text: string) => (rows: ReadonlyArray<EditRejection>, env?: Env): void =>
  each(
    rows.map(([line, replacement, fragment]): Rejection => [
      `${replacement === "" ? `without ${spelled(table, line)}` : spelled(table, replacement)}: ${fragment}`,
      text.replace(line, replacement),
      pathOf(table, line),
      fragment
    ]),
    env
  )
