/**
 * The routing rule of a Responses continuation by id: a request continuing an answer its route
 * recorded (`RoutedRequest.continuation`, set by the server from `ResponseState`) goes back to the
 * target that served that answer — the route's algorithm is not run (no judge call, no session
 * change, whatever the route type or trigger) and no target of another LLM client is tried after
 * it. The `Router` applies it before the route, so answer calls and `/v1/decision` decide alike.
 */
import type { Target } from "@switchyard-ts/client/Target"
import * as Option from "effect/Option"
import * as Decision from "../Decision.js"
import type { Route, RoutedRequest } from "../Route.js"

/** Fallbacks of a pinned target: the route's other targets on the same LLM client (the same provider). */
const sameClient = (route: Route, selected: Target): ReadonlyArray<Target> =>
  route.targets.filter((target) => target.name !== selected.name && target.client.name === selected.client.name)

/**
 * The decision for a request continuing a recorded answer on `route`: routed to the recorded
 * target (evidence `continuation`), falling back only to targets of its LLM client. None when the
 * request continues nothing or its target is no longer one of the route's (it is then routed as
 * any other request).
 */
export const decide = (route: Route, request: RoutedRequest): Option.Option<Decision.Routed> => {
  const pin = request.continuation
  if (pin === undefined) return Option.none()
  const selected = route.targets.find((target) => target.name === pin.target)
  if (selected === undefined) return Option.none()
  return Option.some(Decision.routed({
    route: { id: route.id, name: route.name, algorithm: route.algorithm },
    selected,
    fallbacks: sameClient(route, selected),
    evidence: { source: "continuation" }
  }))
}
