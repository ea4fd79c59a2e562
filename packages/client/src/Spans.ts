/**
 * Spans that cost nothing when tracing is off. `Effect.withSpan` with the tracer disabled still
 * builds a no-op span, its attributes and a copy of the fiber's context per call; these helpers
 * check the fiber's `currentTracerEnabled` first and leave the effect as it is when tracing is off
 * (the server turns it off when no span exporter is configured), reading it from the running fiber
 * in one step. With tracing on they are `Effect.withSpan` / `Effect.annotateSpans`, with the same
 * names and attributes.
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"

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
 * `Effect.annotateCurrentSpan(attributes())` when tracing is on; nothing when it is off. (Without a
 * span, `Effect.annotateCurrentSpan` fails internally with a `NoSuchElementException` — an `Error`
 * with its stack trace — and ignores it: a cost paid on every call.)
 */
export const annotateCurrentSpan = (attributes: () => Readonly<Record<string, unknown>>): Effect.Effect<void> =>
  Effect.withFiberRuntime((fiber) =>
    fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.annotateCurrentSpan(attributes()) : Effect.void
  )
