/**
 * Attachments in the composer [LC-4, UI-12]: a paperclip (file picker) and
 * drag-and-drop onto the composer, each file uploaded to
 * `POST …/sessions/<conv>/attachments` with a progress bar (XHR upload
 * progress — a streamed fetch upload needs HTTP/2), then referenced in the
 * draft as `Attached: attachments/<name>` so the sent message names the
 * stored path and the model can read or extract it.
 *
 *   const att = useAttachments(target, (path) => appendToDraft(path));
 *   <div ...${att.dropProps}> … <${AttachmentButton} att=${att} /> <${AttachmentList} att=${att} />
 *
 * What this file enforces: a file over 16 MiB is refused here without being
 * sent (the server refuses it too, 413); the request carries the session's
 * CSRF token and the name percent-encoded in `X-Filename`; the answer is
 * parsed with the shared schema (runtime/protocol/api.ts); at most 8 uploads
 * are listed (finished ones drop off first).
 */
import { html } from "htm/preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { Icon } from "./Icon.ts";
import { AttachmentResponse } from "../runtime/protocol/api.ts";
import { describeError } from "./lib/messages.ts";

/** Where uploads go: null while no Conversation is open. */
export interface AttachTarget {
  agentId: string;
  conversationId: string;
  /** The session's CSRF token (null: logged out). */
  csrf(): string | null;
}

/** The server's bound (runtime/limits.ts DOCUMENT_MAX_BYTES). */
export const ATTACHMENT_MAX_BYTES = 16 * 1024 * 1024;
const LISTED_MAX = 8;

export interface Upload {
  id: number;
  name: string;
  size: number;
  /** Bytes sent so far. */
  sent: number;
  state: "uploading" | "done" | "failed";
  /** The stored workspace path once done. */
  path: string | null;
  /** The fixed error code when it failed. */
  code: string | null;
}

/** The line a stored attachment adds to the draft. */
export function attachmentLine(path: string): string {
  return `Attached: ${path}`;
}

/** `draft` with the attachment line appended on its own line. */
export function withAttachment(draft: string, path: string): string {
  const line = attachmentLine(path);
  if (draft.trim() === "") return line;
  return draft.endsWith("\n") ? `${draft}${line}` : `${draft}\n${line}`;
}

/** Percent of an upload (0..100), from bytes sent. */
export function uploadPercent(u: Pick<Upload, "sent" | "size">): number {
  if (u.size === 0) return 100;
  return Math.min(100, Math.floor((u.sent / u.size) * 100));
}

function upload(
  t: AttachTarget,
  file: File,
  onProgress: (sent: number) => void,
): Promise<{ ok: true; path: string } | { ok: false; code: string }> {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    const e = encodeURIComponent;
    xhr.open(
      "POST",
      `/api/agents/${e(t.agentId)}/sessions/${e(t.conversationId)}/attachments`,
    );
    xhr.withCredentials = true;
    xhr.setRequestHeader("x-filename", e(file.name));
    xhr.setRequestHeader("content-type", "application/octet-stream");
    const csrf = t.csrf();
    if (csrf !== null) xhr.setRequestHeader("x-csrf-token", csrf);
    xhr.upload.onprogress = (ev) => onProgress(ev.loaded);
    xhr.onerror = () => resolve({ ok: false, code: "network_error" });
    xhr.onload = () => {
      let body: unknown = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = null;
      }
      if (xhr.status === 201) {
        const r = AttachmentResponse.safeParse(body);
        resolve(
          r.success ? { ok: true, path: r.data.attachment.path } : {
            ok: false,
            code: "unknown_error",
          },
        );
        return;
      }
      const code = (body as { error?: { code?: unknown } } | null)?.error?.code;
      resolve({ ok: false, code: typeof code === "string" ? code : `http_${xhr.status}` });
    };
    xhr.send(file);
  });
}

export interface Attachments {
  enabled: boolean;
  uploads: Upload[];
  dragging: boolean;
  start(files: Iterable<File>): void;
  dismiss(id: number): void;
  /** Drops the finished and failed entries (the message naming them was sent). */
  clearFinished(): void;
  dropProps: Record<string, (e: DragEvent) => void>;
}

const hasFiles = (e: DragEvent) => [...(e.dataTransfer?.types ?? [])].includes("Files");

