/**
 * Web Worker half of tsync_conflict.ts: installs an allow-all seccomp filter
 * on THIS thread only (no TSYNC) and posts back its TID (-errno on failure).
 */
import { addressOf, syscall } from "../../sandbox/libc.ts";
import { encodeProgram, SECCOMP_RET_ALLOW } from "../../sandbox/seccomp_bpf.ts";

self.onmessage = () => {
  const prog = encodeProgram([{ code: 0x06, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW }]);
  const fprog = new Uint8Array(16);
  const v = new DataView(fprog.buffer);
  v.setUint16(0, prog.length / 8, true);
  v.setBigUint64(8, addressOf(prog), true);
  const r = syscall("seccomp", 1, /* SET_MODE_FILTER */ 0, fprog);
  self.postMessage(r.ret === 0n ? Number(syscall("gettid").ret) : -r.errno);
};
