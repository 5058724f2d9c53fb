#!/usr/bin/env python3
"""Pins llama-server's command-line flags for the flag-check test (tests/api/test_commands.c).

Reads common/arg.cpp from the llama.cpp source that the pinned node-llama-cpp ships as a git
bundle (build/llama/node_modules/node-llama-cpp/llama/gitRelease.bundle, installed by make deps)
and writes tests/data/llama-server-args.txt: one line per flag llama-server accepts, with how
many values it takes. A flag is llama-server's when its option names no examples (common to
every tool, as LLAMA_EXAMPLE_COMMON does too) or names LLAMA_EXAMPLE_SERVER, and does not
exclude it.

    python3 tests/tools/pin_llama_args.py [BUNDLE] > tests/data/llama-server-args.txt
"""
import os
import re
import subprocess
import sys
import tempfile


def split_args(text):
    """Splits text at top-level commas (outside (), {}, [] and string literals)."""
    out, depth, cur, i, n = [], 0, [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in '({[':
            depth += 1
        elif c in ')}]':
            depth -= 1
        if c == ',' and depth == 0:
            out.append(''.join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if ''.join(cur).strip():
        out.append(''.join(cur).strip())
    return out


def matching(text, start):
    """Index of the parenthesis closing the one at start."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == '\\' else 1
        elif c == '(':
            depth += 1
        elif c == ')':
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def options(src):
    for m in re.finditer(r'add_opt\(\s*common_arg\(', src):
        open_paren = m.end() - 1
        close = matching(src, open_paren)
        args = split_args(src[open_paren + 1:close])
        # The statement's tail: .set_examples({...}), .set_excludes({...}) up to ');'.
        tail = src[close + 1:src.find(');', close) + 2]
        names, k = [], 0
        while k < len(args) and args[k].startswith('{'):
            names += re.findall(r'"(-[^"]+)"', args[k])
            k += 1
        rest = args[k:]
        lam = next((i for i, a in enumerate(rest) if a.lstrip().startswith('[')), len(rest))
        values = max(lam - 1, 0)  # hints before the help text, which is last before the lambda
        ex = re.search(r'set_examples\(\{([^}]*)\}\)', tail)
        excl = re.search(r'set_excludes\(\{([^}]*)\}\)', tail)
        server = (not ex or 'LLAMA_EXAMPLE_SERVER' in ex.group(1) or
                  'LLAMA_EXAMPLE_COMMON' in ex.group(1)) and not (
            excl and 'LLAMA_EXAMPLE_SERVER' in excl.group(1))
        if server:
            for name in names:
                yield name, values


def main():
    bundle = sys.argv[1] if len(sys.argv) > 1 else \
        'build/llama/node_modules/node-llama-cpp/llama/gitRelease.bundle'
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(['git', '-c', 'advice.detachedHead=false', 'clone', '-q', bundle, tmp + '/src'], check=True)
        head = subprocess.run(['git', '-C', tmp + '/src', 'rev-parse', 'HEAD'], check=True,
                              capture_output=True, text=True).stdout.strip()
        src = open(os.path.join(tmp, 'src/common/arg.cpp'), encoding='utf-8').read()
    seen = {}
    for name, values in options(src):
        seen.setdefault(name, values)
    print('# llama-server flags and the values each takes, from common/arg.cpp of llama.cpp')
    print('# %s, as node-llama-cpp 3.22.1 ships it (tests/tools/pin_llama_args.py)' % head)
    for name in sorted(seen):
        print(name, seen[name])


if __name__ == '__main__':
    main()
