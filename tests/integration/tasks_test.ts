/**
 * Background Tasks through real Runs [EX-6]: a real server, real Workers, the
 * real runner sandbox and the scripted Ollama. `exec/command` with
 * `background: true` returns a task_id at once and the Task goes on after its
 * Run; a later Turn reads it with task/output and task/status and applies its
 * change set with exec/apply {task_id}; a third active Task of an Agent is
 * refused `task_limit` before any approval; cancel kills every process (a
 * setsid'd one included); the output spool keeps ≤ 1 MiB (the tail) and says
 * so; the wall limit ends a Task `timeout`; a server killed with a Task
 * running restarts with it `interrupted`, no process left and nothing re-run;
 * retention keeps the newest 128 finished Tasks and none older than 7 days.
 */
import { waitFor } from "../helpers/worker_procs.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { openAgentState } from "../helpers/agent_state.ts";
import {
  isTerminal,
  newConversation,
  readSse,
  type RunHarness,
  type SseFrame,
  startRunHarness,
  submit,
} from "../helpers/runs.ts";
import { readProcText } from "../../sandbox/procfs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { startFakeOllama } from "../../tools/fake_ollama/server.ts";
import {
  TASK_OUTPUT_MAX_BYTES,
  TASK_RETENTION_MS,
  TASKS_RETAINED_PER_AGENT,
} from "../../runtime/limits.ts";
import { exists } from "../helpers/home.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

function workspace(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

function taskRoot(h: RunHarness, taskId: string): string {
  return `${h.server.home}/.runtime/agents/${h.agent}/tasks/${taskId}`;
}

/** Runs one Turn to its terminal, approving every approval it asks; returns its frames. */
async function turn(h: RunHarness, conv: string, message: string): Promise<SseFrame[]> {
  const r = await submit(h, conv, message);
  assertEquals(r.status, 202, JSON.stringify(r.body));
  const decisions: Promise<unknown>[] = [];
  const frames = await readSse(h, r.body.run_id, {
    timeoutMs: 180_000,
    until: (f) => {
      if (f.event === "permission.requested") {
        decisions.push(
          h.api("POST", `/api/agents/${h.agent}/permissions/${f.data.payload.permission_id}`, {
            decision: "approve",
          }),
        );
      }
      return isTerminal(f);
    },
  });
  for (const d of await Promise.all(decisions) as { status: number }[]) {
    assertEquals(d.status, 200);
  }
  return frames;
}

function completed(frames: SseFrame[], callId: string): Json {
  const f = frames.find((f) =>
    f.event === "tool.call.completed" && f.data.payload.call_id === callId
  );
  assert(f, `no completion of ${callId}`);
  return f.data.payload;
}

function permissions(frames: SseFrame[]): Json[] {
  return frames.filter((f) => f.event === "permission.requested").map((f) => f.data.payload);
}

async function getTask(h: RunHarness, taskId: string): Promise<Json> {
  const r = await h.api("GET", `/api/agents/${h.agent}/tasks/${taskId}`);
  assertEquals(r.status, 200, JSON.stringify(r.body));
  return r.body.task;
}

/** Polls the Task's state (a wait on a state, not a sleep) until `ok`, ≤ timeoutMs. */
async function waitTask(
  h: RunHarness,
  taskId: string,
  ok: (t: Json) => boolean,
  timeoutMs = 120_000,
): Promise<Json> {
  let t: Json = null;
  await waitFor(
    `task ${taskId} state (last: ${JSON.stringify(t)})`,
    async () => ok(t = await getTask(h, taskId)),
    timeoutMs,
  );
  return t;
}

/** Pids whose command line is exactly `argv` (e.g. ["sleep", "3601"]). */
function pidsRunning(argv: string[]): number[] {
  const want = argv.join("\0");
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    const c = readProcText(`/proc/${e.name}/cmdline`);
    if (c !== null && c.replace(/\0$/, "") === want) out.push(Number(e.name));
  }
  return out;
}

const bg = (argv: string[], extra: Record<string, unknown> = {}) =>
  scenarios.toolCall([{
    name: "exec__command",
    arguments: { argv, background: true, ...extra },
  }]);