/** Upload state of one composer; `onStored` gets each stored path. */
export function useAttachments(
  target: AttachTarget | null,
  onStored: (path: string) => void,
): Attachments {
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [dragging, setDragging] = useState(false);
  const next = useRef(1);
  const stored = useRef(onStored);
  stored.current = onStored;
  // A file dropped beside the composer must not make the browser open it (leaving the app).
  useEffect(() => {
    if (target === null) return;
    const guard = (e: DragEvent) => {
      if (hasFiles(e)) e.preventDefault();
    };
    addEventListener("dragover", guard);
    addEventListener("drop", guard);
    return () => {
      removeEventListener("dragover", guard);
      removeEventListener("drop", guard);
    };
  }, [target === null]);
  // Another Conversation: the finished uploads of the last one are not shown here.
  useEffect(() => {
    setUploads((us) => us.filter((u) => u.state === "uploading"));
  }, [target?.agentId, target?.conversationId]);
  const patch = (id: number, p: Partial<Upload>) =>
    setUploads((us) => us.map((u) => (u.id === id ? { ...u, ...p } : u)));

  const start = useCallback((files: Iterable<File>) => {
    if (target === null) return;
    for (const file of files) {
      const id = next.current++;
      const u: Upload = {
        id,
        name: file.name,
        size: file.size,
        sent: 0,
        state: "uploading",
        path: null,
        code: null,
      };
      setUploads((us) => {
        const kept = [...us, u];
        while (kept.length > LISTED_MAX) {
          const i = kept.findIndex((x) => x.state !== "uploading");
          kept.splice(i < 0 ? 0 : i, 1);
        }
        return kept;
      });
      if (file.size > ATTACHMENT_MAX_BYTES) {
        patch(id, { state: "failed", code: "body_too_large" });
        continue;
      }
      upload(target, file, (sent) => patch(id, { sent })).then((r) => {
        if (r.ok) {
          patch(id, { state: "done", sent: file.size, path: r.path });
          stored.current(r.path);
        } else patch(id, { state: "failed", code: r.code });
      });
    }
  }, [target?.agentId, target?.conversationId]);

  const dropProps = {
    onDragOver: (e: DragEvent) => {
      if (target === null || !hasFiles(e)) return;
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = "copy";
      setDragging(true);
    },
    onDragLeave: (e: DragEvent) => {
      const to = e.relatedTarget as Node | null;
      if (to === null || !(e.currentTarget as HTMLElement).contains(to)) setDragging(false);
    },
    onDrop: (e: DragEvent) => {
      if (target === null || !hasFiles(e)) return;
      e.preventDefault();
      setDragging(false);
      start(e.dataTransfer?.files ?? []);
    },
  };

  return {
    enabled: target !== null,
    uploads,
    dragging,
    start,
    dismiss: (id) => setUploads((us) => us.filter((u) => u.id !== id)),
    clearFinished: () => setUploads((us) => us.filter((u) => u.state === "uploading")),
    dropProps,
  };
}

/** The paperclip: opens the file picker. */
export function AttachmentButton({ att }: { att: Attachments }) {
  const input = useRef<HTMLInputElement>(null);
  if (!att.enabled) return null;
  return html`
    <button type="button" class="icon-btn" aria-label="Attach files" data-testid="attach"
      title="Attach files (or drop them on the composer)"
      onClick=${() => input.current?.click()}><${Icon} name="clip" /></button>
    <input ref=${input} type="file" multiple hidden aria-label="Files to attach"
      data-testid="attach-input" onChange=${(e: Event) => {
        const el = e.target as HTMLInputElement;
        att.start([...(el.files ?? [])]);
        el.value = "";
      }} />
  `;
}

/** The uploads of this composer: name, progress, stored path or the refusal. */
export function AttachmentList({ att }: { att: Attachments }) {
  if (att.uploads.length === 0) return null;
  return html`
    <ul class="attachments" aria-label="Attachments" data-testid="attachments">
      ${att.uploads.map((u) => {
        const pct = uploadPercent(u);
        return html`
          <li class=${`attachment attachment-${u.state}`} data-testid="attachment"
            data-state=${u.state}>
            <${Icon} name="clip" />
            <span class="attachment-name">${u.name}</span>
            ${u.state === "uploading" && html`
              <progress max="100" value=${pct} aria-label=${`Uploading ${u.name}`}
                data-testid="attachment-progress"></progress>
              <span class="attachment-pct">${pct} %</span>
            `}
            ${u.state === "done" && html`<code class="attachment-path">${u.path}</code>`}
            ${u.state === "failed" && html`
              <span class="error-text" role="alert" title=${u.code ?? ""}>${u.code ===
                  "body_too_large"
                ? "over 16 MiB"
                : `${describeError(u.code ?? "")} (${u.code})`}</span>
            `}
            ${u.state !== "uploading" && html`
              <button type="button" class="icon-btn icon-btn-sm" aria-label=${`Dismiss ${u.name}`}
                onClick=${() => att.dismiss(u.id)}><${Icon} name="close" /></button>
            `}
          </li>
        `;
      })}
    </ul>
  `;
}
