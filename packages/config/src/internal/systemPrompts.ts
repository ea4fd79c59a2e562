/**
 * The route-level rules of targets' `system_prompt` (docs/configuration.md): a prompt goes with a
 * model in the compatible system, so within one route two answer targets on one model id must agree
 * on their prompt, and a target whose routing-time answer call gets a prompt (an escalation's weak
 * target, an advisor's executor) must not share its model id with the route's routing-only target
 * (its judge, its advisor).
 */
import * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { RouteSpec } from "../DeploymentSpec.js"
import type { InvalidConfig } from "../InvalidConfig.js"
import { fail } from "./invalid.js"

/**
 * Fails when `route`'s answer targets map one model id to different `system_prompt` values
 * (`route <r> maps completion target aliases to model <id> with different system_prompt values`),
 * or when the target whose routing-time call may answer has a prompt and the model id of the
 * route's routing-only target (`route <r> cannot apply system_prompt to target <t>: model <id> is
 * also used by routing-only target <d>`). Both at the route's key path.
 */
export const check = (route: RouteSpec): Effect.Effect<void, InvalidConfig> => {
  const prompts = new Map<string, string | undefined>()
  const type = RouteTypes.of(route)
  for (const target of type.answerTargets) {
    if (prompts.has(target.id) && prompts.get(target.id) !== target.systemPrompt) {
      return fail(
        ["routes", route.name],
        `route ${route.name} maps completion target aliases to model ${target.id} with different system_prompt values`
      )
    }
    prompts.set(target.id, target.systemPrompt)
  }
  const answering = Option.getOrUndefined(type.routingAnswer)
  if (answering === undefined || answering.response.systemPrompt === undefined) return Effect.void
  const { dependency, response } = answering
  return response.id === dependency.id
    ? fail(
      ["routes", route.name],
      `route ${route.name} cannot apply system_prompt to target ${response.name}: ` +
        `model ${response.id} is also used by routing-only target ${dependency.name}`
    )
    : Effect.void
}
