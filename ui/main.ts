/** Browser entry: mounts the app into #app. */
import { render } from "preact";
import { html } from "htm/preact";
import { App } from "./App.ts";
// The exec tools' card sections register themselves with ToolCard [UI-10].
import "./CommandCard.ts";

const root = document.getElementById("app");
if (root) render(html`<${App} />`, root);
