/** A Worker stand-in that never writes anything (attestation-timeout test). */
for await (const _ of Deno.stdin.readable) { /* drain until killed */ }
