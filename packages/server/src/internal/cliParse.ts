/**
 * Usage errors of the `switchyard` commands, and the parse of one command's arguments in process
 * (`Cli.parseCli`, `Cli.parseReplay`) through the same `@effect/cli` descriptor the command runs.
 *
 * @internal
 */
import * as CliConfig from "@effect/cli/CliConfig"
import type * as Command from "@effect/cli/Command"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import * as Directive from "@effect/cli/CommandDirective"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** A usage problem on the command line; `message` is what the command prints before exiting 2. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

/**
 * The flags of `command` parsed from `argv` (the arguments after the command's name), before its
 * handler's own checks. A parse problem, an argument left over, or a built-in option such as
 * `--help` (which only the running command acts on) is a `UsageError` ending with `usage`.
 */
export const parseWith = <Name extends string, R, E, A>(
  command: Command.Command<Name, R, E, A>,
  name: Name,
  argv: ReadonlyArray<string>,
  usage: string
): Effect.Effect<A, UsageError> =>
  Descriptor.parse(command.descriptor, [name, ...argv], CliConfig.defaultConfig).pipe(
    Effect.mapError((error) => new UsageError({ message: `${HelpDoc.toAnsiText(error.error).trim()}\n${usage}` })),
    Effect.flatMap((directive) => {
      if (!Directive.isUserDefined(directive)) return new UsageError({ message: usage })
      const [unknown] = directive.leftover
      return unknown === undefined
        ? Effect.succeed(directive.value)
        : new UsageError({ message: `Received unknown argument: '${unknown}'\n${usage}` })
    }),
    Effect.provide(NodeContext.layer)
  )
