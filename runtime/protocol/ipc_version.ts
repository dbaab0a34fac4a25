/**
 * The IPC envelope version, in a module of its own with no dependencies so
 * that a Worker's stage 1 can write a `sandbox.failure` frame without loading
 * zod and the frame schemas [PF-1] (ipc.ts re-exports it).
 */
export const IPC_PROTOCOL_VERSION = 2;
