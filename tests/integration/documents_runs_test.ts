/**
 * Documents and attachments through a real server [LC-4, UI-12]: files the
 * test makes (PDF, DOCX, HTML with scripts) are uploaded through the
 * attachments route, then a real Run — Worker, runner, scripted Ollama —
 * calls document/extract_text on the stored paths and the extracted text
 * reaches the model. Attachment names are sanitized and never overwrite;
 * 16 MiB is stored and one byte more is 413 with nothing stored; a symlinked
 * attachments directory is refused. The per-Agent setting: a Run admitted
 * while documents are off is not offered the tool, and turning them off
 * while a Run runs refuses its next call `documents_disabled`.
 */
import { waitFor } from "../helpers/worker_procs.ts";
import { assert, assertEquals } from "../helpers/assert.ts";
import { newConversation, readSse, type RunHarness, startRunHarness } from "../helpers/runs.ts";
import * as scenarios from "../../tools/fake_ollama/scenarios.ts";
import { HOSTILE_HTML, makeDocx, makePdf } from "../helpers/documents.ts";
import { DOCUMENT_MAX_BYTES } from "../../runtime/limits.ts";
import { rawRequest } from "../helpers/raw_http.ts";

function workspace(h: RunHarness): string {
  return `${h.server.home}/data/agents/${h.agent}/workspace`;
}

async function upload(
  h: RunHarness,
  conv: string,
  name: string,
  body: Uint8Array | string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const res = await fetch(`${h.server.url}/api/agents/${h.agent}/sessions/${conv}/attachments`, {
    method: "POST",
    headers: {
      ...h.session.headers(),
      "content-type": "application/octet-stream",
      "x-filename": encodeURIComponent(name),
      ...headers,
    },
    body: typeof body === "string" ? body : new Blob([body.slice()]),
  });
  return { status: res.status, body: await res.json() };
}

async function run(h: RunHarness, conv: string, message: string) {
  const r = await h.api("POST", `/api/agents/${h.agent}/sessions/${conv}/runs`, { message });
  assertEquals(r.status, 202);
  return r.body.run_id as string;
}

async function finished(h: RunHarness, runId: string) {
  return await readSse(h, runId, {
    until: (f) => f.event.startsWith("run.") && f.event !== "run.started",
    timeoutMs: 180_000,
  });
}

function completed(frames: { event: string; data: any }[], callId: string) {
  return frames.find((f) => f.event === "tool.call.completed" && f.data.payload.call_id === callId)!
    .data.payload;
}

function listAttachments(h: RunHarness): string[] {
  return [...Deno.readDirSync(`${workspace(h)}/attachments`)].map((e) => e.name).sort();
}

