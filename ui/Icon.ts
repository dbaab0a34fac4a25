/** Inline SVG icons (paths only, no remote loads, no style attributes). */
import { html } from "htm/preact";

const PATHS: Record<string, string> = {
  plus: "M12 5v14M5 12h14",
  more: "M6 12h.01M12 12h.01M18 12h.01",
  menu: "M4 7h16M4 12h16M4 17h16",
  close: "M6 6l12 12M18 6L6 18",
  stop: "M7 7h10v10H7z",
  send: "M5 12h13M13 6l6 6-6 6",
  down: "M12 5v14M6 13l6 6 6-6",
  panel: "M4 5h16v14H4zM15 5v14",
  copy: "M9 9h10v10H9zM5 15V5h10",
  play: "M8 5v14l11-7z",
  pause: "M8 5v14M16 5v14",
  prev: "M15 6l-6 6 6 6",
  next: "M9 6l6 6-6 6",
  retry: "M4 12a8 8 0 1 0 2.3-5.7M4 4v4h4",
  logout: "M15 4h4v16h-4M10 8l-4 4 4 4M6 12h10",
  help:
    "M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18zM9.5 9.5a2.5 2.5 0 1 1 3.5 2.3c-.6.3-1 .9-1 1.6V14M12 17h.01",
  warn: "M12 4l9 16H3zM12 10v4M12 17h.01",
  bot: "M7 8h10v10H7zM12 4v4M9.5 12h.01M14.5 12h.01",
  chip: "M8 8h8v8H8zM10 4v4M14 4v4M10 16v4M14 16v4M4 10h4M4 14h4M16 10h4M16 14h4",
  plug: "M9 3v5M15 3v5M6 8h12v3a6 6 0 0 1-12 0zM12 17v4",
  tasks: "M10 6h10M10 12h10M10 18h10M4 6l1.5 1.5L8 5M4 12h3M4 18h3",
  clip:
    "M21.4 11.1l-9.2 9.2a6 6 0 0 1-8.5-8.5l9.2-9.2a4 4 0 0 1 5.7 5.7l-9.2 9.2a2 2 0 0 1-2.8-2.8l8.5-8.5",
};

export interface IconProps {
  name: keyof typeof PATHS | string;
}

export function Icon({ name }: IconProps) {
  return html`
    <svg class="icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d=${PATHS[name] ?? ""} />
    </svg>
  `;
}
