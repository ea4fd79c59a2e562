// What the bench and its mock upstream (two processes) agree on.
import * as Schema from "effect/Schema"

/** The judge model: the mock answers it with a valid capability verdict. */
export const JUDGE_MODEL = "bench-judge"
/** The stalled judge model: the mock never answers it. */
export const STALL_MODEL = "bench-judge-stall"

/** The IPC message the mock sends its parent once it listens. */
export const Ready = Schema.Struct({ port: Schema.Int })