Deno.test("a background Task outlives its Run and a later Turn reads and applies it", async (t) => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    let taskId = "";
    await t.step("exec/command background:true returns a task_id at once", async () => {
      h.ollama.enqueue(
        bg([
          "sh",
          "-c",
          "echo started; while [ ! -f go ]; do sleep 0.1; done; echo built > out.txt; echo finished",
        ]),
        scenarios.text("Started it in the background."),
      );
      const frames = await turn(h, conv, "build in the background");
      assertEquals(frames.at(-1)!.event, "run.completed");
      const ask = permissions(frames);
      assertEquals(ask.length, 1);
      assert(ask[0].preview.includes("(background Task)"), ask[0].preview);
      const res = JSON.parse(completed(frames, "call-1").result);
      assertEquals(res.status, "running");
      assertEquals(res.read_with, ["task/status", "task/output"]);
      taskId = res.task_id;
      // The Run is over; the Task goes on and its output streams to its spool.
      const task = await waitTask(h, taskId, (x) => x.output_tail.includes("started"));
      assertEquals(task.status, "running");
      assertEquals(task.call_id, "call-1");
      assertEquals(task.conversation_id, conv);
      const list = await h.api("GET", `/api/agents/${h.agent}/tasks`);
      assertEquals(list.status, 200);
      assertEquals(list.body.active, 1);
      assertEquals(list.body.tasks.map((x: Json) => x.task_id), [taskId]);
    });

    await t.step("while it runs: task/status says so and exec/apply is task_running", async () => {
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "task__status", arguments: { task_id: taskId } }]),
        scenarios.toolCall([{ name: "exec__apply", arguments: { task_id: taskId } }]),
        scenarios.text("Still running."),
      );
      const frames = await turn(h, conv, "is it done?");
      const st = JSON.parse(completed(frames, "call-1").result);
      assertEquals([st.status, st.exit_code, st.changes], ["running", null, null]);
      assertEquals(completed(frames, "call-2").code, "task_running");
      assertEquals(permissions(frames), []);
    });

    await t.step("it finishes on its own scratch copy; the workspace is untouched", async () => {
      // The command waits for this file in ITS scratch copy (the workspace is not its).
      Deno.writeTextFileSync(`${taskRoot(h, taskId)}/exec/work/go`, "");
      const done = await waitTask(h, taskId, (x) => x.status !== "running");
      assertEquals(done.status, "exited");
      assertEquals(done.exit_code, 0);
      assert(done.output_tail.endsWith("finished\n"), done.output_tail);
      assertEquals(done.change_set.entries.filter((e: Json) => e.path === "out.txt"), [
        { path: "out.txt", kind: "added", note: null },
      ]);
      assertEquals(done.applicable, true);
      assert(!entries(workspace(h)).includes("out.txt"));
    });

    await t.step(
      "a later Turn reads it with task/output and task/status and applies it",
      async () => {
        h.ollama.enqueue(
          scenarios.toolCall([{ name: "task__output", arguments: { task_id: taskId } }]),
          scenarios.toolCall([{ name: "task__status", arguments: { task_id: taskId } }]),
          scenarios.toolCall([{
            name: "exec__apply",
            arguments: { task_id: taskId, paths: ["out.txt"] },
          }]),
          scenarios.toolCall([{ name: "task__status", arguments: { task_id: "nope" } }]),
          scenarios.text("Applied the task's change."),
        );
        const frames = await turn(h, conv, "what did the task print?");
        assertEquals(frames.at(-1)!.event, "run.completed");
        const out = JSON.parse(completed(frames, "call-1").result);
        assertEquals(out.status, "exited");
        assertEquals(out.output, "started\nfinished\n");
        assertEquals(out.earlier_bytes_omitted, 0);
        const st = JSON.parse(completed(frames, "call-2").result);
        assertEquals(st.exit_code, 0);
        assert(st.changes.paths.includes("A out.txt"), JSON.stringify(st));
        assertEquals(st.changes.apply_with, `exec/apply {"task_id": "${taskId}"}`);
        // Only the apply asked: the reads are allowed by default.
        const ask = permissions(frames);
        assertEquals(ask.map((p) => p.tool_id), ["exec/apply"]);
        assert(ask[0].preview.includes(`of Task ${taskId} call-1`), ask[0].preview);
        assert(ask[0].preview.includes("A out.txt"), ask[0].preview);
        const applied = JSON.parse(completed(frames, "call-3").result);
        assertEquals(applied.applied, 1, JSON.stringify(applied));
        assertEquals(Deno.readTextFileSync(`${workspace(h)}/out.txt`), "built\n");
        assert(!entries(workspace(h)).includes("go"));
        assertEquals(completed(frames, "call-4").code, "task_not_found");
        // The model saw the Task's output in its next request.
        const toolMsgs = h.ollama.chats.at(-1)!.body.messages.filter((m: Json) =>
          m.role === "tool"
        );
        assert(toolMsgs.some((m: Json) => m.content.includes("started\\nfinished")), "output seen");
      },
    );

    await t.step(
      "the Task routes: unknown ids are task_not_found; no query parameters",
      async () => {
        const base = `/api/agents/${h.agent}/tasks`;
        const code = async (method: string, path: string) => {
          const r = await h.api(method, path);
          return [r.status, r.body?.error?.code];
        };
        assertEquals(await code("GET", `${base}/not-a-task`), [404, "task_not_found"]);
        assertEquals(
          await code("GET", `${base}/99999999-9999-4999-8999-999999999999`),
          [404, "task_not_found"],
        );
        assertEquals(await code("GET", `${base}?x=1`), [422, "schema_violation"]);
        assertEquals(await code("POST", `${base}/${taskId}/cancel`), [409, "task_not_active"]);
      },
    );
  } finally {
    await h.close();
  }
});

