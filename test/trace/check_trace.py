#!/usr/bin/env python3
"""Checks a timeline written by EMBER_TRACE (docs/runtime.md, "Timeline (EMBER_TRACE)").

  check_trace.py --schema trace_event.schema.json [--run PROGRAM] --kernel reduce TRACE.json

With --run, PROGRAM is first run with EMBER_API=cpu (unless the environment sets EMBER_API) and
EMBER_TRACE=TRACE.json, and must succeed. The file must then validate against the schema (the
Trace Event Format, checked by the small JSON-Schema subset below: python3's jsonschema is not
required) and hold what a traced run of a kernel holds: a compile span of the kernel with its
cache lookup inside, copy spans and the kernel's span on the host thread and on a device stream
track, every duration positive, every track named, every flow arrow's two ends, the spans of each
track nested or apart, and the device spans of each stream apart and in the order of their
enqueues. --self-test checks that broken timelines are rejected. Exit status 0 when all holds, 1
otherwise (each problem on stderr).
"""

import argparse
import copy
import json
import os
import subprocess
import sys

# Slack for microseconds written with three decimals and read as floats.
SLACK = 0.0015

ANNOTATIONS = {"$schema", "$id", "title", "description", "definitions"}


class SchemaError(Exception):
    pass


def resolve(root, ref):
    if not ref.startswith("#/"):
        raise SchemaError("only local $ref are supported: " + ref)
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def type_ok(value, name):
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "null":
        return value is None
    raise SchemaError("unknown type " + name)


