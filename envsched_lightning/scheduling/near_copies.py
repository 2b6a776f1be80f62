"""Near-copy groups: tasks so alike that a second one in the same batch teaches little more.

Generated pools are templates: in BFCL's live categories up to 136 tasks offer one API document,
and a generated world instantiates one prompt many times. The similarity penalty reads a kNN graph,
so a pick penalises only its k nearest copies; a cluster of a hundred gets through. Here every
task gets a group instead, whatever the group's size: tasks whose token sets (one token for the
whole metadata, one per word 3-gram of their `text`) have a Jaccard similarity of at least
`threshold` end in one group (transitively), found by MinHash signatures and LSH banding in
O(tokens x hashes), no pairwise pass. Without text, copies are tasks with equal metadata.

Tasks with identical token sets are hashed once, so a pool of 100k tasks from a few hundred
templates costs the templates, not the tasks.
"""

from __future__ import annotations

import re

import numpy as np

from .task_table import TaskTable

_PRIME = (1 << 31) - 1  # universal hashing modulus: a * x + b stays inside int64
_WORDS = re.compile(r"\w+")
_MIX = np.uint64(0x9E3779B97F4A7C15)


def near_copy_groups(table: TaskTable, threshold: float = 0.6, num_hashes: int = 64, bands: int = 32,
                     seed: int = 0) -> np.ndarray:  # fmt: skip
    """int64[N]: each task's group, the smallest task index in it (a task alone is its own group).

    `threshold`: the least estimated Jaccard similarity of two tasks' token sets that joins them;
    `num_hashes` MinHash values per task, cut into `bands` LSH bands (a pair meets in some band with
    probability 1 - (1 - J^r)^bands, r = num_hashes / bands: at the defaults, 32 bands of 2, above
    0.999 for J = 0.6; a pair meets the first task of each bucket it shares, so cost stays linear)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"near-copy threshold must be in (0, 1], got {threshold}")
    if num_hashes < 1 or bands < 1 or num_hashes % bands:
        raise ValueError(f"num_hashes ({num_hashes}) must be a positive multiple of bands ({bands})")
    n = len(table)
    indptr, tokens = task_tokens(table)
    rows, first = _distinct_rows(indptr, tokens)  # rows[i]: task i's distinct token set
    sig = _minhash(indptr, tokens, first, num_hashes, seed)
    labels = _join(sig, threshold, bands)  # per distinct set: its component's smallest set
    # a group is named by its smallest task: the first task of the component's smallest set
    set_group = labels[rows]
    out = np.full(int(set_group.max(initial=-1)) + 1, n, np.int64)
    np.minimum.at(out, set_group, np.arange(n))
    return out[set_group]


def task_tokens(table: TaskTable) -> tuple[np.ndarray, np.ndarray]:
    """(indptr int64[N+1], token int64[nnz]): per task, one token for its whole metadata (environment,
    tools, state keys, verifier, reward type, features with their values: tasks share it only when
    all of it is equal) and one per word 3-gram of its text, as integer ids (the same pool gives the
    same ids in every process). Without text, copies are tasks with equal metadata; with text, the
    text decides: one shared token among a text's dozens counts little."""
    n = len(table)
    mptr, mtok = metadata_tokens(table)
    meta, _ = _distinct_rows(mptr, mtok)
    text_ptr, text_tok = _text_tokens(table)
    lens = 1 + np.diff(text_ptr)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=indptr[1:])
    out = np.empty(int(indptr[-1]), np.int64)
    out[indptr[:-1]] = meta
    rest = np.ones(out.shape[0], bool)
    rest[indptr[:-1]] = False
    out[rest] = text_tok + n  # text ids after every metadata id
    return indptr, out