Deno.test("attached documents reach the model through document/extract_text", async (t) => {
  const h = await startRunHarness();
  try {
    const conv = await newConversation(h);
    await t.step("PDF, DOCX and HTML attachments are extracted in a real Run", async () => {
      const pdf = await upload(h, conv, "Q3 report.pdf", makePdf(["Revenue rose in Q3"]));
      assertEquals(pdf.status, 201);
      assertEquals(pdf.body.attachment.path, "attachments/Q3 report.pdf");
      const docx = await upload(h, conv, "memo.docx", makeDocx(["Ship on Friday"]));
      const page = await upload(h, conv, "page.html", HOSTILE_HTML);
      assertEquals([docx.status, page.status], [201, 201]);
      h.ollama.enqueue(
        scenarios.toolCall([
          { name: "document__extract_text", arguments: { path: pdf.body.attachment.path } },
          { name: "document__extract_text", arguments: { path: docx.body.attachment.path } },
          { name: "document__extract_text", arguments: { path: page.body.attachment.path } },
        ]),
        scenarios.text("Revenue rose, ship Friday, revenue grew 12 percent."),
      );
      const runId = await run(h, conv, "summarise the attachments");
      const frames = await finished(h, runId);
      assertEquals(frames.at(-1)!.event, "run.completed");
      const a = JSON.parse(completed(frames, "call-1").result);
      assertEquals([a.format, a.text, a.pages], ["pdf", "Revenue rose in Q3", 1]);
      const b = JSON.parse(completed(frames, "call-2").result);
      assertEquals([b.format, b.text], ["docx", "Ship on Friday"]);
      const c = JSON.parse(completed(frames, "call-3").result);
      assert(c.text.startsWith("# Quarterly report"), c.text);
      assert(!c.text.includes("alert") && !c.text.includes("script"), c.text);
      // What the model was sent next: the three tool results, text included.
      const tools = h.ollama.chats.at(-1)!.body.messages.filter((m: { role: string }) =>
        m.role === "tool"
      ).map((m: { content: string }) => m.content).join("\n");
      for (const s of ["Revenue rose in Q3", "Ship on Friday", "12 percent"]) {
        assert(tools.includes(s), s);
      }
      assert(
        h.ollama.chats.at(-2)!.body.tools.some((x: any) =>
          x.function.name === "document__extract_text"
        ),
      );
    });

    await t.step("names are sanitized and never overwrite", async () => {
      const cases: Array<[string, string]> = [
        ["../../etc/passwd", "_.._etc_passwd"],
        ["..", "attachment"],
        [".hidden.txt", "hidden.txt"],
        ["a\u0000b\u202e.txt", "a_b_.txt"],
        ["line\nbreak.md", "line_break.md"],
        ["memo.docx", "memo-2.docx"],
        ["memo.docx", "memo-3.docx"],
      ];
      for (const [raw, stored] of cases) {
        const r = await upload(h, conv, raw, "x");
        assertEquals([r.status, r.body.attachment?.name], [201, stored], raw);
      }
      // The first memo.docx is untouched.
      const first = Deno.readFileSync(`${workspace(h)}/attachments/memo.docx`);
      assertEquals(first.slice(0, 2), new Uint8Array([0x50, 0x4b]));
      const bad = await upload(h, conv, "x", "x", { "x-filename": "%E0%A4%A" });
      assertEquals([bad.status, bad.body.error.code], [422, "attachment_name_invalid"]);
    });

    await t.step("nothing appears under attachments/ until the upload is whole", async () => {
      const before = listAttachments(h);
      let more!: () => void;
      const gate = new Promise<void>((r) => (more = r));
      let sentFirst!: () => void;
      const first = new Promise<void>((r) => (sentFirst = r));
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          if (c.desiredSize === null) return;
          c.enqueue(new TextEncoder().encode("first half, "));
          sentFirst();
          await gate;
          c.enqueue(new TextEncoder().encode("second half"));
          c.close();
        },
      });
      const res = fetch(`${h.server.url}/api/agents/${h.agent}/sessions/${conv}/attachments`, {
        method: "POST",
        headers: { ...h.session.headers(), "x-filename": "halves.txt" },
        body,
      });
      await first;
      // The server holds the upload open as an unnamed file in attachments/ (O_TMPFILE:
      // `/proc/<pid>/fd` shows it deleted) — and the directory lists no name for it.
      const unnamed = () =>
        [...Deno.readDirSync(`/proc/${h.server.child.pid}/fd`)].some((e) => {
          try {
            return /\/attachments\/#\d+ \(deleted\)$/.test(
              Deno.readLinkSync(`/proc/${h.server.child.pid}/fd/${e.name}`),
            );
          } catch {
            return false; // closed meanwhile
          }
        });
      await waitFor("the upload opened its unnamed file", unnamed);
      assertEquals(listAttachments(h), before);
      more();
      const r = await res;
      assertEquals(r.status, 201);
      assertEquals((await r.json()).attachment.name, "halves.txt");
      assertEquals(listAttachments(h), [...before, "halves.txt"].sort());
      assertEquals(
        Deno.readTextFileSync(`${workspace(h)}/attachments/halves.txt`),
        "first half, second half",
      );
    });

    await t.step("16 MiB is stored; one byte more is 413 and nothing is stored", async () => {
      const before = listAttachments(h);
      const at = await upload(h, conv, "big.bin", new Uint8Array(DOCUMENT_MAX_BYTES));
      assertEquals([at.status, at.body.attachment.bytes], [201, DOCUMENT_MAX_BYTES]);
      assertEquals(Deno.statSync(`${workspace(h)}/attachments/big.bin`).size, DOCUMENT_MAX_BYTES);
      const path = `/api/agents/${h.agent}/sessions/${conv}/attachments`;
      const headers = (extra: [string, string][]) => [
        ...Object.entries(h.session.headers()).filter(([k]) => k !== "content-type"),
        ["x-filename", "bigger.bin"] as [string, string],
        ...extra,
      ];
      // Declared past the bound: refused before a byte is read.
      const past = await rawRequest(h.server.port, {
        method: "POST",
        path,
        headers: headers([["content-length", String(DOCUMENT_MAX_BYTES + 1)]]),
        body: new Uint8Array(DOCUMENT_MAX_BYTES + 1),
      });
      assertEquals([past.status, JSON.parse(past.body).error.code], [413, "body_too_large"]);
      // Streamed without a length (chunked, 17 × 1 MiB): cut at the bound, the temp removed.
      const MiB = 1024 * 1024;
      const chunk = new Uint8Array(MiB + 16);
      const head = new TextEncoder().encode(`${MiB.toString(16)}\r\n`);
      chunk.set(head);
      chunk.set(new TextEncoder().encode("\r\n"), head.length + MiB);
      const one = chunk.subarray(0, head.length + MiB + 2);
      const body = new Uint8Array(one.length * 17 + 5);
      for (let i = 0; i < 17; i++) body.set(one, i * one.length);
      body.set(new TextEncoder().encode("0\r\n\r\n"), one.length * 17);
      const streamed = await rawRequest(h.server.port, {
        method: "POST",
        path,
        headers: headers([["transfer-encoding", "chunked"]]),
        body,
      });
      assertEquals([streamed.status, JSON.parse(streamed.body).error.code], [
        413,
        "body_too_large",
      ]);
      assertEquals(listAttachments(h), [...before, "big.bin"].sort());
    });

    await t.step("a symlinked attachments directory is refused", async () => {
      const conv2 = await newConversation(h);
      Deno.renameSync(`${workspace(h)}/attachments`, `${workspace(h)}/kept`);
      const outside = Deno.makeTempDirSync();
      try {
        Deno.symlinkSync(outside, `${workspace(h)}/attachments`);
        const r = await upload(h, conv2, "a.txt", "x");
        assertEquals([r.status, r.body.error.code], [409, "attachments_dir_unsafe"]);
        assertEquals([...Deno.readDirSync(outside)], []);
      } finally {
        Deno.removeSync(`${workspace(h)}/attachments`);
        Deno.renameSync(`${workspace(h)}/kept`, `${workspace(h)}/attachments`);
        Deno.removeSync(outside, { recursive: true });
      }
      const missing = await h.api("POST", `/api/agents/${h.agent}/sessions/nope/attachments`, {});
      assertEquals(missing.status, 404);
    });
  } finally {
    await h.close();
  }
});

