/**
 * Spans that cost nothing when tracing is off. `Effect.withSpan` with the tracer disabled still
 * builds a no-op span, its attributes and a copy of the fiber's context per call; these helpers
 * check the fiber's `currentTracerEnabled` first and leave the effect as it is when tracing is off
 * (the server turns it off when no span exporter is configured), reading it from the running fiber
 * in one step. With tracing on they are `Effect.withSpan` / `Effect.annotateSpans`, with the same
 * names and attributes.
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Tracer from "effect/Tracer"

/** `Effect.withSpan(name, options())` when tracing is on; `self` itself when it is off. */
export const withSpan =
  (name: string, options: () => Tracer.SpanOptions) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(self, name, options()) : self
    )

/** `Effect.annotateSpans(attributes)` when tracing is on; `self` itself when it is off. */
export const annotateSpans =
  (attributes: Readonly<Record<string, unknown>>) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.annotateSpans(self, attributes) : self
    )

/**
 * Annotates the current span of `fiber` (the running one, from inside `Effect.withFiberRuntime`)
 * with `attributes()` when tracing is on, at once: what `Effect.annotateCurrentSpan` does (a span
 * that does not propagate is left alone, and without a span nothing happens), folded into a step
 * the caller already takes.
 */
export const unsafeAnnotateCurrentSpan = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  attributes: () => Readonly<Record<string, unknown>>
): void => {
  if (!fiber.getFiberRef(FiberRef.currentTracerEnabled)) return
  const span = fiber.currentSpan
  if (span === undefined || span._tag !== "Span" || Context.get(span.context, Tracer.DisablePropagation)) return
  const all = attributes()
  for (const key in all) span.attribute(key, all[key])
}

/**
 * `Effect.annotateCurrentSpan(attributes())` when tracing is on; nothing when it is off. (Without a
 * span, `Effect.annotateCurrentSpan` fails internally with a `NoSuchElementException` — an `Error`
 * with its stack trace — and ignores it: a cost paid on every call.)
 */
export const annotateCurrentSpan = (attributes: () => Readonly<Record<string, unknown>>): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) => {
    unsafeAnnotateCurrentSpan(fiber, attributes)
    return Effect.void
  })

/**
 * `onSuccess(fiber, a)` when `self` succeeds with `a`, `onFailure(fiber, e)` when it fails with `e`
 * (not on a defect or an interruption), at once, in the step that goes on after `self`: what
 * `Effect.tap` and `Effect.tapError` with synchronous effects do, in three runtime steps instead of
 * six or more. `fiber` is the running fiber (for {@link unsafeAnnotateCurrentSpan}).
 */
export const tapOutcome = <A, E>(
  onSuccess: (fiber: Fiber.RuntimeFiber<unknown, unknown>, a: A) => void,
  onFailure: (fiber: Fiber.RuntimeFiber<unknown, unknown>, e: E) => void
) =>
<R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) =>
    Effect.matchCauseEffect(self, {
      onFailure: (cause) => {
        const failed = Cause.failureOption(cause)
        if (failed._tag === "Some") onFailure(fiber, failed.value)
        return Effect.failCause(cause)
      },
      onSuccess: (a) => {
        onSuccess(fiber, a)
        return Effect.succeed(a)
      }
    })
  )

/**
 * The current span annotated with `success(a)` when `self` succeeds with `a`, and — given
 * `failure` — with `failure(e)` when it fails with `e` (not on a defect or an interruption):
 * `Effect.tap` / `Effect.tapError` with {@link annotateCurrentSpan}. When tracing is off, `self`
 * itself (one step).
 */
export const annotateOutcome =
  <A, E>(success: (a: A) => Readonly<Record<string, unknown>>, failure?: (e: E) => Readonly<Record<string, unknown>>) =>
  <R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    const annotated = tapOutcome<A, E>(
      (fiber, a) => unsafeAnnotateCurrentSpan(fiber, () => success(a)),
      (fiber, e) => {
        if (failure !== undefined) unsafeAnnotateCurrentSpan(fiber, () => failure(e))
      }
    )(self)
    return Effect.withFiberRuntime((fiber) => fiber.getFiberRef(FiberRef.currentTracerEnabled) ? annotated : self)
  }
