#!/usr/bin/env python3
"""A second plan-ledger verifier, written from docs/audit-spec.md alone (it shares no code with the ledger).

    plan_ledger_verify.py bundle FILE [--json]
    plan_ledger_verify.py live --brokers HOST:PORT --prefix PREFIX --plan PLAN_ID
                              [--registry URL | --schemas DIR] [--json]
    plan_ledger_verify.py census --brokers HOST:PORT --prefix PREFIX [--registry URL] [--json]

`bundle` verifies an export bundle offline; `live` reads one plan from the events topic at read_committed
(every record of the plan's partition), counts every planId:seq exactly once and verifies the chain;
`census` reads every topic of the prefix to its end at read_committed and does the same for every plan.
Exit status 0 when the chain verifies and nothing was found, 1 otherwise, 2 on a usage or read error.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import math
import os
import sys
import urllib.request
from typing import Any

GENESIS = "0" * 64
# Spec §6: fields added after an event type's first schema, left out of the hashed object while null.
ADDED_PAYLOAD_FIELDS = {"PlanCreated": ("policy", "forkedFrom"), "PlanProposed": ("policy",)}
ADDED_NESTED_FIELDS = {"ItemAdded": (("item", "secret"), ("item", "wait"))}
# Spec §9: events whose `digest` is the plan digest at that point of the chain.
DIGEST_EVENTS = ("PlanProposed", "PlanApproved", "PlanRejected", "ApprovalRecorded")


# ---- canonical JSON (spec §5) ---------------------------------------------------------------------

def js_number(x: int | float) -> str:
    """A number as JavaScript's Number.prototype.toString writes it (shortest round-trip digits)."""
    if isinstance(x, int):
        if abs(x) > 2**53:
            raise ValueError(f"integer {x} is beyond a double's exact range")
        return str(x)
    if not math.isfinite(x):
        raise ValueError(f"{x} is not a finite number")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mantissa.partition(".")
    all_digits = whole + frac
    lead = len(all_digits) - len(all_digits.lstrip("0"))
    digits = all_digits[lead:].rstrip("0")
    n = len(whole) + (int(exp) if exp else 0) - lead  # value = 0.<digits> * 10^n
    k = len(digits)
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def js_string(s: str) -> str:
    """A string as JSON.stringify writes it: only quote, backslash, controls and lone surrogates escaped."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif c < 0x20 or 0xD800 <= c <= 0xDFFF:
            out.append("\\u%04x" % c)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _utf16_key(k: str) -> bytes:
    return k.encode("utf-16-be", "surrogatepass")


def canonical_json(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return js_number(v)
    if isinstance(v, str):
        return js_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(canonical_json(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(js_string(k) + ":" + canonical_json(v[k]) for k in sorted(v, key=_utf16_key)) + "}"
    raise ValueError(f"{type(v).__name__} is not JSON")


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ---- the hashed object and the chain (spec §4, §6, §7) ----------------------------------------------

def hashed_object(event: dict) -> dict:
    """The event without `hash`, and without the added fields that are null or absent."""
    out = {k: v for k, v in event.items() if k != "hash"}
    data = out.get("data")
    if isinstance(data, dict):
        data = dict(data)
        for f in ADDED_PAYLOAD_FIELDS.get(out.get("type"), ()):
            if f in data and data[f] is None:
                del data[f]
        for outer, f in ADDED_NESTED_FIELDS.get(out.get("type"), ()):
            inner = data.get(outer)
            if isinstance(inner, dict) and f in inner and inner[f] is None:
                data[outer] = {k: v for k, v in inner.items() if k != f}
        out["data"] = data
    return out


def event_hash(event: dict) -> str:
    return sha256_hex(event["prevHash"] + "\n" + canonical_json(hashed_object(event)))


def review_view(item: dict) -> dict:
    view = {k: item[k] for k in ("id", "title", "why", "dependsOn", "tool", "inputJson", "retry")}
    if item.get("secret"):
        view["secret"] = item["secret"]
    return view


def plan_digest(goal: str, mode: str | None, items: list[dict]) -> str:
    return sha256_hex(canonical_json({"goal": goal, "items": [review_view(i) for i in items], "mode": mode}))


def verify_chain(plan_id: str, events: list[dict]) -> dict:
    """Spec §7: seq 1..n, prevHash links from genesis, each hash recomputed; plan digests along the way (§9)."""
    prev, findings = GENESIS, []
    goal, mode, items = None, None, []
    result: dict[str, Any] = {"ok": True, "head": None, "seq": 0, "brokenAt": None, "reason": None, "planDigest": None, "findings": findings}
    for i, e in enumerate(events):
        def broken(reason: str) -> dict:
            result.update(ok=False, head=None, brokenAt=e.get("seq"), reason=reason)
            return result
        if e.get("planId") != plan_id:
            return broken("plan_mismatch")
        if e.get("seq") != i + 1:
            return broken("seq_gap")
        if e.get("prevHash") != prev:
            return broken("prev_mismatch")
        try:
            actual = event_hash(e)
        except (ValueError, KeyError, TypeError) as err:
            return broken(f"hash_mismatch ({err})")
        if actual != e.get("hash"):
            return broken("hash_mismatch")
        prev = e["hash"]
        result.update(seq=e["seq"], head=prev)
        t, d = e.get("type"), e.get("data") or {}
        if t == "PlanCreated":
            goal, mode = d.get("goal"), d.get("mode")
        elif t == "ItemAdded":
            items.append(d["item"])
        elif t in DIGEST_EVENTS and goal is not None:
            want = plan_digest(goal, mode, items)
            if d.get("digest") != want:
                findings.append({"kind": "digest_mismatch", "seq": e["seq"], "detail": f"{t}.digest {d.get('digest')} but the plan digest is {want}"})
    result["planDigest"] = plan_digest(goal, mode, items) if goal is not None else None
    return result


# ---- Avro (spec §2, §3) -----------------------------------------------------------------------------

def load_contract(schemas_dir: str, root: str = "PlanEvent") -> dict:
    """The envelope from the repo's schemas/ files, fully inlined (each named type defined at its first use)."""
    named: dict[str, Any] = {}
    for d, _, files in os.walk(schemas_dir):
        for f in files:
            if f.endswith(".avsc"):
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    s = json.load(fh)
                named[f"{s.get('namespace', 'planledger')}.{s['name']}"] = s
    seen: set[str] = set()

    def inline(t: Any) -> Any:
        if isinstance(t, str):
            full = t if "." in t else f"planledger.{t}"
            if full in named:
                if full in seen:
                    return full
                seen.add(full)
                return inline(named[full])
            return t
        if isinstance(t, list):
            return [inline(b) for b in t]
        if isinstance(t, dict):
            t = dict(t)
            if t.get("type") == "record":
                seen.add(f"{t.get('namespace', 'planledger')}.{t['name']}")
                t["fields"] = [{**f, "type": inline(f["type"])} for f in t["fields"]]
            elif t.get("type") == "array":
                t["items"] = inline(t["items"])
            elif t.get("type") == "map":
                t["values"] = inline(t["values"])
            elif isinstance(t.get("type"), (dict, list)):
                t["type"] = inline(t["type"])
            return t
        return t

    return inline(named[f"planledger.{root}"])


