/**
 * The error of an invalid deployment file.
 */
import * as Schema from "effect/Schema"

/**
 * The deployment file is invalid. `path` is the TOML key path of the problem
 * (e.g. `llm_clients.hosted.max_retries`), and `message` starts with it.
 */
export class InvalidConfig extends Schema.TaggedError<InvalidConfig>()("InvalidConfig", {
  path: Schema.String,
  message: Schema.String
}) {}
