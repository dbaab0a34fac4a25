/**
 * The bounded NDJSON transport [SB-4]: every bound is hit and each violation
 * is the fixed code `worker_protocol_error`.
 */
import { assert, assertEquals, assertRejects, assertThrows } from "../helpers/assert.ts";
import { AppError } from "../../runtime/errors.ts";
import { IPC_LINE_MAX_BYTES } from "../../runtime/limits.ts";
import {
  AttestationFrameSchema,
  encodeFrame,
  IPC_PROTOCOL_VERSION,
  NdjsonReader,
  NdjsonWriter,
} from "../../runtime/protocol/ipc.ts";

const enc = new TextEncoder();
const V = IPC_PROTOCOL_VERSION;

function streamOf(...chunks: Array<string | Uint8Array>): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const x of chunks) c.enqueue(typeof x === "string" ? enc.encode(x) : x);
      c.close();
    },
  });
}

async function protocolFailure(p: Promise<unknown>): Promise<string> {
  const err = await assertRejects(() => p);
  assert(err instanceof AppError, String(err));
  assertEquals(err.code, "worker_protocol_error");
  return err.detail ?? "";
}

Deno.test("NdjsonReader reads frames split across chunks and ends with null", async () => {
  const r = new NdjsonReader(streamOf(`{"v":${V},"ty`, `pe":"a"}\n{"v":${V},"type":"b"}\n`));
  assertEquals(await r.next(1000), { v: V, type: "a" });
  assertEquals(await r.next(1000), { v: V, type: "b" });
  assertEquals(await r.next(1000), null);
  assertEquals(r.lines, 2);
});

Deno.test("a line over the line bound is refused before it is parsed", async () => {
  const r = new NdjsonReader(streamOf("x".repeat(100)), { maxLineBytes: 64 });
  assertEquals(await protocolFailure(r.next(1000)), "line too long");
  const exact = `{"v":${V},"type":"a","p":"${"y".repeat(IPC_LINE_MAX_BYTES)}"}\n`;
  const r2 = new NdjsonReader(streamOf(exact));
  assertEquals(await protocolFailure(r2.next(1000)), "line too long");
});

Deno.test("a line of exactly the bound is accepted", async () => {
  const line = `{"v":${V},"type":"a","p":"`;
  const pad = 64 - line.length - 3; // `"}` + newline
  const r = new NdjsonReader(streamOf(`${line}${"z".repeat(pad)}"}\n`), { maxLineBytes: 64 });
  assertEquals((await r.next(1000))?.type, "a");
});

Deno.test("more lines than the line-count bound are refused", async () => {
  const line = `{"v":${V},"type":"a"}\n`;
  const r = new NdjsonReader(streamOf(line.repeat(4)), { maxLines: 3 });
  for (let i = 0; i < 3; i++) await r.next(1000);
  assertEquals(await protocolFailure(r.next(1000)), "too many lines");
});

Deno.test("more bytes than the total bound are refused", async () => {
  const line = `{"v":${V},"type":"a"}\n`;
  const r = new NdjsonReader(streamOf(line, line, line), { maxTotalBytes: line.length * 2 });
  await r.next(1000);
  await r.next(1000);
  assertEquals(await protocolFailure(r.next(1000)), "total bytes exceeded");
});

Deno.test("a read that waits past its timeout is refused", async () => {
  const r = new NdjsonReader(new ReadableStream<Uint8Array>({ start() {} }));
  assertEquals(await protocolFailure(r.next(30)), "read timeout");
});

Deno.test("a truncated last line, bad JSON, bad UTF-8 and bad envelopes are refused", async () => {
  const cases: Array<[string | Uint8Array, string]> = [
    [`{"v":${V},"type":"a"}`, "truncated final line"],
    ["{nope}\n", "line is not UTF-8 JSON"],
    [new Uint8Array([0x7b, 0xff, 0x7d, 0x0a]), "line is not UTF-8 JSON"],
    [`{"v":1,"type":"a"}\n`, "bad frame envelope"],
    [`{"v":${V},"type":"BAD TYPE"}\n`, "bad frame envelope"],
    [`[1,2]\n`, "bad frame envelope"],
  ];
  for (const [input, detail] of cases) {
    assertEquals(await protocolFailure(new NdjsonReader(streamOf(input)).next(1000)), detail);
  }
});

Deno.test("a frame that fails the caller's schema is refused, and the reader stays failed", async () => {
  const line = `{"v":${V},"type":"sandbox.attestation","pid":5}\n`;
  const r = new NdjsonReader(streamOf(line, line));
  const parse = (v: unknown) => {
    const p = AttestationFrameSchema.safeParse(v);
    return p.success ? { ok: true as const, frame: p.data } : { ok: false as const };
  };
  assertEquals(
    await protocolFailure(r.next(1000, parse)),
    "frame sandbox.attestation does not match its schema",
  );
  await protocolFailure(r.next(1000));
});

