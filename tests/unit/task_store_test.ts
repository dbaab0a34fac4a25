/**
 * Task rows [EX-6] on a real migrated SQLite file: a Task leaves `running`
 * once (a finish after a restart's interruption changes nothing); restart
 * interrupts every running Task; retention keeps the newest 128 finished Tasks
 * and none older than 7 days, never a running one.
 */
import { assertEquals } from "../helpers/assert.ts";
import { AGENT_MIGRATIONS } from "../../migrations/agent/index.ts";
import { openDatabase } from "../../runtime/store/sqlite.ts";
import {
  finishTask,
  getTask,
  insertTask,
  interruptRunningTasks,
  listTasks,
  pruneTasks,
} from "../../runtime/store/task_store.ts";
import { TASK_RETENTION_MS, TASKS_RETAINED_PER_AGENT } from "../../runtime/limits.ts";

const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const RUN = "11111111-1111-4111-8111-111111111111";

function withDb(fn: (db: ReturnType<typeof openDatabase>) => void): void {
  const dir = Deno.makeTempDirSync();
  Deno.chmodSync(dir, 0o700);
  const db = openDatabase({ root: dir, relative: "state.sqlite", migrations: AGENT_MIGRATIONS });
  try {
    fn(db);
  } finally {
    db.close();
    Deno.removeSync(dir, { recursive: true });
  }
}

const add = (db: ReturnType<typeof openDatabase>, n: number, at: number) =>
  insertTask(db, {
    id: id(n),
    runId: RUN,
    conversationId: null,
    callId: "call-1",
    argv: ["true"],
    cwd: ".",
    timeoutS: 60,
    now: at,
  });

const end = (db: ReturnType<typeof openDatabase>, n: number, at: number) =>
  finishTask(db, id(n), {
    status: "exited",
    exitCode: 0,
    signal: null,
    errorCode: null,
    outputBytes: 0,
    outputOmitted: 0,
    result: null,
    changeSet: null,
    now: at,
  });

Deno.test("a Task leaves running once; restart interrupts what still runs", () => {
  withDb((db) => {
    add(db, 1, 1000);
    add(db, 2, 1001);
    assertEquals(end(db, 1, 2000), true);
    assertEquals(end(db, 1, 3000), false);
    assertEquals(interruptRunningTasks(db, 4000), [id(2)]);
    assertEquals(getTask(db, id(2))!.status, "interrupted");
    assertEquals(getTask(db, id(2))!.ended_at, 4000);
    // A late finish of an interrupted Task changes nothing.
    assertEquals(end(db, 2, 5000), false);
    assertEquals(getTask(db, id(2))!.status, "interrupted");
  });
});

Deno.test("retention: 128 finished Tasks stay, the 129th oldest goes; 7 days; running ones stay", () => {
  withDb((db) => {
    const now = 10 * TASK_RETENTION_MS;
    add(db, 0, now - 10); // running, oldest of all: never pruned
    for (let i = 1; i <= TASKS_RETAINED_PER_AGENT; i++) {
      add(db, i, now + i);
      end(db, i, now + i);
    }
    assertEquals(pruneTasks(db, now + 1000), []);
    add(db, 999, now + 999);
    end(db, 999, now + 999);
    assertEquals(pruneTasks(db, now + 1000), [id(1)]);
    assertEquals(listTasks(db).length, TASKS_RETAINED_PER_AGENT + 1);
    // Seven days after Task 2 ended it is still kept; one millisecond later it goes.
    assertEquals(pruneTasks(db, now + 2 + TASK_RETENTION_MS), []);
    assertEquals(pruneTasks(db, now + 3 + TASK_RETENTION_MS), [id(2)]);
    assertEquals(getTask(db, id(0))!.status, "running");
  });
});
