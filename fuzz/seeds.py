"""Writes the fuzz targets' seed corpora: the project's tool files and test data, requests and
model outputs shaped like real ones, and BFCL's function docs and possible answers.

    python3 fuzz/seeds.py OUT_DIR [--bfcl BFCL_DATA_DIR]

Standard library only. Each target gets OUT_DIR/<target>/ with one file per seed.
"""
import argparse
import json
import struct
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CALL = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
PATTERNS = ["^[A-Z]{3}$", "^(a+)+b$", "b+c", "^[0-9]{4}-(0[1-9]|1[0-2])$", "[^\\s@]+@[^\\s@]+", "^\\d{1,3}(\\.\\d+)?$",
            "(?:ab|cd)*e?", "^.{2,5}$", "[\\w-]+", "\\u00e9+"]
TEXTS = ["ABC", "aaaab", "xbbcx", "2024-05", "a@b.c", "12.5", "abcde", "héllo", "é\"\\\n"]


def write(folder, name, data):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def tool_files():
    files = sorted((ROOT / "examples").glob("*.json")) + [ROOT / "tests/data" / name for name in
                                                             ("keyword_tools.json", "recursive_tools.json")]
    return [json.loads(f.read_text()) for f in files if f.read_text().strip().startswith("[")]


def bfcl_cases(bfcl, limit):
    if not bfcl:
        return []
    cases = []
    for category in ["simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple"]:
        questions = Path(bfcl) / f"BFCL_v4_{category}.json"
        answers = Path(bfcl) / "possible_answer" / f"BFCL_v4_{category}.json"
        if not questions.exists() or not answers.exists():
            continue
        truth = {json.loads(line)["id"]: json.loads(line)["ground_truth"] for line in answers.open()}
        for line in list(questions.open())[:limit]:
            q = json.loads(line)
            if q["id"] in truth:
                cases.append({"function": q["function"], "ground_truth": truth[q["id"]]})
    return cases


def gguf(kvs, tensors):
    """A GGUF v3 file: metadata (key, type code, packed value) and tensors (name, dims, ggml
    type, data), each tensor's data at a 32-byte aligned offset."""
    def text(s):
        return struct.pack("<Q", len(s.encode())) + s.encode()
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, type_code, value in kvs:
        out += text(key) + struct.pack("<I", type_code) + value
    offset, blobs = 0, b""
    for name, dims, ggml_type, data in tensors:
        out += text(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ggml_type, offset)
        padded = data + b"\0" * (-len(data) % 32)
        blobs += padded
        offset += len(padded)
    return out + b"\0" * (-len(out) % 32) + blobs


def gguf_seeds():
    """Small llama-like GGUF files (F32 tensors), one with its shape keys wrong."""
    u32 = lambda v: struct.pack("<I", v)
    string = lambda s: struct.pack("<Q", len(s.encode())) + s.encode()
    keys = [("general.architecture", 8, string("llama")), ("llama.block_count", 4, u32(1)),
            ("llama.feed_forward_length", 4, u32(64)), ("llama.embedding_length", 4, u32(32)),
            ("llama.attention.head_count", 4, u32(4)), ("llama.attention.head_count_kv", 4, u32(2))]
    tensors = [("token_embd.weight", [32, 8], 0, b"\0" * 32 * 8 * 4),
               ("blk.0.ffn_up.weight", [32, 64], 0, b"\0" * 32 * 64 * 4), ("output_norm.weight", [32], 0, b"\0" * 128)]
    zero_heads = [k if k[0] != "llama.attention.head_count" else (k[0], 4, u32(0)) for k in keys]
    return [gguf(keys, tensors), gguf(zero_heads, tensors[:1]), gguf(keys[:1], [])]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--bfcl")
    args = parser.parse_args()
    out = Path(args.out)
    tools = tool_files()
    cases = bfcl_cases(args.bfcl, 8)
    call_text = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}}, ensure_ascii=False)
    for i, t in enumerate(tools + [c["function"] for c in cases]):
        write(out / "fuzz_tool_schemas", f"tools-{i}", json.dumps(t) + "\0" + call_text)
    for i, (p, t) in enumerate((p, t) for p in PATTERNS for t in TEXTS[:3]):
        write(out / "fuzz_pattern", f"pattern-{i}", p.encode() + b"\0" + t.encode())
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    for i, t in enumerate(tools):
        body = {"model": "m", "messages": messages, "tools": t, "tool_choice": "auto", "stream": i % 2 == 0,
                "max_tokens": 64, "parallel_tool_calls": False, "x_decoding_mode": "schemaweaver/no-padding"}
        write(out / "fuzz_openai_request", f"request-{i}", json.dumps(body))
    for i, text in enumerate([
            "<tool_call>\n" + json.dumps(CALL) + "\n</tool_call>",
            "<tool_call>[" + json.dumps(CALL) + ", " + json.dumps(CALL) + "]</tool_call>",
            json.dumps([CALL]), json.dumps(CALL), "```json\n" + json.dumps(CALL) + "\n```",
            "get_weather(city=\"Paris\")", "{\"name\": \"x\", \"arguments\": {\"a\": [1, {\"b\": \"}\"}]}}",
            "<|tool_call_start|>[get_weather(city=\"Paris\", days=3, at={\"x\": [1, \")\"]}), g()]<|tool_call_end|>",
            "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3,at:{x:[1,<|\"|>}<|\"|>]}}<tool_call|>"
            "<|tool_call>call:g{}<tool_call|>"]):
        write(out / "fuzz_call_output", f"output-{i}", text)
    mcp = [{"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"name": "time", "version": "1"}, "capabilities": {}}},
           {"jsonrpc": "2.0", "id": 2, "result": {"tools": [{"name": "get_time", "inputSchema": {"type": "object",
            "properties": {"tz": {"type": "string"}}, "required": ["tz"]}, "annotations": {"readOnlyHint": True}}],
            "nextCursor": "2"}},
           {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "12:00"}, {"type": "image"}],
            "isError": False}},
           {"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "no such method"}},
           {"jsonrpc": "2.0", "method": "ping", "id": 9}]
    write(out / "fuzz_mcp_messages", "session", "\n".join(json.dumps(m) for m in mcp) + "\n")
    for i, c in enumerate(cases):
        gt = c["ground_truth"]
        calls = [{"name": name, "arguments": {k: v[0] for k, v in args.items() if v}}
                 for entry in gt for name, args in entry.items()]
        write(out / "fuzz_bfcl", f"case-{i}", json.dumps({**c, "calls": calls}))
    for i, data in enumerate(gguf_seeds()):
        write(out / "fuzz_gguf", f"gguf-{i}", data)
    print(f"seeds written to {out}")


if __name__ == "__main__":
    main()