function entries(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name);
}

Deno.test("a third active Task is refused task_limit and cancel kills every process", async (t) => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    const ids: string[] = [];
    await t.step("two run; the third is refused before any approval, nothing created", async () => {
      h.ollama.enqueue(
        bg(["sh", "-c", "setsid sleep 3601 & sleep 3602 & wait"]),
        bg(["sh", "-c", "setsid sleep 3603 & sleep 3604 & wait"]),
        bg(["sh", "-c", "sleep 3605"]),
        scenarios.text("Two run, the third was refused."),
      );
      const frames = await turn(h, conv, "three in the background");
      assertEquals(frames.at(-1)!.event, "run.completed");
      assertEquals(permissions(frames).length, 2);
      ids.push(JSON.parse(completed(frames, "call-1").result).task_id);
      ids.push(JSON.parse(completed(frames, "call-2").result).task_id);
      const third = completed(frames, "call-3");
      assertEquals(third.outcome, "error");
      assertEquals(third.code, "task_limit");
      const list = await h.api("GET", `/api/agents/${h.agent}/tasks`);
      assertEquals(list.body.tasks.length, 2);
      assertEquals(list.body.active, 2);
      assertEquals(list.body.active_max, 2);
      assertEquals(pidsRunning(["sleep", "3605"]), []);
    });

    await t.step("cancel ends the Task with every process, a setsid'd one included", async () => {
      await waitFor(
        "the first Task's processes",
        () =>
          pidsRunning(["sleep", "3601"]).length === 1 &&
          pidsRunning(["sleep", "3602"]).length === 1,
      );
      const c = await h.api("POST", `/api/agents/${h.agent}/tasks/${ids[0]}/cancel`);
      assertEquals(c.status, 200, JSON.stringify(c.body));
      assertEquals(c.body.task.status, "cancelled");
      // The answer comes after the runner proved release: nothing of it is left.
      assertEquals(pidsRunning(["sleep", "3601"]), []);
      assertEquals(pidsRunning(["sleep", "3602"]), []);
      const again = await h.api("POST", `/api/agents/${h.agent}/tasks/${ids[0]}/cancel`);
      assertEquals([again.status, again.body.error.code], [409, "task_not_active"]);
      // The other Task was not touched.
      assertEquals((await getTask(h, ids[1])).status, "running");
    });

    await t.step("with one slot free again, a new Task starts", async () => {
      h.ollama.enqueue(bg(["sh", "-c", "echo third"]), scenarios.text("ok"));
      const frames = await turn(h, conv, "one more");
      const id = JSON.parse(completed(frames, "call-1").result).task_id;
      const done = await waitTask(h, id, (x) => x.status !== "running");
      assertEquals([done.status, done.output_tail], ["exited", "third\n"]);
      const c = await h.api("POST", `/api/agents/${h.agent}/tasks/${ids[1]}/cancel`);
      assertEquals(c.body.task.status, "cancelled");
      assertEquals(pidsRunning(["sleep", "3603"]), []);
      assertEquals(pidsRunning(["sleep", "3604"]), []);
    });
  } finally {
    await h.close();
  }
});

