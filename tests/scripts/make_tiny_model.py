#!/usr/bin/env python3
"""Writes a tiny random-weight model that speaks a family's tokenizer and chat template.

For tests of model families whose weights cannot be fetched here: the tokenizer comes whole from
one of llama.cpp's vocabulary-only GGUFs (the sdist's vendor/llama.cpp/models/ggml-vocab-*.gguf),
the chat template from a template file (vendor/llama.cpp/models/templates/*.jinja), and the
weights are random: a llama-architecture transformer of two layers, 64 wide, its output matrix
tied to the token embeddings (8-bit), a few MiB for the largest vocabularies. What it writes is
noise, but noise in the family's tokens: a grammar decides every token of a call, so the
call's syntax, its tokenization and every mode's passes are the family's.

    python3 make_tiny_model.py --vocab ggml-vocab-qwen2.gguf --template Qwen-Qwen3-0.6B.jinja -o qwen3-tiny.gguf
        [--seed 1] [--layers 2] [--width 64] [--cache DIR]

With --cache, a model made before from the same script, vocabulary, template and settings is
copied from DIR instead of made again (reading a large vocabulary takes seconds per model); models
unused for 30 days leave it.
"""
import argparse
import hashlib
import os
import shutil
import sys
import time

import numpy as np
import gguf

ARCH = "llama"


def copy_tokenizer(reader, writer):
    """Every tokenizer.* key of the vocabulary file, with its own value types."""
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer.") or key == "tokenizer.chat_template":
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, field.contents(), vtype, sub_type)


def add_weights(writer, vocab_size, width, layers, ffn, heads, kv_heads, random):
    def normal(*shape):
        return (random.standard_normal(shape) * 0.5 / np.sqrt(shape[-1])).astype(np.float32)

    # The embeddings (and the tied output) in 8 bits: the one matrix as large as the vocabulary.
    embeddings = normal(vocab_size, width)
    writer.add_tensor("token_embd.weight", gguf.quants.quantize(embeddings, gguf.GGMLQuantizationType.Q8_0),
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    head = width // heads
    for layer in range(layers):
        prefix = f"blk.{layer}."
        writer.add_tensor(prefix + "attn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(prefix + "attn_q.weight", normal(width, width).astype(np.float16))
        writer.add_tensor(prefix + "attn_k.weight", normal(kv_heads * head, width).astype(np.float16))
        writer.add_tensor(prefix + "attn_v.weight", normal(kv_heads * head, width).astype(np.float16))
        writer.add_tensor(prefix + "attn_output.weight", normal(width, width).astype(np.float16))
        writer.add_tensor(prefix + "ffn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(prefix + "ffn_gate.weight", normal(ffn, width).astype(np.float16))
        writer.add_tensor(prefix + "ffn_up.weight", normal(ffn, width).astype(np.float16))
        writer.add_tensor(prefix + "ffn_down.weight", normal(width, ffn).astype(np.float16))


def cache_key(args):
    """What the model written depends on: this script, the inputs' bytes and the settings."""
    digest = hashlib.sha256()
    for path in [__file__, args.vocab] + ([args.template] if args.template else []):
        with open(path, "rb") as f:
            digest.update(f.read())
    digest.update(f"{args.seed} {args.layers} {args.width}".encode())
    return digest.hexdigest()[:32]


def write_model(args, path):
    """The tiny model, written whole to `path` (through a partial file: a failed run leaves none)."""
    reader = gguf.GGUFReader(args.vocab)
    if "tokenizer.ggml.tokens" not in reader.fields:
        sys.exit(f"make_tiny_model.py: {args.vocab} holds no tokenizer")
    vocab_size = len(reader.fields["tokenizer.ggml.tokens"].data)
    if args.template:
        with open(args.template, encoding="utf-8") as f:
            template = f.read()
    elif "tokenizer.chat_template" in reader.fields:
        template = reader.fields["tokenizer.chat_template"].contents()
    else:
        template = None

    heads, kv_heads, ffn = 4, 2, 2 * args.width
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"  # two runs may make the same cached model at once
    writer = gguf.GGUFWriter(partial, ARCH)
    writer.add_name(f"tiny random {args.vocab.rsplit('/', 1)[-1]}")
    writer.add_context_length(4096)
    writer.add_embedding_length(args.width)
    writer.add_block_count(args.layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(args.width // heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab_size)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    copy_tokenizer(reader, writer)
    if template is not None:
        writer.add_chat_template(template)
    add_weights(writer, vocab_size, args.width, args.layers, ffn, heads, kv_heads, np.random.default_rng(args.seed))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(partial, path)


def forget_unused(cache, days=30):
    """Models no run has used for `days` (their inputs or this script changed since)."""
    for entry in os.scandir(cache):
        if entry.name.endswith(".gguf") and time.time() - entry.stat().st_mtime > days * 86400:
            os.remove(entry.path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", required=True, help="a vocabulary-only GGUF (ggml-vocab-*.gguf)")
    parser.add_argument("--template", help="the chat template file (Jinja); the vocabulary file's own if not given")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64, help="a multiple of 32")
    parser.add_argument("--cache", help="a folder of models made before, reused when their inputs are the same")
    args = parser.parse_args()
    if args.width % 32 or args.width <= 0:
        sys.exit("make_tiny_model.py: --width must be a positive multiple of 32")

    if not args.cache:
        write_model(args, args.out)
        return 0
    cached = os.path.join(args.cache, cache_key(args) + ".gguf")
    if os.path.exists(cached):
        os.utime(cached)
    else:
        write_model(args, cached)
        forget_unused(args.cache)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    shutil.copyfile(cached, args.out + ".partial")
    os.replace(args.out + ".partial", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
