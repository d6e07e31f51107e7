"""The Python verifier against the golden vectors: a log written before approval policies existed
(test/fixtures/v1-plan-log.json, Avro bodies and their writer schema) decodes with today's contract
(schemas/), and its hashes, chain head and plan digests are the values pinned in the TypeScript golden
test (copied to fixtures/golden-v1-expected.json, never recomputed)."""
import base64
import copy
import json
import os

import pytest

import plan_ledger_verify as v

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
EXPECTED = json.load(open(os.path.join(HERE, "fixtures", "golden-v1-expected.json"), encoding="utf-8"))
LOG = json.load(open(os.path.normpath(os.path.join(HERE, "fixtures", EXPECTED["log"])), encoding="utf-8"))
CONTRACT = v.load_contract(os.path.join(REPO, "schemas"))
PLANS = sorted(EXPECTED["plans"])


def decoded(plan_id):
    plan = next(p for p in LOG["plans"] if p["planId"] == plan_id)
    writer, reader = v.parse(LOG["schema"]), v.parse(CONTRACT)
    return [v.decode_event(base64.b64decode(b), writer, reader) for b in plan["avro"]]


def bundle_of(plan_id, events):
    """A bundle as the spec (§10) describes it, built here from the decoded golden events."""
    return {
        "format": "plan-ledger.bundle/1",
        "planId": plan_id,
        "schemas": {"1": LOG["schema"]},
        "events": [{"seq": e["seq"], "partition": 0, "offset": str(i), "schemaId": 1, "hash": e["hash"], "event": e} for i, e in enumerate(events)],
        "chain": {"genesis": v.GENESIS, "head": events[-1]["hash"], "length": len(events)},
        "final": {"planDigest": EXPECTED["plans"][plan_id]["digest"], "stateDigest": EXPECTED["plans"][plan_id]["stateDigest"]},
    }


@pytest.mark.parametrize("plan_id", PLANS)
def test_golden_hashes_head_and_plan_digest(plan_id):
    want = EXPECTED["plans"][plan_id]
    events = decoded(plan_id)
    assert [f"{e['type']} {v.event_hash(e)}" for e in events] == want["hashes"]
    assert [f"{e['type']} {e['hash']}" for e in events] == want["hashes"]
    # The field added later is filled with its default on decode, and left out of the hashed bytes.
    for e in events:
        if e["type"] in ("PlanCreated", "PlanProposed"):
            assert e["data"]["policy"] is None
            assert "policy" not in v.hashed_object(e)["data"]
    r = v.verify_chain(plan_id, events)
    assert (r["ok"], r["head"], r["seq"]) == (True, want["hashes"][-1].split(" ")[1], len(events))
    assert r["planDigest"] == want["digest"]
    assert r["findings"] == []


def test_golden_propose_digests_along_the_chain():
    events = decoded("golden-propose")
    proposed = next(e for e in events if e["type"] == "PlanProposed")
    approved = next(e for e in events if e["type"] == "PlanApproved")
    assert proposed["data"]["digest"] == approved["data"]["digest"] == EXPECTED["plans"]["golden-propose"]["digest"]


def test_policy_present_is_hashed():
    """A non-null added field is part of the hashed object: setting it changes the hash."""
    e = decoded("golden-exec")[0]
    e2 = copy.deepcopy(e)
    e2["data"]["policy"] = {"policyId": "p", "policyHash": "0" * 64, "required": False, "rule": None, "reason": "r", "approvers": 1, "forbidSelfApproval": False}
    assert v.event_hash(e2) != v.event_hash(e) == e["hash"]


@pytest.mark.parametrize("plan_id", PLANS)
def test_bundle_verifies_offline(plan_id):
    r = v.verify_bundle(bundle_of(plan_id, decoded(plan_id)), CONTRACT)
    assert (r["ok"], r["head"], r["findings"]) == (True, EXPECTED["plans"][plan_id]["hashes"][-1].split(" ")[1], [])


@pytest.mark.parametrize("seq", [1, 2, 3])
def test_an_edited_event_breaks_the_chain_at_its_seq(seq):
    events = decoded("golden-propose")
    events[seq - 1]["actor"] = "mallory"
    r = v.verify_bundle(bundle_of("golden-propose", events), CONTRACT)
    assert (r["ok"], r["brokenAt"], r["reason"]) == (False, seq, "hash_mismatch")


def test_a_rehashed_edit_breaks_the_next_link():
    events = decoded("golden-propose")
    events[1]["data"]["item"]["title"] = "something else"
    events[1]["hash"] = v.event_hash(events[1])
    r = v.verify_chain("golden-propose", events)
    assert (r["ok"], r["brokenAt"], r["reason"]) == (False, 3, "prev_mismatch")


def test_a_removed_event_is_a_seq_gap_and_a_truncated_bundle_a_head_finding():
    events = decoded("golden-propose")
    r = v.verify_chain("golden-propose", events[:1] + events[2:])
    assert (r["ok"], r["brokenAt"], r["reason"]) == (False, 3, "seq_gap")
    b = bundle_of("golden-propose", events)
    b["events"] = b["events"][:-1]
    r = v.verify_bundle(b, CONTRACT)
    assert r["ok"] is True and [f["kind"] for f in r["findings"]] == ["head"]


def test_an_event_that_does_not_fit_its_writer_schema_is_a_finding():
    events = decoded("golden-exec")
    events[0]["data"]["mode"] = "sideways"
    events[0]["hash"] = v.event_hash(events[0])
    events[1]["prevHash"] = events[0]["hash"]
    events[1]["hash"] = v.event_hash(events[1])
    events[2]["prevHash"] = events[1]["hash"]
    events[2]["hash"] = v.event_hash(events[2])
    b = bundle_of("golden-exec", events)
    r = v.verify_bundle(b, CONTRACT)
    assert r["ok"] is True  # the chain itself was recomputed by the forger...
    assert [f["kind"] for f in r["findings"]][:1] == ["schema_mismatch"]  # ...but the value is not Avro of its schema


def test_a_forged_proposal_digest_is_a_finding_even_with_a_recomputed_chain():
    events = decoded("golden-propose")
    events[2]["data"]["digest"] = "f" * 64
    for i in range(2, len(events)):
        if i > 2:
            events[i]["prevHash"] = events[i - 1]["hash"]
        events[i]["hash"] = v.event_hash(events[i])
    r = v.verify_chain("golden-propose", events)
    assert r["ok"] is True
    assert [(f["kind"], f["seq"]) for f in r["findings"]] == [("digest_mismatch", 3)]
