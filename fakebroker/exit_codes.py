"""The exit codes of every command of the project (``fakebroker ...`` and ``conformance ...``).

| code | name      | meaning |
| ---- | --------- | ------- |
| 0    | OK        | success: certified, no difference, the command did its job |
| 1    | FAILED    | a finding: not certified (a FAIL), a replay or transcript differs, a mutant survived, malformed bytes |
| 2    | USAGE     | bad arguments or an invalid input file (target, spec, transcript, fault plan) |
| 3    | BROKEN    | could not run: a case BROKEN, a target that did not start, a run that wrote no results |
| 4    | PARTIAL   | nothing failed, but the run left part of the target's scope out (-k, -m, a narrower suite, goldens not found) |
"""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BROKEN = 3
EXIT_PARTIAL = 4