Deno.test("a Task's output spool keeps 1 MiB whole and only the tail past it", async (t) => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    await t.step(
      "exactly 1 MiB is kept whole; one byte more keeps the tail and says so",
      async () => {
        h.ollama.enqueue(
          bg(["sh", "-c", `yes a | head -c ${TASK_OUTPUT_MAX_BYTES}`]),
          bg(["sh", "-c", `yes b | head -c ${TASK_OUTPUT_MAX_BYTES + 1}`]),
          scenarios.text("ok"),
        );
        const frames = await turn(h, conv, "print a lot");
        const at = JSON.parse(completed(frames, "call-1").result).task_id;
        const past = JSON.parse(completed(frames, "call-2").result).task_id;
        const a = await waitTask(h, at, (x) => x.status !== "running");
        assertEquals([a.status, a.output_bytes, a.output_omitted_bytes], [
          "exited",
          TASK_OUTPUT_MAX_BYTES,
          0,
        ]);
        assertEquals(Deno.statSync(`${taskRoot(h, at)}/output.log`).size, TASK_OUTPUT_MAX_BYTES);
        const b = await waitTask(h, past, (x) => x.status !== "running");
        assertEquals([b.status, b.output_bytes], ["exited", TASK_OUTPUT_MAX_BYTES + 1]);
        assert(b.output_omitted_bytes > 0, JSON.stringify(b.output_omitted_bytes));
        const size = Deno.statSync(`${taskRoot(h, past)}/output.log`).size;
        assert(size <= TASK_OUTPUT_MAX_BYTES, `${size}`);
        assertEquals(size + b.output_omitted_bytes, TASK_OUTPUT_MAX_BYTES + 1);
      },
    );

    await t.step("task/output shows the last lines and how many bytes came before", async () => {
      h.ollama.enqueue(bg(["seq", "1", "200000"]), scenarios.text("started"));
      const frames = await turn(h, conv, "count");
      const id = JSON.parse(completed(frames, "call-1").result).task_id;
      const done = await waitTask(h, id, (x) => x.status !== "running");
      // 1..200000, one per line: 1,288,895 bytes.
      assertEquals(done.output_bytes, 1_288_895);
      assert(done.output_tail.endsWith("199999\n200000\n"), done.output_tail.slice(-40));
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "task__output", arguments: { task_id: id } }]),
        scenarios.text("read"),
      );
      const f2 = await turn(h, conv, "show the end");
      const out = JSON.parse(completed(f2, "call-1").result);
      assert(out.output.endsWith("199999\n200000\n"), out.output.slice(-40));
      assert(out.earlier_bytes_omitted > 1_280_000, String(out.earlier_bytes_omitted));
      assert(
        out.output.startsWith(`[… ${out.earlier_bytes_omitted} earlier bytes omitted …]\n`),
        out.output.slice(0, 80),
      );
      assertEquals(out.spool_max_bytes, TASK_OUTPUT_MAX_BYTES);
    });
  } finally {
    await h.close();
  }
});

Deno.test("a Task past its wall limit ends timeout with nothing left", async () => {
  // The test entry lowers the 30-min wall to 5 s (the product has no such hook).
  const h = await startRunHarness({ env: { AGENT_BUILDER_TEST_TASK_WALL_MS: "5000" } });
  try {
    const conv = await newConversation(h);
    h.ollama.enqueue(bg(["sh", "-c", "echo waiting; sleep 3606"]), scenarios.text("ok"));
    const frames = await turn(h, conv, "wait forever");
    const res = JSON.parse(completed(frames, "call-1").result);
    assertEquals(res.timeout_s, 5);
    const done = await waitTask(h, res.task_id, (x) => x.status !== "running");
    assertEquals(done.status, "timeout");
    assertEquals(done.output_tail, "waiting\n");
    assertEquals(pidsRunning(["sleep", "3606"]), []);
  } finally {
    await h.close();
  }
});

