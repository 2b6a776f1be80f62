"""An offline byte-level BPE tokenizer with Qwen3's special tokens and a Qwen3-style chat template.

The real Qwen3 vocabulary cannot be built offline, so CPU runs and tests train a small BPE on text
the model will actually see: every task of the given environments rendered as a whole scripted
episode (system block with its tool schemas, prompt, oracle turns, real tool results), plus a
fixed text. Byte-level BPE covers every byte, so any string still
tokenizes; the corpus only decides how compactly. Unlike Qwen's, merges may cross word boundaries
(the ByteLevel pre-tokenizer runs without its split regex), so the JSON tool schemas that fill
most of every prompt shrink to a few dozen tokens: that halves sequence lengths on CPU. Digits are
split one per token, as in Qwen, so a number reads the same in a prompt, a tool call and an answer.
Training takes milliseconds and is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from transformers.utils.chat_template_utils import render_jinja_template

from .chat_template import QWEN3_STYLE_TEMPLATE, TOOLS_FOOTER, TOOLS_HEADER

if TYPE_CHECKING:
    from envsched_lightning.envs.base import Environment, Task

SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
)

FIXED_TEXT = (
    "You are a helpful assistant. Use the tools when they help, then answer briefly.\n"
    "The task is done. I have completed the request. The answer is: yes no true false none null\n"
    "0 1 2 3 4 5 6 7 8 9 10 11 12 20 30 42 100 2024 2025 01 02 03 04 05 06 07 08 09\n"
    "Error: unknown tool. Error: missing argument. Error: invalid value. ok OK done found not found\n"
    "system user assistant tool name arguments type function description parameters properties required\n"
    "string integer number boolean object array enum items\n"
)


def _scripted_conversation(task: Task, env: Environment) -> list[dict[str, Any]]:
    """The task's messages plus its oracle turns and their real tool results (empty script if none)."""
    from envsched_lightning.rollout.agent_loop import default_oracle, tool_message

    # a model user's opening not generated yet: its hint, as good for a tokenizer and free
    messages = [{"role": m["role"], "content": m.hint} if getattr(m, "pending", False) else dict(m) for m in task.messages]
    try:
        script = default_oracle(task, env)
    except ValueError:  # no scripted ground truth: the prompt alone
        return messages
    episode = env.reset(task)
    for text in script:
        parsed, results = episode.turn(text)
        messages.append({"role": "assistant", "content": text})
        messages += [tool_message(r) for r in results]
    return messages


def environment_corpus(env: Environment) -> list[str]:
    """Every task of `env` as a whole scripted episode, rendered by the chat template the model will see.

    Rendering whole episodes (not schema strings on their own) lets merges learn the text between
    the pieces too, which is what makes cross-boundary merges pay off.
    """
    texts = []
    for task in env.tasks():
        conversation = _scripted_conversation(task, env)
        rendered = render_jinja_template([conversation], tools=env.tools_for(task), chat_template=QWEN3_STYLE_TEMPLATE)
        texts.append(rendered[0][0])
    return texts


TRAIN_PIECE_CHARS = 4096
"""Longest piece of corpus text the BPE trainer sees at once: without the split regex a whole text
is one "word", and training time grows with the square of a word's length (a 400k-character task
took 46 s, 800k 239 s); cut into pieces it grows linearly with the corpus."""


def training_pieces(texts: Iterable[str]) -> Iterable[str]:
    """The corpus as the trainer should see it: split at every special-token string (the tokenizer
    parses those before BPE, so a merge across one could never be produced by encoding and would
    only let the model sample text such as ``<|im_end|>\n<|im_start|>`` as one ordinary token),
    and cut into pieces of at most `TRAIN_PIECE_CHARS`."""
    specials = re.compile("|".join(map(re.escape, sorted(SPECIAL_TOKENS, key=len, reverse=True))))
    for text in texts:
        for part in specials.split(text):
            for start in range(0, len(part), TRAIN_PIECE_CHARS):
                yield part[start : start + TRAIN_PIECE_CHARS]


def _resolve_envs(envs: Iterable[Environment | str]) -> list[Environment]:
    resolved = []
    for env in envs:
        if isinstance(env, str):
            from envsched_lightning.envs import make_env  # lazy: envs may import rollout helpers

            env = make_env(env)
        resolved.append(env)
    return resolved


def build_offline_tokenizer(
    envs: Iterable[Environment | str] = (),
    texts: Sequence[str] = (),
    vocab_size: int = 1024,
    min_frequency: int = 2,
) -> PreTrainedTokenizerFast:
    """Train a ByteLevel BPE on the environments' text and wrap it like a Qwen3 tokenizer.

    `envs` may hold `Environment` objects or names for `envsched_lightning.envs.make_env`. The
    returned tokenizer pads on the left (what batched generation wants), uses ``<|im_end|>`` as EOS
    (the end of an assistant turn) and ``<|endoftext|>`` as padding, and carries the chat template.
    """
    corpus = [FIXED_TEXT, TOOLS_HEADER, TOOLS_FOOTER] + list(texts)
    for env in _resolve_envs(envs):
        corpus += environment_corpus(env)

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),  # as Qwen: numbers read digit by digit
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),  # merges may cross spaces
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(training_pieces(corpus), trainer=trainer)

    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
        padding_side="left",
    )
    tok.chat_template = QWEN3_STYLE_TEMPLATE
    return tok