def _fastavro():
    import fastavro  # imported late: the canonical JSON and chain code above need nothing installed
    return fastavro


def parse(schema: dict) -> Any:
    return _fastavro().parse_schema(schema, _write_hint=False)


def domain_event(record: dict) -> dict:
    """Decoded envelope -> event object (spec §4): `payload` becomes `type` (short name) and `data`."""
    out = {k: v for k, v in record.items() if k != "payload"}
    full, data = record["payload"]
    out["type"] = full.rsplit(".", 1)[-1]
    out["data"] = data
    return out


def decode_event(body: bytes, writer: Any, reader: Any) -> dict:
    rec = _fastavro().schemaless_reader(io.BytesIO(body), writer, reader, return_record_name=True, return_record_name_override=True)
    return domain_event(rec)


def avro_event(event: dict, namespace: str = "planledger") -> dict:
    """Event object -> envelope record for fastavro (payload as a (full name, data) tuple)."""
    rec = {k: v for k, v in event.items() if k not in ("type", "data")}
    rec["payload"] = (f"{namespace}.{event['type']}", event["data"])
    return rec


def split_wire(value: bytes) -> tuple[int, bytes]:
    """Confluent framing (spec §2): magic byte 0, big-endian int32 schema id, Avro binary body."""
    if value is None or len(value) < 5:
        raise ValueError("shorter than the 5-byte Confluent header")
    if value[0] != 0:
        raise ValueError(f"magic byte {value[0]}, expected 0")
    return int.from_bytes(value[1:5], "big", signed=True), value[5:]