def metadata_tokens(table: TaskTable) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, token) of every task's metadata: environment, tools, state keys, verifier, reward
    type, and each feature with its value rounded to 2 decimals."""
    n = len(table)
    v = len(table.vocab)
    ptr, kind, code = table.token_lists(("tools", "state_keys", "verifier", "reward_type"))
    meta = kind.astype(np.int64) * v + code  # a tool and a state key with one name are different tokens
    fptr, fname, fval = table.features
    feat = (np.round(fval, 2) * 100.0).astype(np.int64) * v + fname + (1 << 42)
    env = table.env_ids.astype(np.int64) + (1 << 41)
    parts = [(np.arange(n + 1, dtype=np.int64), env), (ptr, meta), (fptr, feat)]
    lens = sum(np.diff(p) for p, _ in parts)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=indptr[1:])
    out = np.empty(int(indptr[-1]), np.int64)
    offset = indptr[:-1].copy()
    for p, t in parts:
        k = np.diff(p)
        row = np.repeat(np.arange(n), k)
        out[offset[row] + np.arange(t.shape[0]) - p[:-1][row]] = t
        offset += k
    return indptr, out


def _text_tokens(table: TaskTable) -> tuple[np.ndarray, np.ndarray]:
    """Word 3-grams of every task's text (lower case; a text of fewer words is one token), as ids
    interned in order of appearance."""
    n = len(table)
    if table.text is None:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64)
    ids: dict[str, int] = {}
    ptr = np.zeros(n + 1, np.int64)
    out: list[int] = []
    for i in range(n):
        words = _WORDS.findall(table.text_of(i).lower())
        grams = {" ".join(words[j : j + 3]) for j in range(max(1, len(words) - 2))} if words else set()
        out.extend(ids.setdefault(g, len(ids)) for g in sorted(grams))
        ptr[i + 1] = len(out)
    return ptr, np.asarray(out, np.int64)


def _distinct_rows(indptr: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(set id of each task int64[N], first task of each set int64[S]): tasks with the same token
    set (an order-free hash of it) share a set id."""
    with np.errstate(over="ignore"):
        mixed = (tokens.astype(np.uint64) + np.uint64(1)) * _MIX
        mixed ^= mixed >> np.uint64(29)
        mixed *= np.uint64(0xBF58476D1CE4E5B9)
        mixed ^= mixed >> np.uint64(32)
        # every task has at least its environment token, so no row is empty
        h = np.add.reduceat(mixed, indptr[:-1]) + np.diff(indptr).astype(np.uint64) * np.uint64(0x94D049BB133111EB)
    _, first, rows = np.unique(h, return_index=True, return_inverse=True)
    return rows.astype(np.int64).reshape(-1), first.astype(np.int64)


def _minhash(indptr: np.ndarray, tokens: np.ndarray, tasks: np.ndarray, num_hashes: int, seed: int) -> np.ndarray:
    """int64[len(tasks), num_hashes]: the MinHash signature of each of `tasks`' token sets."""
    lens = np.diff(indptr)[tasks]
    row = np.repeat(np.arange(tasks.shape[0]), lens)
    take = indptr[tasks][row] + np.arange(row.shape[0]) - np.repeat(np.cumsum(lens) - lens, lens)
    tok = tokens[take] % _PRIME
    starts = np.cumsum(lens) - lens
    rng = np.random.default_rng([seed, 7])
    a = rng.integers(1, _PRIME, num_hashes)
    b = rng.integers(0, _PRIME, num_hashes)
    sig = np.empty((tasks.shape[0], num_hashes), np.int64)
    for j in range(num_hashes):  # every set holds its environment token: no empty row
        sig[:, j] = np.minimum.reduceat((a[j] * tok + b[j]) % _PRIME, starts)
    return sig


def _join(sig: np.ndarray, threshold: float, bands: int) -> np.ndarray:
    """int64[S]: connected components (smallest member) of the pairs that share an LSH band and
    whose signatures agree on at least `threshold` of their values."""
    s, h = sig.shape
    r = h // bands
    src, dst = [], []
    for band in range(bands):
        part = sig[:, band * r : (band + 1) * r]
        _, bucket = np.unique(part, axis=0, return_inverse=True)
        bucket = bucket.reshape(-1)
        head = np.full(int(bucket.max(initial=-1)) + 1, s, np.int64)
        np.minimum.at(head, bucket, np.arange(s))
        other = head[bucket]
        pair = other != np.arange(s)
        a, b = np.flatnonzero(pair), other[pair]
        agree = (sig[a] == sig[b]).mean(1) >= threshold - 1e-9
        src.append(a[agree])
        dst.append(b[agree])
    return _components(s, np.concatenate(src), np.concatenate(dst))


def _components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """int64[n]: the smallest node of each node's connected component (label propagation with
    pointer jumping: a few passes over the edges)."""
    label = np.arange(n, dtype=np.int64)
    while src.size:
        low = np.minimum(label[src], label[dst])
        before = label.copy()
        np.minimum.at(label, src, low)
        np.minimum.at(label, dst, low)
        while True:  # pointer jumping: every node to its label's label
            jumped = label[label]
            if np.array_equal(jumped, label):
                break
            label = jumped
        if np.array_equal(label, before):
            break
    return label
