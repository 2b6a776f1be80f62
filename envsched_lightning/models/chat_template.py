"""A Qwen3-style chat template for the offline tokenizer, and the one string helper the agent loop needs.

The template reproduces the parts of Qwen3's template that tool use depends on, byte for byte:
the system block that lists the tools as JSON lines inside ``<tools></tools>``, assistant tool calls
rendered as ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>`` blocks, and tool results
wrapped in ``<tool_response>`` inside a single user turn. It leaves out Qwen3's ``<think>`` handling:
the tiny model never reasons, and real runs use the template that ships with the real weights.
"""

from __future__ import annotations

TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def _jinja_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("\n", "\\n").replace("'", "\\'") + "'"


QWEN3_STYLE_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- " + _jinja_str(TOOLS_HEADER) + " }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- " + _jinja_str(TOOLS_FOOTER + "<|im_end|>\n") + " }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{%- set content = message.content if message.content is string else '' %}"
    "{{- '<|im_start|>assistant\\n' + content }}"
    "{%- for tool_call in message.tool_calls or [] %}"
    "{%- if (loop.first and content) or (not loop.first) %}{{- '\\n' }}{%- endif %}"
    "{%- if tool_call.function %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}"
    "{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""Jinja source set as ``tokenizer.chat_template``; renders ``tools=`` and tool turns like Qwen3."""


def reference_chat_template(name: str = "qwen3") -> str:
    """A model family's real chat template as `trl` ships it (`trl/chat_templates/<name>.jinja`).

    For tests and the rehearsal checkpoint: real runs take the template stored with the weights."""
    try:
        import trl
    except ImportError as err:
        raise ImportError("the reference chat templates ship with trl: pip install 'envsched-lightning[trl]'") from err
    from pathlib import Path

    path = Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja"
    if not path.is_file():
        raise FileNotFoundError(f"no chat template {name!r} in trl ({path})")
    return path.read_text()