def parse_key(key: bytes | None) -> tuple[str, int] | None:
    if key is None:
        return None
    text = key.decode("utf-8", "replace")
    i = text.rfind(":")
    if i <= 0 or not text[i + 1:].isdigit():
        return None
    return text[:i], int(text[i + 1:])


def partition_for(plan_id: str, partitions: int) -> int:
    """FNV-1a 32-bit of the plan id's UTF-8 bytes, modulo the partition count (spec §1)."""
    h = 0x811C9DC5
    for b in plan_id.encode("utf-8"):
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h % partitions


def payload_kind(text: Any) -> str:
    """Spec §8/§9: a payload text is a blob reference, an encryption envelope, or inline JSON."""
    if not isinstance(text, str):
        return "none"
    if text.startswith('{"$blob":'):
        return "blob"
    if text.startswith('{"$enc":'):
        return "encrypted"
    return "inline"


def blob_refs(events: list[dict]) -> list[dict]:
    refs = []
    for e in events:
        d = e.get("data") or {}
        for text in (d.get("item", {}).get("inputJson") if isinstance(d.get("item"), dict) else None, d.get("outputJson"), d.get("stateJson"), d.get("valueJson")):
            if payload_kind(text) == "blob":
                r = json.loads(text)["$blob"]
                if canonical_json({"$blob": r}) == text:
                    refs.append({"seq": e["seq"], **r})
    return refs


def payload_counts(events: list[dict]) -> dict:
    counts = {"inline": 0, "blob": 0, "encrypted": 0}
    for e in events:
        d = e.get("data") or {}
        for text in (d.get("item", {}).get("inputJson") if isinstance(d.get("item"), dict) else None, d.get("outputJson"), d.get("stateJson"), d.get("valueJson")):
            k = payload_kind(text)
            if k != "none":
                counts[k] += 1
    return counts


# ---- bundle (spec §10) ------------------------------------------------------------------------------

def verify_bundle(bundle: dict, contract: dict | None = None) -> dict:
    fastavro = _fastavro()
    plan_id = bundle["planId"]
    events = [be["event"] for be in bundle["events"]]
    findings: list[dict] = []
    reader = parse(contract) if contract is not None else None
    writers: dict[str, Any] = {}
    for be in bundle["events"]:
        e, sid = be["event"], str(be["schemaId"])
        if sid not in bundle["schemas"]:
            findings.append({"kind": "schema_missing", "seq": e.get("seq"), "detail": f"schema id {sid} is not in the bundle"})
            continue
        if sid not in writers:
            writers[sid] = parse(bundle["schemas"][sid])
        rec = avro_event(e)
        buf = io.BytesIO()
        try:
            fastavro.schemaless_writer(buf, writers[sid], rec)
            again = decode_event(buf.getvalue(), writers[sid], reader)
        except Exception as err:  # noqa: BLE001 - any encoder refusal is a finding
            findings.append({"kind": "schema_mismatch", "seq": e.get("seq"), "detail": f"does not fit writer schema {sid}: {err}"})
            continue
        if canonical_json(hashed_object(again)) != canonical_json(hashed_object(e)):
            findings.append({"kind": "round_trip", "seq": e.get("seq"), "detail": f"an Avro round trip through schema {sid} changes the hashed object"})
        if be.get("hash") != e.get("hash"):
            findings.append({"kind": "recorded_hash", "seq": e.get("seq"), "detail": "the bundle's per-event hash differs from the event's"})
    chain = verify_chain(plan_id, events)
    findings += chain.pop("findings")
    if chain["ok"]:
        if bundle["chain"]["length"] != len(events) or bundle["chain"]["head"] != chain["head"]:
            findings.append({"kind": "head", "seq": chain["seq"], "detail": f"chain ends at seq {chain['seq']} head {chain['head']}, the bundle records length {bundle['chain']['length']} head {bundle['chain']['head']}"})
        if bundle.get("final", {}).get("planDigest") not in (None, chain["planDigest"]):
            findings.append({"kind": "digest_mismatch", "seq": chain["seq"], "detail": f"final planDigest {bundle['final']['planDigest']} but the items give {chain['planDigest']}"})
    return {"planId": plan_id, "source": "bundle", "events": len(events), **chain, "payloads": payload_counts(events), "findings": findings}