Deno.test("a restart interrupts running Tasks, re-runs nothing and applies retention", async () => {
  const ollama = await startFakeOllama();
  try {
    const h = await startRunHarness({ ollama });
    const conv = await newConversation(h);
    h.ollama.enqueue(
      bg(["sh", "-c", "echo up; echo ran >> runs.txt; sleep 3607"]),
      scenarios.text("ok"),
    );
    const frames = await turn(h, conv, "long job");
    const id = JSON.parse(completed(frames, "call-1").result).task_id;
    await waitTask(h, id, (x) => x.output_tail === "up\n");
    await waitFor("the Task's sleep", () => pidsRunning(["sleep", "3607"]).length === 1);
    await h.server.kill();
    // The runner dies with the server (parent-death signal, PID namespace).
    await waitFor("no process of the Task", () => pidsRunning(["sleep", "3607"]).length === 0);

    // Seed 127 finished Tasks newer than the real one, and one older than 7 days.
    const db = openAgentState(h.server.home, h.agent);
    const t0 = (db.prepare("SELECT created_at FROM tasks WHERE id = ?").get(id) as {
      created_at: number;
    }).created_at;
    const ins = db.prepare(
      `INSERT INTO tasks (id, run_id, call_id, argv, cwd, timeout_s, status, exit_code,
         created_at, ended_at) VALUES (?, ?, 'call-1', '["true"]', '.', 60, 'exited', 0, ?, ?)`,
    );
    const seeded: string[] = [];
    for (let i = 0; i < TASKS_RETAINED_PER_AGENT - 1; i++) {
      const sid = `aaaaaaaa-0000-4000-8000-${String(i).padStart(12, "0")}`;
      seeded.push(sid);
      ins.run(sid, crypto.randomUUID(), t0 + 1 + i, t0 + 1 + i);
    }
    const old = "bbbbbbbb-0000-4000-8000-000000000000";
    const longAgo = Date.now() - TASK_RETENTION_MS - 60_000;
    ins.run(old, crypto.randomUUID(), longAgo, longAgo + 1000);
    db.close();

    const h2 = await startRunHarness({ ollama, home: h.server.home });
    try {
      const t = await getTask(h2, id);
      assertEquals(t.status, "interrupted");
      assertEquals([t.output_tail, t.output_bytes], ["up\n", 3]);
      // Nothing re-ran: no process, and its scratch copy is gone (only the spool stays).
      assertEquals(pidsRunning(["sleep", "3607"]), []);
      assertEquals(entries(taskRoot(h2, id)), ["output.log"]);
      let list = (await h2.api("GET", `/api/agents/${h2.agent}/tasks`)).body;
      assertEquals(list.active, 0);
      // 129 finished rows at start-up: the 7-day-old one went, the newest 128 stay.
      assertEquals(list.tasks.length, TASKS_RETAINED_PER_AGENT);
      let kept = new Set(list.tasks.map((x: Json) => x.task_id));
      assertEquals(kept.has(old), false);
      assertEquals(kept.has(id), true);

      // One more finished Task: the 129th — the oldest (the interrupted one) goes with its root.
      const conv2 = await newConversation(h2);
      h2.ollama.enqueue(bg(["true"]), scenarios.text("ok"));
      const f2 = await turn(h2, conv2, "one more");
      const id2 = JSON.parse(completed(f2, "call-1").result).task_id;
      await waitFor("the new Task's end and retention", () => !exists(taskRoot(h2, id)));
      const done = await getTask(h2, id2);
      assertEquals(done.status, "exited");
      list = (await h2.api("GET", `/api/agents/${h2.agent}/tasks`)).body;
      assertEquals(list.tasks.length, TASKS_RETAINED_PER_AGENT);
      kept = new Set(list.tasks.map((x: Json) => x.task_id));
      assertEquals([kept.has(id), kept.has(id2)], [false, true]);
      assertEquals(seeded.every((s) => kept.has(s)), true);
      const gone = await h2.api("GET", `/api/agents/${h2.agent}/tasks/${id}`);
      assertEquals(gone.status, 404);
    } finally {
      await h2.close();
    }
  } finally {
    await ollama.close();
  }
});