Deno.test("documents per Agent: the admission fence and a call after disabling", async (t) => {
  const h = await startRunHarness();
  const A = `/api/agents/${h.agent}`;
  try {
    Deno.writeTextFileSync(`${workspace(h)}/notes.md`, "# Notes\n", { mode: 0o600 });
    await t.step("a Run admitted while documents are off is not offered the tool", async () => {
      const off = await h.api("PATCH", A, { documents: false });
      assertEquals([off.status, off.body.agent.documents], [200, false]);
      const conv = await newConversation(h);
      h.ollama.enqueue(scenarios.text("Not offered."));
      const frames = await finished(h, await run(h, conv, "read notes"));
      assertEquals(frames.at(-1)!.event, "run.completed");
      const offered = (h.ollama.chats.at(-1)!.body.tools ?? []).map((x: any) => x.function.name);
      assert(offered.includes("file__read_text"), offered.join());
      assert(!offered.includes("document__extract_text"), offered.join());
    });

    await t.step("turning documents off during a Run refuses its next call", async () => {
      const on = await h.api("PATCH", A, { documents: true });
      assertEquals(on.body.agent.documents, true);
      const conv = await newConversation(h);
      h.ollama.enqueue(
        scenarios.toolCall([{ name: "file__read_text", arguments: { path: "notes.md" } }]),
        scenarios.toolCall([{
          name: "file__write",
          arguments: { path: "notes.md", content: "# Notes 2\n" },
        }]),
        scenarios.toolCall([{ name: "document__extract_text", arguments: { path: "notes.md" } }]),
        scenarios.text("Refused."),
      );
      const runId = await run(h, conv, "edit then read");
      const req = (await readSse(h, runId, {
        until: (f) => f.event === "permission.requested",
        timeoutMs: 60_000,
      })).at(-1)!;
      assertEquals((await h.api("PATCH", A, { documents: false })).status, 200);
      const d = await h.api("POST", `${A}/permissions/${req.data.payload.permission_id}`, {
        decision: "approve",
      });
      assertEquals(d.status, 200);
      const frames = await finished(h, runId);
      assertEquals(frames.at(-1)!.event, "run.completed");
      assertEquals(completed(frames, "call-3").code, "documents_disabled");
    });
  } finally {
    await h.close();
  }
});