def validate(value, schema, root, path="$"):
    """The problems of `value` against `schema` (the subset of JSON Schema the repo's schema uses)."""
    problems = []
    for key in schema:
        if key not in ANNOTATIONS and key not in {
                "$ref", "type", "properties", "required", "additionalProperties", "items", "enum",
                "const", "minimum", "minLength", "oneOf"}:
            raise SchemaError("keyword '%s' is not supported by check_trace.py" % key)
    if "$ref" in schema:
        problems += validate(value, resolve(root, schema["$ref"]), root, path)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(type_ok(value, n) for n in names):
            return problems + ["%s: %r is not of type %s" % (path, value, "/".join(names))]
    if "const" in schema and value != schema["const"]:
        problems.append("%s: %r is not %r" % (path, value, schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        problems.append("%s: %r is not one of %r" % (path, value, schema["enum"]))
    if "minimum" in schema and type_ok(value, "number") and value < schema["minimum"]:
        problems.append("%s: %r is below %r" % (path, value, schema["minimum"]))
    if "minLength" in schema and isinstance(value, str) and len(value) < schema["minLength"]:
        problems.append("%s: %r is shorter than %d" % (path, value, schema["minLength"]))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                problems.append("%s: '%s' is missing" % (path, key))
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                problems += validate(item, properties[key], root, path + "." + key)
            elif extra is False:
                problems.append("%s: '%s' is not allowed" % (path, key))
            elif isinstance(extra, dict):
                problems += validate(item, extra, root, path + "." + key)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            problems += validate(item, schema["items"], root, "%s[%d]" % (path, i))
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if not validate(value, s, root, path)]
        if len(matches) != 1:
            ph = value.get("ph") if isinstance(value, dict) else None
            # Name what the branch for this phase says, which is what a reader wants to know.
            near = [s for s in schema["oneOf"] if ph is not None and ph_allowed(resolve_branch(s, root), ph)]
            detail = "; ".join(validate(value, near[0], root, path)) if near else ""
            problems.append("%s: matches %d of the %d alternatives%s" %
                            (path, len(matches), len(schema["oneOf"]), (": " + detail) if detail else ""))
    return problems


def resolve_branch(schema, root):
    return resolve(root, schema["$ref"]) if "$ref" in schema else schema


def ph_allowed(schema, ph):
    spec = schema.get("properties", {}).get("ph", {})
    return spec.get("const") == ph or ph in spec.get("enum", [])


def check_timeline(doc, kernel, schema):
    """The problems of a timeline of a run that compiled and launched `kernel`."""
    problems = validate(doc, schema, schema)
    if problems:
        return problems
    events = doc["traceEvents"]
    process_names, thread_names = {}, {}
    spans, starts, ends = [], {}, {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "process_name":
            process_names[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["ph"] == "X":
            spans.append(e)
        elif e["ph"] == "s":
            starts[e["id"]] = starts.get(e["id"], 0) + 1
        elif e["ph"] == "f":
            ends[e["id"]] = ends.get(e["id"], 0) + 1

    hosts = [pid for pid, name in process_names.items() if name.endswith("(host)")]
    if len(hosts) != 1:
        return problems + ["expected one host process, found %r" % process_names]
    host = hosts[0]

    def where(e):
        return "'%s' on %s" % (e["name"], thread_names.get((e["pid"], e["tid"]), "an unnamed track"))

    for e in spans:
        if (e["pid"], e["tid"]) not in thread_names:
            problems.append("%s: its track has no thread_name" % where(e))
        if e["pid"] not in process_names:
            problems.append("%s: its process has no process_name" % where(e))
    host_spans = [e for e in spans if e["pid"] == host]
    device_spans = [e for e in spans if e["pid"] != host]

    def positive(found, what):
        if not found:
            problems.append("no %s" % what)
        for e in found:
            if e["dur"] <= 0:
                problems.append("%s: duration %r is not positive" % (where(e), e["dur"]))
        return found

    def inside(inner, outer):
        return inner["ts"] >= outer["ts"] - SLACK and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + SLACK

    compiles = positive([e for e in host_spans if e["cat"] == "compile" and e["name"] == "compile " + kernel],
                        "compile span of '%s' on the host" % kernel)
    lookups = positive([e for e in host_spans if e["name"] == "cache lookup" and e["args"].get("kernel") == kernel],
                       "cache lookup of '%s'" % kernel)
    for lookup in lookups:
        if not any(inside(lookup, c) and c["tid"] == lookup["tid"] for c in compiles):
            problems.append("the cache lookup of '%s' is not inside its compile span" % kernel)
    positive([e for e in host_spans if e["cat"] == "copy"], "copy span on the host")
    positive([e for e in device_spans if e["cat"] == "copy"], "copy span on a device stream")
    positive([e for e in host_spans if e["cat"] == "kernel" and e["name"] == "launch " + kernel],
             "launch span of '%s' on the host" % kernel)
    positive([e for e in device_spans if e["cat"] == "kernel" and e["name"] == kernel],
             "span of kernel '%s' on a device stream" % kernel)

    for flow_id in sorted(set(starts) | set(ends), key=str):
        if starts.get(flow_id, 0) != 1 or ends.get(flow_id, 0) != 1:
            problems.append("flow %r has %d start(s) and %d end(s)" % (flow_id, starts.get(flow_id, 0),
                                                                       ends.get(flow_id, 0)))

    tracks = {}
    for e in spans:
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, track in tracks.items():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        device = key[0] != host
        open_spans = []
        for e in track:
            while open_spans and open_spans[-1]["ts"] + open_spans[-1]["dur"] <= e["ts"] + SLACK:
                open_spans.pop()
            if open_spans:
                if device:
                    problems.append("%s overlaps '%s' on a device stream" % (where(e), open_spans[-1]["name"]))
                elif not inside(e, open_spans[-1]):
                    problems.append("%s overlaps '%s' without nesting" % (where(e), open_spans[-1]["name"]))
            open_spans.append(e)

    # The device spans of a stream come in the order their enqueues were made: the flow arrows
    # join the two.
    enqueue_ts = {}
    for e in events:
        if e["ph"] == "s":
            enqueue_ts[e["id"]] = e["ts"]
    order = {}
    for e in events:
        if e["ph"] == "f" and e["pid"] != host and e["id"] in enqueue_ts:
            order.setdefault((e["pid"], e["tid"]), []).append((e["ts"], enqueue_ts[e["id"]]))
    for key, pairs in order.items():
        by_device = [enqueued for _, enqueued in sorted(pairs)]
        if by_device != sorted(by_device):
            problems.append("the device spans of %s are not in the order of their enqueues" % thread_names.get(key))
    return problems


def self_test(schema):
    """Broken timelines must be rejected, and a good one accepted."""
    host, dev = 100, 1 << 23

    def span(name, cat, pid, tid, ts, dur, args=None):
        return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args or {}}

    good = {"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": host, "tid": 0, "args": {"name": "p (host)"}},
        {"ph": "M", "name": "process_name", "pid": dev, "tid": 0, "args": {"name": "cpu:0: a cpu"}},
        {"ph": "M", "name": "thread_name", "pid": host, "tid": host, "args": {"name": "main thread"}},
        {"ph": "M", "name": "thread_name", "pid": dev, "tid": 1, "args": {"name": "cpu:0 stream 0 (default)"}},
        span("compile k", "compile", host, host, 1.0, 10.0),
        span("cache lookup", "compile", host, host, 2.0, 5.0, {"kernel": "k"}),
        span("copy HtoD", "copy", host, host, 20.0, 2.0),
        {"ph": "s", "name": "enqueue", "cat": "flow", "pid": host, "tid": host, "ts": 20.0, "id": 1},
        span("copy HtoD", "copy", dev, 1, 20.5, 1.0),
        {"ph": "f", "bp": "e", "name": "enqueue", "cat": "flow", "pid": dev, "tid": 1, "ts": 20.5, "id": 1},
        span("launch k", "kernel", host, host, 30.0, 2.0),
        {"ph": "s", "name": "enqueue", "cat": "flow", "pid": host, "tid": host, "ts": 30.0, "id": 2},
        span("k", "kernel", dev, 1, 30.5, 1.0),
        {"ph": "f", "bp": "e", "name": "enqueue", "cat": "flow", "pid": dev, "tid": 1, "ts": 30.5, "id": 2},
    ], "displayTimeUnit": "ms", "otherData": {}}
    failures = []
    if check_timeline(good, "k", schema):
        failures.append("the good timeline was rejected: %s" % check_timeline(good, "k", schema))

    def broken(what, change):
        doc = copy.deepcopy(good)
        change(doc["traceEvents"])
        if not check_timeline(doc, "k", schema):
            failures.append("accepted a timeline with " + what)

    broken("a negative duration", lambda ev: ev[8].update(dur=-1.0))
    broken("a zero-length kernel span", lambda ev: ev[12].update(dur=0.0))
    broken("an unknown phase", lambda ev: ev[6].update(ph="Q"))
    broken("a span without ts", lambda ev: ev[6].pop("ts"))
    broken("an unknown field", lambda ev: ev[6].update(colour="red"))
    broken("a flow without its end", lambda ev: ev.pop(13))
    broken("overlapping device spans", lambda ev: ev[12].update(ts=20.7))
    broken("spans that overlap without nesting", lambda ev: ev[5].update(ts=8.0))
    broken("a cache lookup outside its compile", lambda ev: ev[5].update(ts=12.0, dur=1.0))
    broken("an unnamed track", lambda ev: ev.pop(3))
    broken("no compile span", lambda ev: ev.pop(4))
    broken("device spans out of enqueue order",
           lambda ev: (ev[8].update(ts=40.0), ev[9].update(ts=40.0)))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", nargs="?", help="the timeline file (written first with --run)")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--run", help="a program to run with EMBER_TRACE=TRACE first")
    parser.add_argument("--kernel", default="reduce", help="the kernel the run compiled and launched")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    with open(args.schema) as f:
        schema = json.load(f)

    if args.self_test:
        failures = self_test(schema)
        for f in failures:
            print("check_trace.py self-test: " + f, file=sys.stderr)
        return 1 if failures else 0

    if not args.trace:
        parser.error("a trace file is needed")
    if args.run:
        if os.path.exists(args.trace):
            os.remove(args.trace)
        env = dict(os.environ)
        env.setdefault("EMBER_API", "cpu")
        env["EMBER_TRACE"] = args.trace
        result = subprocess.run([args.run], env=env)
        if result.returncode != 0:
            print("%s exited with status %d" % (args.run, result.returncode), file=sys.stderr)
            return 1
    try:
        with open(args.trace) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print("%s: %s" % (args.trace, e), file=sys.stderr)
        return 1
    problems = check_timeline(doc, args.kernel, schema)
    for p in problems:
        print("%s: %s" % (args.trace, p), file=sys.stderr)
    if not problems:
        spans = sum(1 for e in doc["traceEvents"] if e["ph"] == "X")
        print("%s: %d spans, valid" % (args.trace, spans))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
