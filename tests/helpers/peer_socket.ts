/**
 * A raw TCP client bound to a chosen loopback source address (127.0.0.2, …),
 * so a test can be a second peer of a server listening on 127.0.0.1. Built on
 * node:net (Deno.connect cannot choose its source address). Loopback only.
 */
import net from "node:net";

export interface PeerSocket {
  write(text: string): Promise<void>;
  /** Resolves with everything read once the server closes, or "open" after `ms`. */
  untilClosed(ms: number): Promise<{ closed: boolean; text: string }>;
  /** Resolves once `re` matches what was read so far (rejects after `ms`). */
  waitFor(re: RegExp, ms: number): Promise<string>;
  close(): void;
}

export function connectFrom(localAddress: string, port: number): Promise<PeerSocket> {
  return new Promise((resolve, reject) => {
    let text = "";
    let closed = false;
    const waiters = new Set<() => void>();
    const wake = () => {
      for (const w of [...waiters]) w();
    };
    const s = net.connect({ host: "127.0.0.1", port, localAddress });
    s.setEncoding("utf8");
    s.on("data", (d: string) => {
      text += d;
      wake();
    });
    s.on("close", () => {
      closed = true;
      wake();
    });
    s.on("error", () => {
      closed = true;
      wake();
    });
    s.once("connect", () => {
      const wait = (done: () => boolean, ms: number) =>
        new Promise<boolean>((res) => {
          if (done()) return res(true);
          const timer = setTimeout(() => {
            waiters.delete(check);
            res(false);
          }, ms);
          const check = () => {
            if (!done()) return;
            clearTimeout(timer);
            waiters.delete(check);
            res(true);
          };
          waiters.add(check);
        });
      resolve({
        write: (t) =>
          new Promise<void>((res, rej) => s.write(t, (err) => (err ? rej(err) : res()))),
        async untilClosed(ms) {
          await wait(() => closed, ms);
          return { closed, text };
        },
        async waitFor(re, ms) {
          if (!(await wait(() => re.test(text), ms))) {
            throw new Error(`no ${re} within ${ms} ms; read ${JSON.stringify(text.slice(0, 200))}`);
          }
          return text;
        },
        close() {
          s.destroy();
        },
      });
    });
    s.once("error", reject);
  });
}
