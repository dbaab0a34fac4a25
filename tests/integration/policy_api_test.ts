/**
 * The per-Agent policy API [TL-9] on a real server: GET shows every tool of
 * the catalog with its effective decision and why; PUT replaces the rules
 * whole; each bad policy (a duplicate, past 64 rules, an allow inside a
 * platform deny, an invalid target or prefix) is a fixed 422 with nothing
 * changed — rules and audit as before; every change is audited.
 */
import { assert, assertEquals } from "../helpers/assert.ts";
import { codeOf } from "../helpers/agents_api.ts";
import { type RunHarness, startRunHarness } from "../helpers/runs.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

async function policy(h: RunHarness): Promise<Json> {
  const r = await h.api("GET", `/api/agents/${h.agent}/policy`);
  assertEquals(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

async function put(h: RunHarness, rules: unknown[]) {
  return await h.api("PUT", `/api/agents/${h.agent}/policy`, { rules });
}

function row(view: Json, tool: string): Json {
  const r = view.tools.find((t: Json) => t.tool === tool);
  assert(r, `no row for ${tool}`);
  return r;
}

Deno.test("the policy API shows, replaces, refuses and audits an Agent's rules", async (t) => {
  const ollama = await startFakeOllama();
  let h = await startRunHarness({ ollama });
  try {
    await t.step("by default every catalog tool shows its default, and why", async () => {
      const v = await policy(h);
      assertEquals(v.rules, []);
      assertEquals(v.rules_max, 64);
      assertEquals(v.audit, []);
      for (
        const id of [
          "file/stat",
          "file/read_text",
          "file/glob",
          "file/grep",
          "file/edit",
          "file/write",
          "exec/run",
          "exec/command",
          "exec/apply",
        ]
      ) {
        const r = row(v, id);
        assertEquals([r.decision, r.reason, r.why], [
          r.default_decision,
          "default",
          "catalog default",
        ]);
      }
      assertEquals(row(v, "file/read_text").decision, "allow");
      assertEquals(row(v, "file/write").decision, "ask");
      // The platform's own denies are listed, and shown on the tools they narrow.
      assert(v.platform.some((p: Json) => p.scope === "file/write under any .git/"));
      assertEquals(row(v, "file/write").scoped, [{
        scope: "file/write under any .git/",
        decision: "deny",
        reason: "platform deny",
        rule_index: null,
      }]);
    });

    const base = [
      { tool: "file/write", decision: "allow", path_prefix: "docs" },
      { tool: "file/read_text", decision: "deny" },
      { tool: "exec/command:git", decision: "allow" },
      { tool: "mcp/tools/*", decision: "deny" },
      { tool: "file/edit", decision: "deny", path_prefix: ".git" },
    ];

    await t.step("PUT replaces the rules and the view says what decides each tool", async () => {
      const r = await put(h, base);
      assertEquals(r.status, 200, JSON.stringify(r.body));
      assertEquals(r.body.rules, base);
      const v = await policy(h);
      assertEquals(v.rules, base);
      const read = row(v, "file/read_text");
      assertEquals([read.decision, read.reason, read.rule_index], ["deny", "Agent rule", 1]);
      assertEquals(read.why, "rule: file/read_text");
      const write = row(v, "file/write");
      assertEquals([write.decision, write.reason], ["ask", "default"]);
      assert(
        write.scoped.some((s: Json) =>
          s.scope === "file/write in docs/" && s.decision === "allow" && s.rule_index === 0
        ),
      );
      const git = row(v, "exec/command:git");
      assertEquals([git.kind, git.decision, git.reason, git.rule_index], [
        "command",
        "allow",
        "Agent rule",
        2,
      ]);
      const mcp = row(v, "mcp/tools/*");
      assertEquals([mcp.kind, mcp.decision], ["mcp_server", "deny"]);
      assertEquals(v.audit.length, 1);
      assertEquals(v.audit[0].source, "api");
      assertEquals(v.audit[0].added, base);
      assertEquals(v.audit[0].removed, []);
    });

    const refusals: [string, unknown[], string][] = [
      [
        "a duplicate (same tool and prefix)",
        [...base, { ...base[0], decision: "ask" }],
        "policy_duplicate_rule",
      ],
      [
        "a duplicate tool-wide rule",
        [...base, { tool: "file/read_text", decision: "deny" }],
        "policy_duplicate_rule",
      ],
      [
        "65 rules",
        Array.from({ length: 65 }, (_, i) => ({ tool: `exec/command:p${i}`, decision: "allow" })),
        // The gateway caps every JSON array at 64 items: past it is the generic 422.
        "schema_violation",
      ],
      ["an allow inside the platform's .git deny", [{
        tool: "file/write",
        decision: "allow",
        path_prefix: ".git/hooks",
      }], "policy_platform_deny"],
      ["an ask inside a nested .git", [{
        tool: "exec/apply",
        decision: "ask",
        path_prefix: "sub/.git",
      }], "policy_platform_deny"],
      ["an edit allow of .git itself", [{
        tool: "file/edit",
        decision: "allow",
        path_prefix: ".git",
      }], "policy_platform_deny"],
      ["an unknown tool", [{ tool: "file/nope", decision: "allow" }], "policy_invalid"],
      [
        "an argv0 with a slash",
        [{ tool: "exec/command:/bin/sh", decision: "allow" }],
        "policy_invalid",
      ],
      ["an argv0 of ..", [{ tool: "exec/command:..", decision: "allow" }], "policy_invalid"],
      ["a prefix that climbs out", [{
        tool: "file/write",
        decision: "allow",
        path_prefix: "docs/../..",
      }], "policy_invalid"],
      [
        "an absolute prefix",
        [{ tool: "file/write", decision: "allow", path_prefix: "/etc" }],
        "policy_invalid",
      ],
      ["a prefix with a trailing slash", [{
        tool: "file/write",
        decision: "allow",
        path_prefix: "docs/",
      }], "policy_invalid"],
      ["a prefix on a tool without paths", [{
        tool: "exec/command",
        decision: "allow",
        path_prefix: "docs",
      }], "policy_invalid"],
      ["a prefix on a program rule", [{
        tool: "exec/command:git",
        decision: "allow",
        path_prefix: "docs",
      }], "policy_invalid"],
      [
        "an unknown field",
        [{ tool: "file/write", decision: "allow", why: "x" }],
        "schema_violation",
      ],
      ["an unknown decision", [{ tool: "file/write", decision: "maybe" }], "schema_violation"],
    ];
    for (const [what, rules, code] of refusals) {
      await t.step(`${what} is ${code} with nothing changed`, async () => {
        const r = await put(h, rules);
        assertEquals(r.status, 422, JSON.stringify(r.body));
        assertEquals(codeOf(r), code);
        const v = await policy(h);
        assertEquals(v.rules, base);
        assertEquals(v.audit.length, 1);
      });
    }

    await t.step("a deny inside a platform deny is accepted (it relaxes nothing)", async () => {
      const v = await policy(h);
      assertEquals(v.rules[4], { tool: "file/edit", decision: "deny", path_prefix: ".git" });
    });

    await t.step("64 rules are accepted, and the change is audited", async () => {
      const rules = Array.from({ length: 64 }, (_, i) => ({
        tool: `exec/command:p${i}`,
        decision: "allow",
      }));
      const r = await put(h, rules);
      assertEquals(r.status, 200, JSON.stringify(r.body));
      const v = await policy(h);
      assertEquals(v.rules.length, 64);
      assertEquals(v.audit.length, 2);
      assertEquals(v.audit[0].added.length, 64);
      assertEquals(v.audit[0].removed, base);
    });

    await t.step("PUT {rules: []} clears the policy (audited)", async () => {
      assertEquals((await put(h, [])).status, 200);
      const v = await policy(h);
      assertEquals(v.rules, []);
      assertEquals(v.audit.length, 3);
      assertEquals(v.audit[0].added, []);
      assertEquals(v.audit[0].removed.length, 64);
    });

    await t.step("an unknown Agent is 404 and a PUT needs CSRF", async () => {
      const r = await h.api("GET", `/api/agents/${crypto.randomUUID()}/policy`);
      assertEquals(r.status, 404);
      const res = await fetch(`${h.server.url}/api/agents/${h.agent}/policy`, {
        method: "PUT",
        headers: { "content-type": "application/json", origin: h.server.origin },
        body: JSON.stringify({ rules: [{ tool: "file/write", decision: "allow" }] }),
      });
      await res.body?.cancel();
      assert(res.status === 401 || res.status === 403, String(res.status));
      assertEquals((await policy(h)).rules, []);
    });

    await t.step("the policy survives a restart", async () => {
      const rules = [{ tool: "file/write", decision: "allow", path_prefix: "docs" }];
      assertEquals((await put(h, rules)).status, 200);
      await h.server.stop();
      h = await startRunHarness({ ollama, home: h.server.home });
      assertEquals((await policy(h)).rules, rules);
      assertEquals((await policy(h)).audit.length, 4);
    });
  } finally {
    await h.close();
    await ollama.close();
  }
});