# ---- live topic (spec §1, §11) ----------------------------------------------------------------------

class Registry:
    def __init__(self, url: str | None, schemas_dir: str | None):
        self.url, self.schemas_dir, self.cache = (url or "").rstrip("/"), schemas_dir, {}

    def writer(self, sid: int) -> Any:
        if sid not in self.cache:
            if self.url:
                req = urllib.request.Request(f"{self.url}/schemas/ids/{sid}")
                user = os.environ.get("PLAN_LEDGER_REGISTRY_USERNAME")
                if user:
                    token = base64.b64encode(f"{user}:{os.environ.get('PLAN_LEDGER_REGISTRY_PASSWORD', '')}".encode()).decode()
                    req.add_header("Authorization", f"Basic {token}")
                with urllib.request.urlopen(req, timeout=10) as r:
                    schema = json.loads(json.loads(r.read())["schema"])
            else:
                schema = load_contract(self.schemas_dir)
            self.cache[sid] = parse(schema)
        return self.cache[sid]


def read_partitions(conf: dict, partitions: list, offset: Any, timeout_s: float = 60.0, isolation: str = "read_committed") -> dict:
    """Every committed record of each (topic, partition) from `offset` to its end (read_committed: the
    LSO), by one consumer, keyed by (topic, partition) in offset order; with isolation
    "read_uncommitted", every record to the high watermark, aborted ones included. One consumer for all:
    a consumer per partition spent about a second each on its start and close."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    import time
    out: dict = {(t, p): [] for t, p in partitions}
    if not out:
        return out
    c = Consumer({**conf, "group.id": "plan-ledger-verify-py", "enable.auto.commit": False, "enable.partition.eof": True, "isolation.level": isolation})
    try:
        c.assign([TopicPartition(t, p, offset) for t, p in out])
        pending, deadline = set(out), time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    pending.discard((m.topic(), m.partition()))
                    continue
                raise RuntimeError(str(m.error()))
            out[(m.topic(), m.partition())].append(m)
        if pending:
            raise TimeoutError(f"{', '.join(f'{t}/{p}' for t, p in sorted(pending))} not read to the end in {timeout_s} s")
        return out
    finally:
        c.close()


def read_partition(conf: dict, topic: str, partition: int, offset: Any, timeout_s: float = 60.0, isolation: str = "read_committed") -> list:
    """Every committed record of one partition from `offset` to its end; see read_partitions."""
    return read_partitions(conf, [(topic, partition)], offset, timeout_s, isolation)[(topic, partition)]


def verify_live(conf: dict, prefix: str, plan_id: str, registry: Registry, contract: dict, check_blobs: bool = True) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    topic = f"{prefix}.plan-events"
    meta = Consumer({**conf, "group.id": "plan-ledger-verify-py"})
    try:
        partitions = len(meta.list_topics(topic, timeout=10).topics[topic].partitions)
    finally:
        meta.close()
    partition = partition_for(plan_id, partitions)
    records = [m for m in read_partition(conf, topic, partition, OFFSET_BEGINNING) if (parse_key(m.key()) or ("",))[0] == plan_id]
    result = verify_records(plan_id, records, registry, parse(contract))
    if check_blobs:
        result["findings"] += check_blob_refs(conf, prefix, plan_id, partition, result.pop("blobRefs"))
    else:
        result.pop("blobRefs")
    return {**result, "source": f"{topic}/{partition}"}


def census(conf: dict, prefix: str, registry: Registry, contract: dict) -> dict:
    """Every topic of a prefix read to its end at read_committed; every plan of the events topic verified.

    Counts each planId:seq once: a second record under a key is a finding (identical or differing), a
    missing seq is a gap. The records of each topic are counted too (commands, snapshots, ...). The events
    topic is read a second time at read_uncommitted: a record there and not among the committed ones is
    one of an aborted transaction (or one still open), listed by offset under "uncommitted" so a caller
    can check that no reader of its own was shown one."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    meta = Consumer({**conf, "group.id": "plan-ledger-verify-py"})
    try:
        listed = meta.list_topics(timeout=10).topics
    finally:
        meta.close()
    mine = sorted(t for t in listed if t.startswith(f"{prefix}."))
    counts: dict[str, int] = {}
    by_plan: dict[str, list] = {}
    uncommitted: dict[str, list[int]] = {}
    events_topic = f"{prefix}.plan-events"
    tps = [(topic, partition) for topic in mine for partition in sorted(listed[topic].partitions)]
    read = read_partitions(conf, tps, OFFSET_BEGINNING, timeout_s=300.0)
    events_tps = [tp for tp in tps if tp[0] == events_topic]
    everything = read_partitions(conf, events_tps, OFFSET_BEGINNING, timeout_s=300.0, isolation="read_uncommitted")
    for topic, partition in tps:
        counts[topic] = counts.get(topic, 0) + len(read[(topic, partition)])
        if topic != events_topic:
            continue
        committed = set()
        for m in read[(topic, partition)]:
            committed.add(m.offset())
            k = parse_key(m.key())
            by_plan.setdefault(k[0] if k else f"(unparsable key {m.key()!r})", []).append(m)
        extra = [m.offset() for m in everything[(topic, partition)] if m.offset() not in committed]
        if extra:
            uncommitted[str(partition)] = extra
    reader = parse(contract)
    plans, findings = [], []
    for plan_id in sorted(by_plan):
        r = verify_records(plan_id, by_plan[plan_id], registry, reader)
        r.pop("blobRefs")
        plans.append({"planId": plan_id, "events": r["events"], "records": r["records"], "ok": r["ok"], "head": r["head"]})
        findings += [{**f, "planId": plan_id} for f in r["findings"]]
        if not r["ok"]:
            findings.append({"kind": "chain", "planId": plan_id, "seq": r["brokenAt"], "detail": r["reason"]})
    kinds: dict[str, int] = {}
    for f in findings:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    return {
        "prefix": prefix,
        "topics": counts,
        "plans": len(plans),
        "events": sum(p["events"] for p in plans),
        "chainsOk": sum(1 for p in plans if p["ok"]),
        "findingsByKind": kinds,
        "uncommitted": {"records": sum(len(v) for v in uncommitted.values()), "offsets": uncommitted},
        "findings": findings[:200],
        "ok": not findings,
    }


