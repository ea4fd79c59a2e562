/**
 * The capability threshold policy: a verdict's threshold grows with its capability boundary, and
 * `p_solve >= threshold` routes to the weak target (ties go weak), otherwise to the strong one.
 */
import type { Boundary, Verdict } from "../../judge/Verdict.js"

/** The two tiers of a capability route. */
export type Tier = "weak" | "strong"

/** Threshold steps per boundary: supported 0, uncertain and unmatched 1, unsupported 2. */
export const steps = (boundary: Boundary): number => boundary === "supported" ? 0 : boundary === "unsupported" ? 2 : 1

/** The threshold a verdict with `boundary` must reach. */
export const threshold = (boundary: Boundary, baseThreshold: number, thresholdStep: number): number =>
  baseThreshold + steps(boundary) * thresholdStep

/** The tier a verdict chooses, with the threshold it was held to. Ties (within float epsilon) go weak. */
export const choose = (
  verdict: Pick<Verdict, "p_solve" | "capability_boundary">,
  baseThreshold: number,
  thresholdStep: number
): { readonly tier: Tier; readonly threshold: number } => {
  const needed = threshold(verdict.capability_boundary, baseThreshold, thresholdStep)
  const weak = verdict.p_solve >= needed || Math.abs(needed - verdict.p_solve) <= Number.EPSILON
  return { tier: weak ? "weak" : "strong", threshold: needed }
}
