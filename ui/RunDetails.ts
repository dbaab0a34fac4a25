/**
 * The "Run details" drawer [UI-3]: a four-lane timeline (User / Harness / LLM
 * / Tool) of canonical events in seq order — live from the run store while
 * the Run streams, otherwise replayed page by page — with step / play /
 * filter, and an inspector that separates derived facts, the canonical
 * payload and the full envelope. Context metadata loads only on click.
 */
import { html } from "htm/preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { Icon } from "./Icon.ts";
import type { Api } from "./lib/endpoints.ts";
import { errorCode } from "./lib/endpoints.ts";
import type { RunView } from "./lib/run_store.ts";
import {
  ALL_LANES,
  buildTimeline,
  deriveFacts,
  eventSubject,
  kindSegments,
  type Lane,
  LANE_LABELS,
  LANES,
  sinceStart,
  stepIndex,
} from "./lib/timeline.ts";
import { prettyPayload } from "./lib/pretty.ts";
import { RunnerAccessList } from "./RunnerAccessList.ts";
import { type EventEnvelope, toEnvelope } from "./lib/types.ts";

export interface RunDetailsProps {
  api: Api;
  agentId: string;
  runId: string | null;
  live: RunView | undefined;
  onClose(): void;
}

/** Replay pages fetched at most (512 events / 128 per page). */
const REPLAY_PAGES_MAX = 4;