def verify_records(plan_id: str, records: list, registry: Registry, reader: Any) -> dict:
    """One plan's records of the events topic (log order): each seq once, decoded, the chain verified."""
    findings: list[dict] = []
    copies: dict[int, list] = {}
    erased: set[int] = set()
    for m in records:
        k = parse_key(m.key())
        if k is None or k[0] != plan_id:
            findings.append({"kind": "bad_key", "seq": 0, "detail": f"offset {m.offset()}: key {m.key()!r} is not planId:seq"})
            continue
        if m.value() is None:  # a tombstone (erasure, spec §12): the key's record is gone once compacted
            erased.add(k[1])
            continue
        erased.discard(k[1])
        copies.setdefault(k[1], []).append(m)
    for seq in erased:
        copies.pop(seq, None)
    if erased:
        findings.append({"kind": "erased", "seq": min(erased), "detail": f"{len(erased)} event(s) tombstoned (compare the chain head with the erasure record)"})
    events: list[dict] = []
    for seq in sorted(copies):
        ms = copies[seq]
        if len(ms) > 1:
            same = len({bytes(m.value()) for m in ms}) == 1
            findings.append({"kind": "duplicate", "seq": seq, "detail": f"{len(ms)} records of {plan_id}:{seq} ({'identical' if same else 'differing'}) at offsets {', '.join(str(m.offset()) for m in ms)}"})
        m = ms[-1]  # the last copy, as a compacted topic would keep
        try:
            sid, body = split_wire(m.value())
            e = decode_event(body, registry.writer(sid), reader)
        except Exception as err:  # noqa: BLE001
            findings.append({"kind": "undecodable", "seq": seq, "detail": f"offset {m.offset()}: {err}"})
            continue
        if e.get("planId") != plan_id or e.get("seq") != seq or e.get("eventId") != f"{plan_id}:{seq}":
            findings.append({"kind": "key_mismatch", "seq": seq, "detail": f"offset {m.offset()}: key {plan_id}:{seq} holds event {e.get('eventId')}"})
        events.append(e)
    expected = 1
    for seq in sorted(copies):
        if seq != expected:
            findings.append({"kind": "gap", "seq": expected, "detail": f"seq {expected}..{seq - 1} missing"})
        expected = seq + 1
    chain = verify_chain(plan_id, events)
    findings += chain.pop("findings")
    return {"planId": plan_id, "events": len(events), "records": sum(len(v) for v in copies.values()), **chain, "payloads": payload_counts(events), "findings": findings, "blobRefs": blob_refs(events)}


