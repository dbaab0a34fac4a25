/**
 * The HTTP/1.1 wire rules both outbound clients (Ollama, MCP) read heads and
 * bodies by (runtime/protocol/http1.ts), at their edges.
 */
import {
  addHeaderLine,
  bodyFraming,
  parseChunkSize,
  parseStatusLine,
  requestHead,
} from "../../runtime/protocol/http1.ts";
import { assertEquals } from "../helpers/assert.ts";

Deno.test("requestHead() writes the request line, the headers in order and the empty line", () => {
  assertEquals(
    requestHead("POST", "/mcp", [["Host", "h:1"], ["Content-Length", "2"]]),
    "POST /mcp HTTP/1.1\r\nHost: h:1\r\nContent-Length: 2\r\n\r\n",
  );
});

Deno.test("parseStatusLine() takes HTTP/1.0 and 1.1 with three digits and nothing else", () => {
  assertEquals(parseStatusLine("HTTP/1.1 200 OK"), 200);
  assertEquals(parseStatusLine("HTTP/1.0 404"), 404);
  for (
    const bad of ["HTTP/2 200", "HTTP/1.1 20", "HTTP/1.1 2000", "http/1.1 200", "HTTP/1.1 200x", ""]
  ) {
    assertEquals(parseStatusLine(bad), null, bad);
  }
});

Deno.test("addHeaderLine() lower-cases names, trims values and joins a repeated header", () => {
  const h = new Map<string, string>();
  assertEquals(addHeaderLine(h, "Content-Type:  text/plain "), true);
  assertEquals(addHeaderLine(h, "X-A: 1"), true);
  assertEquals(addHeaderLine(h, "x-a: 2"), true);
  assertEquals([...h], [["content-type", "text/plain"], ["x-a", "1, 2"]]);
  assertEquals(addHeaderLine(h, ": no name"), false);
  assertEquals(addHeaderLine(h, "no colon"), false);
});

Deno.test("bodyFraming(): chunked, a 12-digit Content-Length, or to the end; anything else is refused", () => {
  const f = (...kv: [string, string][]) => bodyFraming(new Map(kv));
  assertEquals(f(["transfer-encoding", "Chunked"]), { mode: "chunked" });
  assertEquals(f(["transfer-encoding", "chunked"], ["content-length", "5"]), { mode: "chunked" });
  assertEquals(f(["transfer-encoding", "gzip, chunked"]), null);
  assertEquals(f(["content-length", "999999999999"]), { mode: "length", length: 999999999999 });
  assertEquals(f(["content-length", "1000000000000"]), null);
  // Two Content-Length headers arrive joined: never guessed between.
  assertEquals(f(["content-length", "5, 5"]), null);
  assertEquals(f(["content-length", "-1"]), null);
  assertEquals(f(), { mode: "eof" });
});

Deno.test("parseChunkSize() reads hex up to its digit bound and ignores extensions", () => {
  assertEquals(parseChunkSize("1f", 8), 31);
  assertEquals(parseChunkSize("0", 8), 0);
  assertEquals(parseChunkSize("A;name=v", 8), 10);
  assertEquals(parseChunkSize("ffffffff", 8), 0xffffffff);
  for (const bad of ["fffffffff", "", ";x", "1g", "-1", "0x1"]) {
    assertEquals(parseChunkSize(bad, 8), null, bad);
  }
});
