"""The offline tokenizer and its chat template render tool use exactly as Qwen3's template does."""

from __future__ import annotations

import pytest

from envsched_lightning.models import SPECIAL_TOKENS, build_offline_tokenizer

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
]  # fmt: skip
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris and Oslo?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
    ]},
    {"role": "tool", "name": "get_weather", "content": "sunny"},
    {"role": "tool", "name": "get_weather", "content": "snow"},
    {"role": "assistant", "content": "Paris is sunny, Oslo has snow."},
]  # fmt: skip

# What Qwen3's own template (tokenizer_config.json of Qwen/Qwen3-8B, thinking parts aside) renders.
EXPECTED = (
    "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}\n'
    "</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
    "<|im_start|>user\nWeather in Paris and Oslo?<|im_end|>\n"
    '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>\n'
    "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nsnow\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\nParis is sunny, Oslo has snow.<|im_end|>\n"
)


@pytest.fixture(scope="module")
def tok():
    return build_offline_tokenizer(texts=[EXPECTED] * 3, vocab_size=512)


def test_chat_template_matches_qwen3_rendering(tok):
    assert tok.apply_chat_template(CONVERSATION, tools=TOOLS, tokenize=False) == EXPECTED


def test_generation_prompt_and_no_tools(tok):
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_special_tokens_are_single_ids_and_survive_decoding(tok):
    for special in SPECIAL_TOKENS:
        ids = tok.encode(special, add_special_tokens=False)
        assert len(ids) == 1 and tok.decode(ids, skip_special_tokens=False) == special
    assert (tok.eos_token, tok.pad_token, tok.padding_side) == ("<|im_end|>", "<|endoftext|>", "left")


def test_any_text_round_trips_and_digits_are_split(tok):
    text = "Ünïcode ✓ and 12345 <tool_call>{}</tool_call>"
    assert tok.decode(tok.encode(text, add_special_tokens=False), skip_special_tokens=False) == text
    digit_pieces = [tok.decode([i]) for i in tok.encode("12345", add_special_tokens=False)]
    assert digit_pieces == list("12345")


def test_training_on_a_world_compresses_its_prompts(tok):
    trained = build_offline_tokenizer(texts=[EXPECTED] * 50, vocab_size=1024)
    generic = build_offline_tokenizer(vocab_size=1024)
    assert 300 <= len(trained) <= 1024
    assert len(trained.encode(EXPECTED)) < len(generic.encode(EXPECTED)) / 3