Deno.test("a fifth active Task in the server is tasks_busy; foreground commands still run", async () => {
  const h = await startRunHarness();
  try {
    const agentOf = async (name: string): Promise<RunHarness> => {
      const r = await h.api("POST", "/api/agents", { name });
      assertEquals(r.status, 201, JSON.stringify(r.body));
      return { ...h, agent: r.body.agent.id };
    };
    const a = h;
    const b = await agentOf("second");
    const c = await agentOf("third");
    const ids: [RunHarness, string][] = [];
    for (const [x, n] of [[a, 1], [b, 2]] as const) {
      const conv = await newConversation(x);
      h.ollama.enqueue(
        bg(["sh", "-c", `sleep 361${n}`]),
        bg(["sh", "-c", `sleep 362${n}`]),
        scenarios.text("two"),
      );
      const f = await turn(x, conv, "two in the background");
      for (const call of ["call-1", "call-2"]) {
        ids.push([x, JSON.parse(completed(f, call).result).task_id]);
      }
    }
    const conv = await newConversation(c);
    h.ollama.enqueue(
      bg(["sh", "-c", "sleep 3630"]),
      scenarios.toolCall([{ name: "exec__command", arguments: { argv: ["echo", "fg"] } }]),
      scenarios.text("refused, then ran in the foreground"),
    );
    const f = await turn(c, conv, "one more");
    assertEquals(completed(f, "call-1").code, "tasks_busy");
    assertEquals(permissions(f).length, 1);
    const fg = JSON.parse(completed(f, "call-2").result);
    assertEquals([fg.outcome, fg.exit_code, fg.stdout], ["exited", 0, "fg\n"]);
    assertEquals((await c.api("GET", `/api/agents/${c.agent}/tasks`)).body.tasks, []);
    for (const [x, id] of ids) {
      const r = await x.api("POST", `/api/agents/${x.agent}/tasks/${id}/cancel`);
      assertEquals([r.status, r.body.task.status], [200, "cancelled"]);
    }
    for (const n of ["3611", "3621", "3612", "3622", "3630"]) {
      assertEquals(pidsRunning(["sleep", n]), []);
    }
  } finally {
    await h.close();
  }
});

Deno.test("a graceful stop ends running Tasks interrupted with no process left", async () => {
  const ollama = await startFakeOllama();
  try {
    const h = await startRunHarness({ ollama });
    const conv = await newConversation(h);
    h.ollama.enqueue(bg(["sh", "-c", "echo on; sleep 3660"]), scenarios.text("ok"));
    const frames = await turn(h, conv, "long job");
    const id = JSON.parse(completed(frames, "call-1").result).task_id;
    await waitTask(h, id, (x) => x.output_tail === "on\n");
    await waitFor("the Task's sleep", () => pidsRunning(["sleep", "3660"]).length === 1);
    assertEquals(await h.server.stop(), 0);
    assertEquals(pidsRunning(["sleep", "3660"]), []);
    const h2 = await startRunHarness({ ollama, home: h.server.home });
    try {
      const t = await getTask(h2, id);
      assertEquals([t.status, t.output_tail, t.output_bytes], ["interrupted", "on\n", 3]);
      assertEquals(entries(taskRoot(h2, id)), ["output.log"]);
      assertEquals(pidsRunning(["sleep", "3660"]), []);
    } finally {
      await h2.close();
    }
  } finally {
    await ollama.close();
  }
});

Deno.test("deleting an Agent ends its running Tasks with every process", async () => {
  const h = await startRunHarness();
  try {
    const r = await h.api("POST", "/api/agents", { name: "doomed" });
    assertEquals(r.status, 201);
    const x: RunHarness = { ...h, agent: r.body.agent.id };
    const conv = await newConversation(x);
    h.ollama.enqueue(bg(["sh", "-c", "setsid sleep 3670 & sleep 3671"]), scenarios.text("ok"));
    const frames = await turn(x, conv, "long job");
    const id = JSON.parse(completed(frames, "call-1").result).task_id;
    await waitTask(x, id, (t) => t.status === "running");
    await waitFor(
      "the Task's sleeps",
      () =>
        pidsRunning(["sleep", "3670"]).length === 1 && pidsRunning(["sleep", "3671"]).length === 1,
    );
    const d = await h.api("DELETE", `/api/agents/${x.agent}`);
    assertEquals(d.status, 200, JSON.stringify(d.body));
    assertEquals(pidsRunning(["sleep", "3670"]), []);
    assertEquals(pidsRunning(["sleep", "3671"]), []);
    assertEquals(exists(`${h.server.home}/.runtime/agents/${x.agent}`), false);
  } finally {
    await h.close();
  }
});
