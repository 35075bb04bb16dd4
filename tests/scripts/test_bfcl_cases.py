#!/usr/bin/env python3
"""`schemaweaver bfcl-cases`: the BFCL sample as OpenAI requests, and the check of calls made
elsewhere (bench/peers.py grades llama-server's answers with it).

The requests' tools must be JSON Schema (the jsonschema package's meta-schema check) without
python type names; BFCL's own answers, written as calls, must be judged correct by the check
and validate under jsonschema against those tools; a wrong tool name, a call without arguments
and a line without calls must be judged wrong.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema

PYTHON_TYPES = {"dict", "float", "tuple", "any", "list"}


def types_in(schema):
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), str):
            yield schema["type"]
        for value in schema.values():
            yield from types_in(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from types_in(value)


def answer_calls(case_answer):
    """The first possible value of every argument an answer sets ("" marks an optional one)."""
    calls = []
    for expected in case_answer["ground_truth"]:
        (name, params), = expected.items()
        arguments = {k: v[0] for k, v in params.items() if v and v[0] != ""}
        calls.append({"name": name, "arguments": arguments})
    return calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    selection = ["--data", args.data, "--sample", "100", "--seed", "1"]
    answers = {}
    for path in Path(args.data, "possible_answer").glob("BFCL_v4_*.json"):
        for line in path.read_text().splitlines():
            if line.strip():
                answer = json.loads(line)
                answers[answer["id"]] = answer

    with tempfile.TemporaryDirectory() as tmp:
        requests_path = Path(tmp, "requests.jsonl")
        subprocess.run([args.cli, "bfcl-cases", *selection, "--requests", str(requests_path)], check=True)
        requests = [json.loads(line) for line in requests_path.read_text().splitlines()]
        assert len(requests) == 100, len(requests)
        lines, schema_valid, calls_made = [], 0, 0
        for r in requests:
            assert r["messages"] and r["messages"][-1]["role"] == "user", r["id"]
            for tool in r["tools"]:
                parameters = tool["function"]["parameters"]
                jsonschema.Draft202012Validator.check_schema(parameters)
                left = PYTHON_TYPES & set(types_in(parameters))
                assert not left, f"{r['id']}: python type names left: {left}"
            calls = answer_calls(answers[r["id"]])
            schemas = {t["function"]["name"]: t["function"]["parameters"] for t in r["tools"]}
            for call in calls:
                calls_made += 1
                try:
                    jsonschema.Draft202012Validator(schemas[call["name"]]).validate(call["arguments"])
                    schema_valid += 1
                except jsonschema.ValidationError as e:
                    print(f"{r['id']}: BFCL's answer does not validate: {e.message}")
            # Half the lines carry arguments as JSON text, as an OpenAI server sends them.
            if len(lines) % 2:
                calls = [{"name": c["name"], "arguments": json.dumps(c["arguments"])} for c in calls]
            lines.append({"id": r["id"], "calls": calls})
        wrong = [
            {"id": requests[0]["id"], "calls": [{"name": "no_such_tool", "arguments": {}}]},
            {"id": requests[1]["id"], "calls": [], "error": "the model answered in text"},
            {"id": requests[2]["id"], "calls": [{"name": requests[2]["tools"][0]["function"]["name"],
                                                 "arguments": "{not json"}]},
        ]
        calls_path = Path(tmp, "calls.jsonl")
        calls_path.write_text("".join(json.dumps(l) + "\n" for l in lines + wrong))
        checked = subprocess.run([args.cli, "bfcl-cases", *selection, "--check", str(calls_path)], check=True,
                                 capture_output=True, text=True)
        verdicts = [json.loads(line) for line in checked.stdout.splitlines()]
        assert len(verdicts) == 103, len(verdicts)
        failed = [v for v in verdicts[:100] if not v["valid"]]
        assert not failed, f"BFCL's own answers judged wrong: {failed[:3]}"
        assert not any(v["valid"] for v in verdicts[100:]), verdicts[100:]
        assert "100 of 103 correct" in checked.stderr, checked.stderr
        # An id outside the sample is an error, not a silent skip.
        calls_path.write_text(json.dumps({"id": "simple_python_99999", "calls": []}) + "\n")
        outside = subprocess.run([args.cli, "bfcl-cases", *selection, "--check", str(calls_path)],
                                 capture_output=True, text=True)
        assert outside.returncode != 0 and "is not a sampled case" in outside.stderr, outside.stderr
    print(f"{calls_made} answer calls: {schema_valid} validate under jsonschema")
    assert schema_valid == calls_made, "the tools as JSON Schema must admit BFCL's own answers"
    print("bfcl-cases checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
