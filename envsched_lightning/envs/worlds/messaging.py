"""Messaging: contacts (some blocked) and an inbox; read, send, delete, mark read, block."""

from __future__ import annotations

import random

from ..patterns import Draft, ask_for, call, refuse
from ..registry import register_env
from ..tool_world import State, ToolError, ToolWorld, get_row, next_id, tool

NAMES = ("Leo", "Mia", "Kim", "Raj", "Eva", "Tao", "Ada", "Bo")
TEXTS = ("running late", "lunch at noon?", "see you soon", "call me", "the keys are on the desk",
         "happy birthday", "meeting moved to 3", "thanks!", "did you pay rent?", "on my way")


@register_env("messaging")
class MessagingEnv(ToolWorld):
    """Eight contacts (two blocked) and about a dozen inbox messages, some already read."""

    def build_state(self, rng: random.Random) -> State:
        blocked = set(rng.sample(NAMES, 2))
        contacts = {f"K{i + 1}": {"name": n, "blocked": n in blocked} for i, n in enumerate(NAMES)}
        messages, n = {}, 1
        for cid in contacts:
            for _ in range(rng.choice((0, 1, 1, 2, 3))):
                messages[f"M{n}"] = {"contact": cid, "folder": "inbox", "text": rng.choice(TEXTS),
                                     "read": rng.random() < 0.3}
                n += 1
        return {"contacts": contacts, "messages": messages}

    # --- tools ------------------------------------------------------------------------------------

    @tool("Find a contact by name.", {"name": "string"}, reads=("contacts",))
    def find_contact(self, state: State, name: str) -> dict:
        for cid, row in state["contacts"].items():
            if row["name"].lower() == name.strip().lower():
                return {"contact_id": cid, "blocked": row["blocked"]}
        raise ToolError(f"no contact named {name}")

    @tool("List inbox messages from a contact.", {"contact_id": "string"}, reads=("messages",))
    def list_messages(self, state: State, contact_id: str) -> list:
        get_row(state, "contacts", contact_id, "contact")
        return [{"message_id": m, "read": r["read"]} for m, r in state["messages"].items()
                if r["contact"] == contact_id and r["folder"] == "inbox"]

    @tool("Read a message.", {"message_id": "string"}, reads=("messages",))
    def read_message(self, state: State, message_id: str) -> dict:
        row = get_row(state, "messages", message_id, "message")
        return {"from": state["contacts"][row["contact"]]["name"], "text": row["text"]}

    @tool("Send a message to a contact.", {"contact_id": "string", "text": "string"}, writes=("messages",))
    def send_message(self, state: State, contact_id: str, text: str) -> dict:
        if get_row(state, "contacts", contact_id, "contact")["blocked"]:
            raise ToolError(f"contact {contact_id} is blocked")
        mid = next_id(state, "messages", "M")
        state["messages"][mid] = {"contact": contact_id, "folder": "sent", "text": text, "read": True}
        return {"message_id": mid}

    @tool("Mark a message as read.", {"message_id": "string"}, writes=("messages",))
    def mark_read(self, state: State, message_id: str) -> dict:
        get_row(state, "messages", message_id, "message")["read"] = True
        return {"message_id": message_id, "read": True}

    @tool("Delete a message.", {"message_id": "string"}, writes=("messages",))
    def delete_message(self, state: State, message_id: str) -> dict:
        get_row(state, "messages", message_id, "message")
        del state["messages"][message_id]
        return {"deleted": message_id}

    @tool("Block a contact.", {"contact_id": "string"}, writes=("contacts",))
    def block_contact(self, state: State, contact_id: str) -> dict:
        get_row(state, "contacts", contact_id, "contact")["blocked"] = True
        return {"contact_id": contact_id, "blocked": True}

    # --- task drafts ------------------------------------------------------------------------------

    @staticmethod
    def _contacts(state: State, blocked: bool | None = False, n_messages: int | None = None) -> list[str]:
        counts = {c: sum(r["contact"] == c for r in state["messages"].values()) for c in state["contacts"]}
        return sorted(c for c, r in state["contacts"].items()
                      if (blocked is None or r["blocked"] == blocked) and (n_messages is None or counts[c] == n_messages))

    def draft_single(self, rng: random.Random, state: State) -> Draft:
        mid = rng.choice(sorted(state["messages"]))
        if rng.random() < 0.5:
            text = state["messages"][mid]["text"]
            return Draft("single", f"What does message {mid} say?", ((call("read_message", message_id=mid),),),
                         f"It says: {text}", ("answer",), (text,))
        return Draft("single", f"Delete message {mid}.", ((call("delete_message", message_id=mid),),),
                     f"Deleted {mid}.", ("state",))

    def draft_lookup_write(self, rng: random.Random, state: State) -> Draft:
        cid = rng.choice(self._contacts(state))
        name = state["contacts"][cid]["name"]
        find = (call("find_contact", name=name),)
        if rng.random() < 0.5:
            text = rng.choice(TEXTS)
            return Draft("lookup_write", f"Text {name}: {text}",
                         (find, (call("send_message", contact_id=cid, text=text),)),
                         "Sent.", ("state",))
        return Draft("lookup_write", f"Block {name}.", (find, (call("block_contact", contact_id=cid),)),
                     f"{name} is blocked.", ("state",))

    def draft_multi_hop(self, rng: random.Random, state: State) -> Draft:
        cid = rng.choice(self._contacts(state, blocked=None, n_messages=1))
        name = state["contacts"][cid]["name"]
        mid = next(m for m, r in state["messages"].items() if r["contact"] == cid)
        hops = ((call("find_contact", name=name),), (call("list_messages", contact_id=cid),))
        if rng.random() < 0.5:
            text = state["messages"][mid]["text"]
            return Draft("multi_hop", f"What did {name} write to me?", (*hops, (call("read_message", message_id=mid),)),
                         f"{name} wrote: {text}", ("calls", "answer"), (text,))
        return Draft("multi_hop", f"Delete the message from {name}.", (*hops, (call("delete_message", message_id=mid),)),
                     "Deleted.", ("state",))

    def draft_parallel(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            x, y = rng.sample(sorted(state["messages"]), 2)
            tx, ty = state["messages"][x]["text"], state["messages"][y]["text"]
            return Draft("parallel", f"What do messages {x} and {y} say?",
                         ((call("read_message", message_id=x), call("read_message", message_id=y)),),
                         f"{x}: {tx}. {y}: {ty}.", ("calls", "answer"), (tx, ty))
        unread = sorted(m for m, r in state["messages"].items() if not r["read"])
        x, y = rng.sample(unread, 2)
        return Draft("parallel", f"Mark messages {x} and {y} as read.",
                     ((call("mark_read", message_id=x), call("mark_read", message_id=y)),), "Done.", ("state", "calls"))

    def draft_missing_arg(self, rng: random.Random, state: State) -> Draft:
        name = state["contacts"][rng.choice(self._contacts(state))]["name"]
        request, missing, tool_name = rng.choice((
            (f"Send a message to {name}.", "text", "send_message"),
            (f"Text '{rng.choice(TEXTS)}' to my friend.", "contact_id", "send_message"),
            ("Delete that message.", "message_id", "delete_message"),
        ))
        return ask_for(request, missing, tool_name)

    def draft_refuse(self, rng: random.Random, state: State) -> Draft:
        cid = rng.choice(self._contacts(state, blocked=True))
        name, text = state["contacts"][cid]["name"], rng.choice(TEXTS)
        return refuse(f"Text {name}: {text}", [call("find_contact", name=name)], f"{name} is blocked", "send_message")