def check_blob_refs(conf: dict, prefix: str, plan_id: str, partition: int, refs: list[dict]) -> list[dict]:
    """Spec §8: each reference's chunks are in the blobs topic and their bytes have its length and sha256."""
    from confluent_kafka import Consumer, TopicPartition
    findings = []
    topic = f"{prefix}.plan-blobs"
    for ref in refs:
        c = Consumer({**conf, "group.id": "plan-ledger-verify-py"})
        try:
            start = c.offsets_for_times([TopicPartition(topic, partition, ref["at"])], timeout=10)[0].offset
        finally:
            c.close()
        if start < 0:
            findings.append({"kind": "blob_missing", "seq": ref["seq"], "detail": f"no blob record at or after {ref['at']}"})
            continue
        chunks: dict[int, bytes] = {}
        for m in read_partition(conf, topic, partition, start):
            k = (m.key() or b"").decode("utf-8", "replace")
            want = f"{plan_id}:{ref['sha256']}:"
            if k.startswith(want) and k[len(want):].isdigit() and m.value() is not None:
                chunks[int(k[len(want):])] = bytes(m.value())
        data = b"".join(chunks.get(i, b"") for i in range(ref["chunks"]))
        if len([i for i in range(ref["chunks"]) if i in chunks]) != ref["chunks"]:
            findings.append({"kind": "blob_missing", "seq": ref["seq"], "detail": f"{len(chunks)} of {ref['chunks']} chunks of {ref['sha256'][:16]}"})
        elif len(data) != ref["bytes"] or hashlib.sha256(data).hexdigest() != ref["sha256"]:
            findings.append({"kind": "blob_mismatch", "seq": ref["seq"], "detail": f"chunks of {ref['sha256'][:16]} hold {len(data)} bytes with another sha256"})
    return findings


# ---- CLI --------------------------------------------------------------------------------------------

