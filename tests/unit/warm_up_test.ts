import { assertEquals } from "../helpers/assert.ts";
import { warmUpKernel } from "../../runtime/kernel/warm_up.ts";

Deno.test("the Worker warm-up Turn passes every frame schema and completes through a tool call and an answer", async () => {
  assertEquals(await warmUpKernel(), true);
});
