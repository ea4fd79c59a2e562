import type * as LlmClientTable from "@switchyard-ts/config/LlmClientTable"
import type * as CompositeRouteTable from "@switchyard-ts/routing/CompositeRouteTable"
import type * as RouteTypes from "@switchyard-ts/routing/RouteTypes"
import type * as D from "@switchyard-ts/testkit/DeploymentBuilder"
import { describe, expectTypeOf, it } from "vitest"

describe("the builder's types are the tables' keys", () => {
  it("an integer key takes a number or a bigint; a float key a number", () => {
    expectTypeOf<D.LlmClient["max_retries"]>().toEqualTypeOf<number | bigint | undefined>()
    expectTypeOf<D.Deescalation["strong_min_calls"]>().toEqualTypeOf<number | bigint>()
    expectTypeOf<D.CapabilityRoute["base_threshold"]>().toEqualTypeOf<number>()
    expectTypeOf<D.RandomRoute["weights"]>().toEqualTypeOf<ReadonlyArray<number> | undefined>()
  })

  it("a variant key takes its variants; an undecoded table any TOML value", () => {
    expectTypeOf<D.JudgeFailure>().toEqualTypeOf<"error" | "fail_open">()
    expectTypeOf<D.StageRouterRoute["picker"]>().toEqualTypeOf<"efficient_first" | "capable_first">()
    expectTypeOf<NonNullable<D.Target["extra_body"]>>().toEqualTypeOf<{ readonly [key: string]: D.TomlValue }>()
  })

  it("every key of a table is a key of the builder's type, and no other", () => {
    expectTypeOf<keyof D.LlmClient>().toEqualTypeOf<keyof typeof LlmClientTable.table.keys.Type>()
    expectTypeOf<keyof D.CompositeStage>().toEqualTypeOf<keyof typeof CompositeRouteTable.table.keys.Type["stage"]>()
    expectTypeOf<D.Route["type"]>().toEqualTypeOf<RouteTypes.TableType>()
  })
})
