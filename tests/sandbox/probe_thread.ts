/**
 * Runs inside a Web Worker, i.e. on an OS thread the confined probe process
 * created AFTER stage 2: opens the given path with synchronous FFI on this
 * thread and posts back the errno (0 = opened).
 */
import { cstr, O_CLOEXEC, O_RDONLY, syscall } from "../../sandbox/libc.ts";

self.onmessage = (e: MessageEvent<string>) => {
  const r = syscall("openat", -100, cstr(e.data), O_RDONLY | O_CLOEXEC, 0);
  if (r.ret >= 0n) syscall("close", Number(r.ret));
  self.postMessage(r.ret < 0n ? r.errno : 0);
};
