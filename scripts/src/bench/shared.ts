// What the bench and its mock upstream (two processes) agree on.
import * as Schema from "effect/Schema"

/** The judge model: the mock answers it with a valid capability verdict. */
export const JUDGE_MODEL = "bench-judge"
/** The stalled judge model: the mock never answers it. */
export const STALL_MODEL = "bench-judge-stall"
/** The slow judge model: the mock answers it with a valid verdict after {@link SLOW_JUDGE_MS}. */
export const SLOW_JUDGE_MODEL = "bench-judge-slow"
/** How long the slow judge takes. */
export const SLOW_JUDGE_MS = 2000

/** The agent rows' answer models start with this: the mock keeps their last request body. */
export const AGENT_MODEL_PREFIX = "bench-agent"
/** The mock holds requests on this model unanswered until the bench releases them. */
export const HOLD_MODEL = "bench-agent-hold"

/** The IPC message the mock sends its parent once it listens. */
export const Ready = Schema.Struct({ port: Schema.Int })