Deno.test("encodeFrame() refuses an outbound frame over the line bound", () => {
  assertEquals(encodeFrame({ v: V, type: "a" }).at(-1), 0x0a);
  const err = assertThrows(() => encodeFrame({ v: V, type: "a", p: "x".repeat(100) }, 64));
  assert(err instanceof AppError && err.code === "worker_protocol_error");
});

Deno.test("NdjsonWriter writes one line per frame in order", async () => {
  const chunks: Uint8Array[] = [];
  const w = new NdjsonWriter(new WritableStream({ write: (c) => void chunks.push(c) }));
  await Promise.all([w.send({ v: V, type: "a" }), w.send({ v: V, type: "b" })]);
  await w.close();
  const text = new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c])));
  assertEquals(text, `{"v":${V},"type":"a"}\n{"v":${V},"type":"b"}\n`);
});

/** Both ends of a real pipe (a FIFO), opened as a Worker's stdin and stdout are: blocking fds. */
async function fifo(): Promise<{ reader: Deno.FsFile; writer: Deno.FsFile; dispose(): void }> {
  const dir = Deno.makeTempDirSync({ prefix: "ab-ipc-fifo-" });
  const path = `${dir}/pipe`;
  const made = await new Deno.Command("mkfifo", { args: [path] }).output();
  assert(made.success, "mkfifo");
  // Opening one end of a FIFO waits for the other: both opens run at once.
  const [reader, writer] = await Promise.all([
    Deno.open(path, { read: true }),
    Deno.open(path, { write: true }),
  ]);
  return {
    reader,
    writer,
    dispose() {
      for (const f of [reader, writer]) {
        try {
          f.close();
        } catch (err) {
          if (!(err instanceof Deno.errors.BadResource)) throw err;
        }
      }
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

Deno.test("frames written whole through a synchronous sink are read back through a byte source (a real pipe), split reads included", async () => {
  const p = await fifo();
  try {
    const writer = new NdjsonWriter(p.writer);
    const reader = new NdjsonReader(p.reader);
    await writer.send({ v: V, type: "a" });
    await writer.send({ v: V, type: "b", pad: "x".repeat(20_000) });
    assertEquals(await reader.next(5000), { v: V, type: "a" });
    assertEquals((await reader.next(5000))?.type, "b");
    // Half a line, a read that waits for the rest, then the rest.
    const line = encodeFrame({ v: V, type: "c" });
    p.writer.writeSync(line.subarray(0, 5));
    const pending = reader.next(5000);
    await new Promise((r) => setTimeout(r, 0));
    p.writer.writeSync(line.subarray(5));
    assertEquals(await pending, { v: V, type: "c" });
    // The writer's close is the reader's end of input.
    await writer.close();
    assertEquals(await reader.next(5000), null);
    assertEquals(reader.lines, 3);
  } finally {
    p.dispose();
  }
});

Deno.test("a byte source keeps the reader's bounds: line length, timeout, and a failed reader closes its source", async () => {
  const p = await fifo();
  try {
    const reader = new NdjsonReader(p.reader, { maxLineBytes: 64 });
    p.writer.writeSync(enc.encode("y".repeat(100)));
    assertEquals(await protocolFailure(reader.next(5000)), "line too long");
    const closed = assertThrows(() => p.reader.readSync(new Uint8Array(1)));
    assert(closed instanceof Deno.errors.BadResource, `the source is closed: ${closed}`);
  } finally {
    p.dispose();
  }
  const q = await fifo();
  try {
    assertEquals(await protocolFailure(new NdjsonReader(q.reader).next(30)), "read timeout");
  } finally {
    q.dispose();
  }
});

Deno.test("a synchronous sink that takes a line in pieces still gets every line whole, in order, before send resolves", async () => {
  const written: number[] = [];
  const w = new NdjsonWriter({
    writeSync(p: Uint8Array) {
      const n = Math.min(7, p.length);
      written.push(...p.subarray(0, n));
      return n;
    },
    close() {},
  });
  await w.send({ v: V, type: "a" });
  assertEquals(new TextDecoder().decode(new Uint8Array(written)), `{"v":${V},"type":"a"}\n`);
  await w.send({ v: V, type: "b" });
  assertEquals(
    new TextDecoder().decode(new Uint8Array(written)),
    `{"v":${V},"type":"a"}\n{"v":${V},"type":"b"}\n`,
  );
});

Deno.test("a synchronous sink's failure rejects that send, and an oversized frame is refused before any byte is written", async () => {
  let writes = 0;
  const w = new NdjsonWriter({
    writeSync() {
      writes++;
      throw new Deno.errors.BrokenPipe("gone");
    },
    close() {},
  }, 64);
  const err = await assertRejects(() => w.send({ v: V, type: "a" }));
  assert(err instanceof Deno.errors.BrokenPipe, String(err));
  assertThrows(() => w.send({ v: V, type: "a", p: "x".repeat(100) }));
  assertEquals(writes, 1);
});