export function RunDetails({ api, agentId, runId, live, onClose }: RunDetailsProps) {
  const [replayed, setReplayed] = useState<EventEnvelope[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [lanes, setLanes] = useState<ReadonlySet<Lane>>(ALL_LANES);
  const [text, setText] = useState("");
  const [selected, setSelected] = useState(-1);
  const [playing, setPlaying] = useState(false);
  const [ctx, setCtx] = useState<Record<string, unknown> | null>(null);
  const [ctxError, setCtxError] = useState<string | null>(null);

  const isLive = live !== undefined && live.terminal === null;
  useEffect(() => {
    setReplayed([]);
    setError(null);
    setSelected(-1);
    setCtx(null);
    setCtxError(null);
    if (!runId || isLive) return;
    let cancelled = false;
    (async () => {
      const all: EventEnvelope[] = [];
      let cursor: number | undefined = undefined;
      for (let i = 0; i < REPLAY_PAGES_MAX; i++) {
        const page: { events: unknown[]; next: number | null } = await api.replay(
          agentId,
          runId,
          cursor,
        );
        for (const e of page.events) {
          const env = toEnvelope(e);
          if (env) all.push(env);
        }
        if (page.next === null || page.events.length === 0) break;
        cursor = page.next;
      }
      if (!cancelled) setReplayed(all);
    })().catch((err) => !cancelled && setError(errorCode(err)));
    return () => {
      cancelled = true;
    };
  }, [runId, isLive, agentId]);

  const events = isLive || (live && replayed.length === 0) ? live!.events : replayed;
  const rows = useMemo(() => buildTimeline(events, { lanes, text }), [events, lanes, text]);
  const current = selected >= 0 && selected < rows.length ? rows[selected] : null;

  useEffect(() => {
    if (!playing) return;
    if (selected >= rows.length - 1) {
      setPlaying(false);
      return;
    }
    const t = setTimeout(() => setSelected(stepIndex(selected, 1, rows.length)), 600);
    return () => clearTimeout(t);
  }, [playing, selected, rows.length]);

  // The timeline is one Tab stop (roving tabindex): arrows, Home and End move the selection, and
  // the focus follows it while the focus is in the list.
  const listRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const list = listRef.current;
    if (!list || !list.contains(document.activeElement)) return;
    list.querySelector<HTMLElement>("[aria-selected=true]")?.focus();
  }, [selected]);
  const onListKey = (e: KeyboardEvent) => {
    const n = rows.length;
    const next = e.key === "ArrowDown"
      ? stepIndex(selected, 1, n)
      : e.key === "ArrowUp"
      ? stepIndex(selected, -1, n)
      : e.key === "Home"
      ? stepIndex(-1, 1, n)
      : e.key === "End"
      ? stepIndex(-1, -1, n)
      : null;
    if (next === null || n === 0) return;
    e.preventDefault();
    setSelected(next);
  };

  const toggleLane = (l: Lane) => {
    const next = new Set(lanes);
    if (next.has(l)) next.delete(l);
    else next.add(l);
    setLanes(next);
  };

  const loadContext = async () => {
    if (!runId) return;
    setCtxError(null);
    try {
      setCtx(await api.runContext(agentId, runId));
    } catch (err) {
      setCtxError(errorCode(err));
    }
  };

  return html`
    <aside class="details" data-testid="run-details" aria-label="Run details">
      <header class="details-head">
        <div>
          <h2>Run details</h2>
          ${runId && html`<code class="muted small">${runId}</code>`}
        </div>
        <div class="details-head-actions">
          ${isLive && html`<span class="badge live-badge">live</span>`}
          <button type="button" class="icon-btn" aria-label="Close run details" onClick=${onClose}
            data-testid="close-details"><${Icon} name="close" /></button>
        </div>
      </header>
      ${!runId &&
        html`
          <p
            class="empty">No run to show yet. Send a message, then choose "Run details" under its answer to inspect that run.</p>
        `}
      ${runId && html`
        <div class="timeline-controls" role="toolbar" aria-label="Timeline controls">
          <button type="button" class="icon-btn" aria-label="Previous event"
            onClick=${() =>
              setSelected(stepIndex(selected, -1, rows.length))}><${Icon} name="prev" /></button>
          <button type="button" class="icon-btn" aria-label=${playing ? "Pause" : "Play"}
            data-testid="timeline-play" onClick=${() => {
              if (!playing && selected >= rows.length - 1) setSelected(0);
              setPlaying(!playing);
            }}><${Icon} name=${playing ? "pause" : "play"} /></button>
          <button type="button" class="icon-btn" aria-label="Next event" data-testid="timeline-next"
            onClick=${() =>
              setSelected(stepIndex(selected, 1, rows.length))}><${Icon} name="next" /></button>
          <input class="input input-sm" type="search" placeholder="Filter kinds…" value=${text}
            data-testid="timeline-filter"
            aria-label="Filter events by kind" onInput=${(e: Event) =>
              setText((e.target as HTMLInputElement).value)} />
        </div>
        <div class="lane-filter" role="group" aria-label="Lanes">
          ${LANES.map((l) =>
            html`
              <label class=${`lane-chip lane-${l}`}>
                <input type="checkbox" checked=${lanes.has(l)} onChange=${() => toggleLane(l)} />
                ${LANE_LABELS[l]}
              </label>
            `
          )}
        </div>
        ${error && html`<p class="error-text" role="alert">Could not load events (${error}).</p>`}
        <div class="timeline" data-testid="timeline" role="listbox" aria-label="Events"
          ref=${listRef} onKeyDown=${onListKey}>
          <div class="timeline-lanes" aria-hidden="true">
            ${LANES.map((l) => html`<span class=${`lane-head lane-${l}`}>${LANE_LABELS[l]}</span>`)}
            <span class="lane-head lane-head-event">Event</span>
          </div>
          ${rows.length === 0 &&
            html`<p class="empty">${
              events.length ? "No events match the filter." : "No events yet."
            }</p>`}
          ${rows.map((r, i) =>
            // The first event of each model call carries its "Step N" header (CSS, so the
            // options stay the list's only children).
            html`
              <button type="button" role="option" aria-selected=${r.index === selected}
                tabIndex=${r.index === (current ? selected : 0) ? 0 : -1}
                class=${`tl-row ${r.index === selected ? "selected" : ""} ${
                  r.step > 0 && r.step !== rows[i - 1]?.step ? "tl-step-start" : ""
                }`} data-testid="timeline-event" data-step=${r.step}
                data-kind=${r.event.kind} onClick=${() => setSelected(r.index)}>
                <span class=${`tl-dot tl-col-${r.lane} lane-${r.lane}`} title=${LANE_LABELS[
                  r.lane
                ]}></span>
                <span class="tl-label"
                  title=${r.event
                    .kind}><span class="tl-time muted" data-testid="timeline-time">${sinceStart(
                      r.event,
                      events,
                    )}</span><span class="tl-seq">${r.event.seq >= 0
                    ? `#${r.event.seq}`
                    : "·"}</span> ${kindSegments(r.event.kind).map((part, i) =>
                      html`${i > 0 && html`<wbr />`}${part}`
                    )}${eventSubject(r.event, events) &&
                    html`<span class="tl-subject" data-testid="timeline-subject">${
                      eventSubject(r.event, events)
                    }</span>`}</span>
              </button>
            `
          )}
        </div>
        ${current && html`
          <section class="inspector" data-testid="inspector" aria-label="Event inspector">
            <h3>${current.event.kind}${eventSubject(current.event, events) &&
              [" ", html`<span class="muted">${eventSubject(current.event, events)}</span>`]}</h3>
            <h4>Derived facts</h4>
            <dl>${deriveFacts(current.event, events).map((f) =>
              html`
                <div class="kv">
                  <dt>${f.label}</dt>
                  <dd>${f.value}</dd>
                </div>
              `
            )}</dl>
            <h4>Payload</h4>
            <pre class="json" data-testid="inspector-payload">${prettyPayload(
              current.event.payload,
            )}</pre>
            <details>
              <summary>Full envelope</summary>
              <pre class="json">${JSON.stringify(current.event, null, 2)}</pre>
            </details>
          </section>
        `}
        <section class="context-meta">
          ${ctx === null
            ? html`
              <button type="button" class="btn btn-sm" data-testid="load-context"
                onClick=${loadContext}>Load context metadata</button>
            `
            : html`
              <details open>
                <summary>Context metadata</summary>
                <pre class="json">${JSON.stringify(ctx, null, 2)}</pre>
              </details>
            `}
          ${ctxError &&
            html`<p class="error-text" role="alert">Context metadata unavailable (${ctxError}).</p>`}
          ${runId && isRunnerRun(events) &&
            html`<${RunnerAccessList} api=${api} agentId=${agentId} runId=${runId} />`}
        </section>
      `}
    </aside>
  `;
}

/** A Run of an external ACP runner names it as its model (`acp:<name>`) [LC-6]. */
function isRunnerRun(events: readonly EventEnvelope[]): boolean {
  const started = events.find((e) => e.kind === "run.started");
  const model = (started?.payload as { model_id?: unknown } | undefined)?.model_id;
  return typeof model === "string" && model.startsWith("acp:");
}
