/**
 * The private working pair a one-shot runner job gets: a 0700 temp directory
 * holding `scratch/` and `tmp/`, removed when the job ends, whatever the outcome.
 */
export async function withPrivateDirs<T>(
  prefix: string,
  fn: (scratch: string, tmp: string) => Promise<T>,
): Promise<T> {
  const base = await Deno.makeTempDir({ prefix });
  try {
    await Deno.chmod(base, 0o700);
    await Deno.mkdir(`${base}/scratch`);
    await Deno.mkdir(`${base}/tmp`);
    return await fn(`${base}/scratch`, `${base}/tmp`);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}
