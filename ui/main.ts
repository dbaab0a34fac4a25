/** Browser entry: mounts the app into #app. */
import { render } from "preact";
import { html } from "htm/preact";
import { config } from "zod";
import { App } from "./App.ts";
// The exec tools' card sections register themselves with ToolCard [UI-10].
import "./CommandCard.ts";
import "./SkillCard.ts";
import "./DelegateCard.ts";

// The CSP has no 'unsafe-eval': zod must not even probe `new Function` (the probe alone is a
// reported violation). Responses are parsed with the interpreted validators.
config({ jitless: true });

const root = document.getElementById("app");
if (root) render(html`<${App} />`, root);
