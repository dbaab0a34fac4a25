/**
 * [PF-2] Where a process stands among the kernel's autogroups, read from /proc/<pid>/autogroup:
 * the three forms the kernel gives, and the nice value a sandbox's new group is set below.
 * CI starts the suite in the root task group (an empty file): a parser that took the empty file
 * for an error ended every Worker's stage 1 there.
 */
import { assertEquals } from "../helpers/assert.ts";
import {
  autogroupOf,
  groupReferenceNice,
  lowered,
  parseAutogroup,
} from "../../sandbox/priority.ts";

Deno.test("an autogroup line, an empty file (the root task group) and no file are told apart", () => {
  assertEquals(parseAutogroup("/autogroup-12 nice 0\n"), { nice: 0 });
  assertEquals(parseAutogroup("/autogroup-7 nice -5\n"), { nice: -5 });
  assertEquals(parseAutogroup("/autogroup-7 nice 19"), { nice: 19 });
  assertEquals(parseAutogroup(""), "root");
  assertEquals(parseAutogroup("\n"), "root");
  assertEquals(parseAutogroup(null), null);
  // A form this code does not know is no autogroups: nothing is set, nothing throws.
  assertEquals(parseAutogroup("autogroup 3\n"), null);
});

Deno.test("a new group goes below the server's group, or below its threads in the root group", () => {
  assertEquals(groupReferenceNice({ nice: 3 }, 0), 3);
  assertEquals(groupReferenceNice("root", 0), 0);
  assertEquals(groupReferenceNice("root", -10), -10);
  assertEquals(groupReferenceNice(null, 0), null);
  assertEquals(lowered(groupReferenceNice("root", -10)!, 10), 0);
  assertEquals(lowered(groupReferenceNice({ nice: 15 }, 0)!, 10), 19);
});

Deno.test("this process's own place is one of the three forms, never an error", () => {
  const place = autogroupOf("self");
  const text = (() => {
    try {
      return Deno.readTextFileSync("/proc/self/autogroup");
    } catch {
      return null;
    }
  })();
  assertEquals(place, parseAutogroup(text));
  // A process that is gone has no place.
  assertEquals(autogroupOf(2 ** 22 + 1), null);
});
