#!/usr/bin/env python3
"""Writes a synthetic Llama-shaped BF16 safetensors checkpoint (for `fp4kit quantize` throughput runs).

    make_synthetic_checkpoint.py OUT_DIR [--layers 4] [--shards 2] [--seed 0]

Shapes are TinyLlama-1.1B's (hidden 2048, intermediate 5632, 4 KV heads of 64, vocab 32000); with
4 layers the checkpoint is 586 MiB of BF16, 352 MB of it in the quantizable projections. Weights
are 0.02 * N(0, 1) rounded to BF16 (RNE); norms are 1.0. Writes model-0000i-of-0000n.safetensors,
model.safetensors.index.json and config.json. Needs numpy only.
"""
import argparse
import json
import os
import struct

import numpy as np

HIDDEN, INTER, KV, VOCAB = 2048, 5632, 256, 32000


def to_bf16_bits(x):
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def tensors(layers):
    yield "model.embed_tokens.weight", (VOCAB, HIDDEN)
    for l in range(layers):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (HIDDEN,)
        yield p + "self_attn.q_proj.weight", (HIDDEN, HIDDEN)
        yield p + "self_attn.k_proj.weight", (KV, HIDDEN)
        yield p + "self_attn.v_proj.weight", (KV, HIDDEN)
        yield p + "self_attn.o_proj.weight", (HIDDEN, HIDDEN)
        yield p + "post_attention_layernorm.weight", (HIDDEN,)
        yield p + "mlp.gate_proj.weight", (INTER, HIDDEN)
        yield p + "mlp.up_proj.weight", (INTER, HIDDEN)
        yield p + "mlp.down_proj.weight", (HIDDEN, INTER)
    yield "model.norm.weight", (HIDDEN,)
    yield "lm_head.weight", (VOCAB, HIDDEN)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    all_t = list(tensors(a.layers))
    per = -(-len(all_t) // a.shards)
    weight_map, total = {}, 0
    for s in range(a.shards):
        part = all_t[s * per:(s + 1) * per]
        if not part:
            continue
        fname = f"model-{s + 1:05d}-of-{a.shards:05d}.safetensors"
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for name, shape in part:
            n = int(np.prod(shape)) * 2
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
            off += n
        h = json.dumps(header).encode()
        h += b" " * (-len(h) % 8)
        with open(os.path.join(a.out, fname), "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h)
            for name, shape in part:
                if "norm" in name:
                    x = np.ones(shape, np.float32)
                else:
                    x = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
                f.write(to_bf16_bits(x).tobytes())
                weight_map[name] = fname
        total += off
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump({"architectures": ["LlamaForCausalLM"], "hidden_size": HIDDEN, "intermediate_size": INTER,
                   "num_hidden_layers": a.layers, "num_key_value_heads": KV // 64, "vocab_size": VOCAB,
                   "torch_dtype": "bfloat16"}, f, indent=2)
    print(f"wrote {a.out}: {len(all_t)} tensors, {total / 2**20:.1f} MiB BF16")


if __name__ == "__main__":
    main()
