#!/usr/bin/env python3
"""Writes the seed corpora of the model-file fuzz targets (tests/fuzz/corpus/<target>/ for
safetensors, safetensors_index, hub, ollama_manifest and static_path): small inputs in the
shapes the fuzz_<target>.c comments describe, built here from the formats (safetensors headers
as the safetensors library writes them, Hugging Face's index, a Hub's range answer, Ollama's
manifest as tests/server/hf_fixture.c writes it, the web app's paths). Run from anywhere:
python3 tests/fuzz/tools/seeds_models.py. Overwrites only the files it writes."""
import os, json, struct
R = os.path.abspath(os.path.join(os.path.dirname(__file__), '../../..'))
C = R + '/tests/fuzz/corpus'
SEP = b'\n##\n'
SIZES = {'F64': 8, 'F32': 4, 'F16': 2, 'BF16': 2, 'I32': 4, 'U8': 1, 'F8_E4M3': 1, 'F4': 0}

def put(t, name, data):
    os.makedirs(f'{C}/{t}', exist_ok=True)
    open(f'{C}/{t}/{name}', 'wb').write(data if isinstance(data, bytes) else data.encode())

def header(tensors, meta=True, overlap=False):
    """(name, dtype, shape) in order, contiguous data (all at 0 with overlap); returns
    (json bytes, data bytes)."""
    h = {'__metadata__': {'format': 'pt'}} if meta else {}
    off = 0
    for name, dt, shape in tensors:
        n = 1
        for d in shape: n *= d
        size = n * SIZES[dt] if SIZES[dt] else (n + 1) // 2
        begin = 0 if overlap else off
        h[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [begin, begin + size]}
        off = begin + size if not overlap else max(off, size)
    return json.dumps(h, separators=(',', ':')).encode(), off

tiny = [('model.embed_tokens.weight', 'BF16', [32, 16]),
        ('model.layers.0.self_attn.q_proj.weight', 'BF16', [16, 16]),
        ('model.layers.0.input_layernorm.weight', 'F32', [16]),
        ('model.norm.weight', 'F16', [16]),
        ('lm_head.weight', 'BF16', [32, 16])]
awq = [('model.layers.0.mlp.up_proj.qweight', 'I32', [16, 4]),
       ('model.layers.0.mlp.up_proj.scales', 'F16', [1, 32]),
       ('vision_tower.patch_embed.weight', 'BF16', [8, 8]),
       ('model.layers.0.mlp.experts.blocks', 'F4', [4, 8]),
       ('model.layers.0.mlp.experts.scales', 'F8_E4M3', [4])]

# safetensors: mode byte, 4 bytes of extra file size, the header
for mode, tag in ((0, 'unknown-size'), (1, 'on-disk'), (2, 'hub')):
    h, data = header(tiny)
    put('safetensors', f'tiny-{tag}', bytes([mode]) + struct.pack('>I', data) + h)
h, data = header(awq, meta=False)
put('safetensors', 'packed-and-vision', bytes([1]) + struct.pack('>I', data) + h)
h, _ = header([(f't.{i}', 'F64', [1000000000000, 10]) for i in range(40)], overlap=True)
put('safetensors', 'overlapping-flood', bytes([0]) + struct.pack('>I', 0) + h)
h, _ = header(tiny)
put('safetensors', 'past-the-file', bytes([1]) + struct.pack('>I', 0) + h.replace(b'[0,1024]', b'[0,1025]'))

# safetensors_index: Hugging Face's model.safetensors.index.json
names = [t[0] for t in tiny + awq]
idx = {'metadata': {'total_size': 4096},
       'weight_map': {n: f'model-0000{1 + i % 2}-of-00002.safetensors' for i, n in enumerate(names)}}
put('safetensors_index', 'two-shards', json.dumps(idx, indent=2))
put('safetensors_index', 'one-shard', json.dumps({'weight_map': {n: 'model.safetensors' for n in names}}))
put('safetensors_index', 'bad-name', '{"weight_map":{"a":"../x.safetensors","b":".hidden.safetensors"}}')
put('safetensors_index', 'no-map', '{"metadata":{}}')

# hub: a shard's range answer head, config.json, the index, the shard's header
config = json.dumps({'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'hidden_size': 16,
                     'intermediate_size': 32, 'num_attention_heads': 2, 'num_key_value_heads': 1,
                     'num_hidden_layers': 1, 'vocab_size': 32, 'tie_word_embeddings': False,
                     'torch_dtype': 'bfloat16'}).encode()
h, data = header(tiny)
def head(total):
    return (f'HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-7/{total}\r\n'
            'Content-Length: 8\r\nAccept-Ranges: bytes\r\n').encode()
one = json.dumps({'weight_map': {n[0]: 'model.safetensors' for n in tiny}}).encode()
put('hub', 'single-file', SEP.join([head(8 + len(h) + data), config, b'', h]))
put('hub', 'indexed', SEP.join([head(8 + len(h) + data), config, one, h]))
put('hub', 'lying-total', SEP.join([head(9007199254740991), config, b'', h]))
put('hub', 'unknown-total', SEP.join([b'HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-7/*\r\n', config, b'', h]))

# ollama_manifest: a reference, then the tag's manifest
digest = '4b1e8d7a9f5b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5'
manifest = {'schemaVersion': 2, 'mediaType': 'application/vnd.docker.distribution.manifest.v2+json',
            'config': {'mediaType': 'application/vnd.docker.container.image.v1+json',
                       'digest': 'sha256:' + digest, 'size': 485},
            'layers': [{'mediaType': 'application/vnd.ollama.image.model', 'digest': 'sha256:' + digest, 'size': 4920734272},
                       {'mediaType': 'application/vnd.ollama.image.template', 'digest': 'sha256:' + digest, 'size': 1429},
                       {'mediaType': 'application/vnd.ollama.image.license', 'digest': 'sha256:' + digest, 'size': 7627},
                       {'mediaType': 'application/vnd.ollama.image.params', 'digest': 'sha256:' + digest, 'size': 96}]}
put('ollama_manifest', 'llama3.1-8b', b'llama3.1:8b' + SEP + json.dumps(manifest).encode())
put('ollama_manifest', 'registry-tag-q8', b'registry.ollama.ai/library/qwen2.5:32b-instruct-q8_0' + SEP + json.dumps(manifest).encode())
bad = dict(manifest, layers=[{'mediaType': 'application/vnd.ollama.image.model', 'digest': 'sha256:../../etc'}])
put('ollama_manifest', 'bad-digest', b'gemma3' + SEP + json.dumps(bad).encode())

# static_path: the paths a browser asks of a built single-page app, and ones that must not reach files
for i, p in enumerate(['/', '/index.html', '/static/js/main.4f2a1c.js', '/finetune/settings',
                       '/api/models', '/api', '/apix/y.js', '/.env', '/a/../b.js', '/a//b.js',
                       '/assets/.git/config', '//etc/passwd', '/favicon.ico']):
    put('static_path', f'path-{i:02d}', p)
print('written')