def verdict_line(r: dict) -> str:
    if r["ok"]:
        line = f"plan {r['planId']}: chain OK, {r['events']} events, head {r['head']}"
    else:
        line = f"plan {r['planId']}: chain broken at seq {r['brokenAt']} ({r['reason']})"
    return line + (f"; {len(r['findings'])} finding(s)" if r["findings"] else "")


def kafka_conf(brokers: str, env: dict) -> dict:
    """librdkafka settings from the ledger's PLAN_LEDGER_* connection variables (SASL and TLS optional)."""
    conf = {"bootstrap.servers": brokers}
    tls = env.get("PLAN_LEDGER_SSL") == "true"
    if env.get("PLAN_LEDGER_SASL_MECHANISM"):
        conf["security.protocol"] = "SASL_SSL" if tls else "SASL_PLAINTEXT"
        conf["sasl.mechanism"] = env["PLAN_LEDGER_SASL_MECHANISM"].upper()
        conf["sasl.username"] = env.get("PLAN_LEDGER_SASL_USERNAME", "")
        password = env.get("PLAN_LEDGER_SASL_PASSWORD")
        if password is None and env.get("PLAN_LEDGER_SASL_PASSWORD_FILE"):
            with open(env["PLAN_LEDGER_SASL_PASSWORD_FILE"], encoding="utf-8") as fh:
                password = fh.read().strip()
        conf["sasl.password"] = password or ""
    elif tls:
        conf["security.protocol"] = "SSL"
    if tls and env.get("PLAN_LEDGER_SSL_CA_FILE"):
        conf["ssl.ca.location"] = env["PLAN_LEDGER_SSL_CA_FILE"]
    return conf


def main(argv: list[str] | None = None) -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--schemas", default=os.path.join(here, "..", "..", "schemas"), help="the repo's schemas/ directory (reader schema)")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle")
    b.add_argument("file")
    lv = sub.add_parser("live")
    lv.add_argument("--brokers", default=os.environ.get("PLAN_LEDGER_BROKERS"))
    lv.add_argument("--registry", default=os.environ.get("PLAN_LEDGER_REGISTRY_URL"), help="Confluent-compatible registry base URL (e.g. .../apis/ccompat/v7); omit to use --schemas as the writer schema")
    lv.add_argument("--prefix", required=True)
    lv.add_argument("--plan", required=True)
    lv.add_argument("--no-blobs", action="store_true", help="do not read the blobs topic")
    cs = sub.add_parser("census", help="read every topic of a prefix at read_committed; verify every plan")
    cs.add_argument("--brokers", default=os.environ.get("PLAN_LEDGER_BROKERS"))
    cs.add_argument("--registry", default=os.environ.get("PLAN_LEDGER_REGISTRY_URL"))
    cs.add_argument("--prefix", required=True)
    a = p.parse_args(argv)
    try:
        contract = load_contract(a.schemas)
        if a.cmd == "bundle":
            with open(a.file, encoding="utf-8") as fh:
                result = verify_bundle(json.load(fh), contract)
        else:
            if not a.brokers:
                p.error(f"{a.cmd} needs --brokers (or PLAN_LEDGER_BROKERS)")
            conf = kafka_conf(a.brokers, os.environ)
            if a.cmd == "census":
                result = census(conf, a.prefix, Registry(a.registry, a.schemas), contract)
                print(json.dumps(result, indent=2) if a.json else f"census {a.prefix}: {result['plans']} plans, {result['events']} events, {result['chainsOk']} chains OK; findings {result['findingsByKind'] or 'none'}; records per topic {result['topics']}; events records not committed {result['uncommitted']['records']}")
                return 0 if result["ok"] else 1
            result = verify_live(conf, a.prefix, a.plan, Registry(a.registry, a.schemas), contract, check_blobs=not a.no_blobs)
    except (OSError, ValueError, KeyError, RuntimeError, TimeoutError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(verdict_line(result))
        for f in result["findings"]:
            print(f"  {f['kind']} at seq {f['seq']}: {f['detail']}")
    return 0 if result["ok"] and not result["findings"] else 1


if __name__ == "__main__":
    sys.exit(main())
