"""The catalogue requirement each coordinator rule enforces, by the API that answers it.

A ``RuleViolation`` is named by its rule (``group-id-not-empty``): one check of the engine,
which several APIs share. What a client may expect of that check is a requirement of the
conformance suite's catalogue (``schemas/requirements.json``), one per API that answers it:
JoinGroup's empty group id is CLS-JOIN-06, SyncGroup's CLS-SYNC-10. The ids are kept here as
strings because the broker does not import the suite; a test
(``tests/conformance/test_rule_requirements.py``) holds this table to the catalogue: each id
is a coordinator requirement of the catalogue, and the golden scenario of each requirement
is refused by exactly the rule that names it (and no rule names a requirement its scenario
does not reach). Several ids for one API: one check that answers several stated behaviours
(a session timeout below and above its bounds).

Rules that enforce no requirement of the catalogue (Kafka's behaviour the suite does not
state, and the consumer group type) are absent: ``requirements_of`` answers ().
"""

from __future__ import annotations

ENFORCES: dict[str, dict[str, tuple[str, ...]]] = {
    "assignment-members-exist": {"ConnectGroupInstallAssignment": ("C848-VALID-02",)},
    "assignor-maximum-version": {"ConnectGroupHeartbeat": ("C848-HB-VAL-09",)},
    "assignor-minimum-version": {"ConnectGroupHeartbeat": ("C848-HB-VAL-08",)},
    "assignor-name-not-empty": {"ConnectGroupHeartbeat": ("C848-HB-VAL-07",)},
    "assignor-version-in-range": {"ConnectGroupHeartbeat": ("C848-HB-VAL-10",)},
    "assignor-versions-overlap": {
        "ConnectGroupHeartbeat": ("C848-ASSIGNOR-03", "C848-HB-HND-09", "C848-HB-HND-10", "C848-HB-VAL-12"),
    },
    "commit-group-exists": {"OffsetCommit": ("CLS-COMMIT-04", "CLS-COMMIT-05")},
    "commit-not-completing-rebalance": {"OffsetCommit": ("CLS-COMMIT-08",)},
    "generation-matches": {
        "Heartbeat": ("CLS-HB-01",),
        "OffsetCommit": ("CLS-COMMIT-07",),
        "SyncGroup": ("CLS-SYNC-01",),
    },
    "group-exists": {
        "ConnectGroupHeartbeat": ("C848-HB-HND-11",),
        "ConnectGroupInstallAssignment": ("C848-INST-HND-01",),
        "ConnectGroupPrepareAssignment": ("C848-PREP-HND-01",),
    },
    "group-id-not-empty": {
        "ConnectGroupHeartbeat": ("C848-HB-VAL-01", "C848-HB-VAL-14"),
        "ConnectGroupInstallAssignment": ("C848-INST-VAL-01",),
        "ConnectGroupPrepareAssignment": ("C848-PREP-VAL-01",),
        "Heartbeat": ("CLS-HB-06",),
        "JoinGroup": ("CLS-JOIN-06",),
        "LeaveGroup": ("CLS-LEAVE-06",),
        "SyncGroup": ("CLS-SYNC-10",),
    },
    "group-is-connect": {
        "ConnectGroupHeartbeat": ("C848-HB-HND-12",),
        "ConnectGroupInstallAssignment": ("C848-INST-HND-06",),
        "ConnectGroupPrepareAssignment": ("C848-PREP-HND-06",),
    },
    "heartbeat-group-exists": {"Heartbeat": ("CLS-HB-08",)},
    "install-epoch-newer-than-target": {"ConnectGroupInstallAssignment": ("C848-VALID-07",)},
    "install-epoch-not-ahead": {"ConnectGroupInstallAssignment": ("C848-VALID-06",)},
    "instance-id-not-empty": {"ConnectGroupHeartbeat": ("C848-HB-VAL-04",)},
    "join-gives-rebalance-timeout": {"ConnectGroupHeartbeat": ("C848-HB-VAL-05",)},
    "member-epoch-at-least-minus-one": {"ConnectGroupHeartbeat": ("C848-HB-VAL-03",)},
    "member-epoch-matches": {
        "ConnectGroupInstallAssignment": ("C848-INST-HND-03",),
        "ConnectGroupPrepareAssignment": ("C848-PREP-HND-03", "C848-PREP-HND-07"),
    },
    "member-epoch-not-ahead": {"ConnectGroupHeartbeat": ("C848-HB-HND-03",)},
    "member-epoch-not-behind": {"ConnectGroupHeartbeat": ("C848-HB-HND-03",)},
    "member-epoch-not-negative": {
        "ConnectGroupInstallAssignment": ("C848-INST-VAL-03",),
        "ConnectGroupPrepareAssignment": ("C848-PREP-VAL-03",),
    },
    "member-id-known": {
        "Heartbeat": ("CLS-HB-03",),
        "JoinGroup": ("CLS-JOIN-07",),
        "LeaveGroup": ("CLS-LEAVE-04",),
        "OffsetCommit": ("CLS-COMMIT-06",),
        "SyncGroup": ("CLS-SYNC-02",),
    },
    "member-id-not-empty": {
        "ConnectGroupHeartbeat": ("C848-HB-VAL-02",),
        "ConnectGroupInstallAssignment": ("C848-INST-VAL-02",),
        "ConnectGroupPrepareAssignment": ("C848-PREP-VAL-02",),
    },
    "member-known": {
        "ConnectGroupHeartbeat": ("C848-HB-HND-02",),
        "ConnectGroupInstallAssignment": ("C848-INST-HND-02",),
        "ConnectGroupPrepareAssignment": ("C848-PREP-HND-02",),
    },
    "member-listed-once": {"ConnectGroupInstallAssignment": ("C848-VALID-08",)},
    "member-selected-to-assign": {
        "ConnectGroupInstallAssignment": ("C848-INST-HND-04",),
        "ConnectGroupPrepareAssignment": ("C848-PREP-HND-04",),
    },
    "no-server-assignor": {"ConnectGroupHeartbeat": ("C848-HB-VAL-11",)},
    "not-preparing-rebalance": {"SyncGroup": ("CLS-SYNC-03",)},
    "one-kind-of-assignor": {"ConnectGroupHeartbeat": ("C848-HB-VAL-06",)},
    "protocol-consistent": {"SyncGroup": ("CLS-SYNC-08",)},
    "protocols-supported": {
        "JoinGroup": ("CLS-JOIN-08", "CLS-JOIN-09", "CLS-JOIN-19", "CLS-JOIN-20"),
    },
    "session-timeout-in-bounds": {"JoinGroup": ("CLS-JOIN-03", "CLS-JOIN-04")},
    "simple-commit-needs-empty-group": {"OffsetCommit": ("CLS-COMMIT-09",)},
    "static-instance-known": {"JoinGroup": ("CLS-JOIN-23",)},
    "static-instance-owns-member-id": {
        "Heartbeat": ("CLS-HB-09",),
        "JoinGroup": ("CLS-JOIN-22",),
        "LeaveGroup": ("CLS-LEAVE-09",),
        "OffsetCommit": ("CLS-COMMIT-11",),
        "SyncGroup": ("CLS-SYNC-13",),
    },
    "sync-group-exists-and-not-empty": {"SyncGroup": ("CLS-SYNC-12",)},
    "sync-protocol-fields-present": {"SyncGroup": ("CLS-SYNC-11",)},
    "task-id-not-negative": {
        "ConnectGroupHeartbeat": ("C848-HB-VAL-13",),
        "ConnectGroupInstallAssignment": ("C848-VALID-05",),
    },
    "unit-assigned-once": {"ConnectGroupInstallAssignment": ("C848-VALID-01", "C848-VALID-09")},
}


def requirements_of(rule: str, api: str) -> tuple[str, ...]:
    """The catalogue ids ``rule`` enforces when ``api`` checks it; () for none."""
    return ENFORCES.get(rule, {}).get(api, ())
