import type * as DeploymentSpec from "@switchyard-ts/config/DeploymentSpec"
import type * as SessionsTable from "@switchyard-ts/config/SessionsTable"
import type * as AdvisorRoute from "@switchyard-ts/routing/AdvisorRoute"
import type * as AdvisorRouteTable from "@switchyard-ts/routing/AdvisorRouteTable"
import type * as CapabilityRoute from "@switchyard-ts/routing/CapabilityRoute"
import type * as CapabilityRouteTable from "@switchyard-ts/routing/CapabilityRouteTable"
import type * as ClassifierCascade from "@switchyard-ts/routing/ClassifierCascade"
import type * as CustomRoute from "@switchyard-ts/routing/CustomRoute"
import type * as CustomRouteTable from "@switchyard-ts/routing/CustomRouteTable"
import type * as EscalationRoute from "@switchyard-ts/routing/EscalationRoute"
import type * as EscalationRouteTable from "@switchyard-ts/routing/EscalationRouteTable"
import type * as Noop from "@switchyard-ts/routing/Noop"
import type * as NoopRouteTable from "@switchyard-ts/routing/NoopRouteTable"
import type * as Passthrough from "@switchyard-ts/routing/Passthrough"
import type * as PassthroughRouteTable from "@switchyard-ts/routing/PassthroughRouteTable"
import type * as Posture from "@switchyard-ts/routing/Posture"
import type * as RandomRoute from "@switchyard-ts/routing/RandomRoute"
import type * as RandomRouteTable from "@switchyard-ts/routing/RandomRouteTable"
import type * as SessionStore from "@switchyard-ts/routing/SessionStore"
import type * as StageRoute from "@switchyard-ts/routing/StageRoute"
import type * as StageRouteTable from "@switchyard-ts/routing/StageRouteTable"
import type * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import { describe, expectTypeOf, it } from "vitest"

describe("table specs are what the routes take", () => {
  it("each route spec is its route module's options", () => {
    expectTypeOf<NoopRouteTable.Spec>().toMatchTypeOf<Noop.Options>()
    expectTypeOf<PassthroughRouteTable.Spec>().toMatchTypeOf<Passthrough.Options>()
    expectTypeOf<RandomRouteTable.Spec>().toMatchTypeOf<RandomRoute.Options>()
    expectTypeOf<CapabilityRouteTable.Spec>().toMatchTypeOf<CapabilityRoute.Options>()
    expectTypeOf<CustomRouteTable.Spec>().toMatchTypeOf<CustomRoute.Options>()
    expectTypeOf<EscalationRouteTable.Spec>().toMatchTypeOf<EscalationRoute.Options>()
    expectTypeOf<StageRouteTable.Spec>().toMatchTypeOf<StageRoute.Options>()
    expectTypeOf<AdvisorRouteTable.Spec>().toMatchTypeOf<AdvisorRoute.Options>()
    expectTypeOf<SessionsTable.Spec>().toMatchTypeOf<SessionStore.MemoryOptions>()
  })

  it("every optional option is set, with the keys every route shares", () => {
    expectTypeOf<CapabilityRouteTable.Spec["judgeTimeoutMs"]>().toEqualTypeOf<Option.Option<number>>()
    expectTypeOf<CapabilityRouteTable.Spec["maxLateVerdicts"]>().toEqualTypeOf<number>()
    expectTypeOf<RandomRouteTable.Spec["seed"]>().toEqualTypeOf<Option.Option<bigint>>()
    expectTypeOf<AdvisorRouteTable.Spec["requestTimeoutMs"]>().toEqualTypeOf<Option.Option<number>>()
    expectTypeOf<StageRouteTable.Spec["classifier"]>().toEqualTypeOf<
      Option.Option<Required<StageRoute.ClassifierOptions>>
    >()
  })

  it("a schema's decoded type is the spec", () => {
    expectTypeOf<Schema.Schema.Type<ReturnType<typeof CapabilityRouteTable.schema>>>().toEqualTypeOf<
      DeploymentSpec.ClassifierRouteSpec
    >()
    expectTypeOf<Schema.Schema.Type<typeof SessionsTable.schema>>().toEqualTypeOf<DeploymentSpec.SessionsSpec>()
  })

  it("the posture and the trigger are routing's", () => {
    expectTypeOf<DeploymentSpec.JudgeFailurePosture>().toEqualTypeOf<Posture.Posture>()
    expectTypeOf<DeploymentSpec.ClassifyTrigger>().toEqualTypeOf<ClassifierCascade.ClassifyTrigger>()
    expectTypeOf<CapabilityRouteTable.Spec["judgeFailure"]>().toEqualTypeOf<Posture.Posture>()
  })
})
