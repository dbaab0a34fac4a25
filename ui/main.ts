/** Browser entry: mounts the app into #app. */
import { render } from "preact";
import { html } from "htm/preact";
import { App } from "./App.ts";

const root = document.getElementById("app");
if (root) render(html`<${App} />`, root);
