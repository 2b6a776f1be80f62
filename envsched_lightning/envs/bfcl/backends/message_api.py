"""BFCL `MessageAPI`, behaving as the official class (bfcl-eval 2026.3.23) does.

State (compared by the checker): `generated_ids`, `user_count`, `user_map`, `inbox` (a list of
one-entry ``{receiver_id: text}`` dicts), `message_count`, `current_user`. Defaults for keys the
scenario omits are upstream's: four users and three inbox messages. Message ids are drawn from
`random.Random(seed)` as upstream draws them (seed `random_seed`, default 200191), so both
checker instances and the official class give the same ids for the same sends.

Quirks kept: `send_message` answers ``"message_id": {"new_id": n}`` (a dict); every tool but
`list_users`, `get_user_id`, `message_login`, `message_get_login_status` and `add_contact` needs a
login; `add_contact` bumps `user_count` before its duplicate-id check; only an entry's first key is
read. Under `rules="training"`, `delete_message` also accepts the `message_id` its function doc
offers (and ignores it, as the doc says it deletes the latest message); upstream's method has no
such parameter, so the documented call fails there with a TypeError.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from . import Backend

NOT_LOGGED_IN = {"error": "No user is currently logged in."}


class MessageAPI(Backend):
    tool_names = frozenset(
        "add_contact delete_message get_message_stats get_user_id list_users message_get_login_status "
        "message_login search_messages send_message view_messages_sent".split()
    )
    defaults = {
        "generated_ids": set(),
        "user_count": 4,
        "user_map": {"Alice": "USR001", "Bob": "USR002", "Catherine": "USR003", "Daniel": "USR004"},
        "inbox": [{"USR002": "My name is Alice. I want to connect."}, {"USR003": "Could you upload the file?"},
                  {"USR004": "Could you upload the file?"}],
        "message_count": 3,
        "current_user": None,
    }  # fmt: skip

    def load(self, config: Mapping[str, Any], long_context: bool = False) -> None:
        self._random = random.Random(config.get("random_seed", 200191))
        super().load(config)  # upstream has no long-context behaviour here

    def call(self, name: str, arguments: Mapping[str, Any]) -> Any:
        if self._rules == "training" and name == "delete_message":
            arguments = {k: v for k, v in arguments.items() if k != "message_id"}
        return super().call(name, arguments)

    def _new_id(self) -> dict[str, int]:
        new_id = self._random.randint(10000, 99999)
        while new_id in self.generated_ids:
            new_id = self._random.randint(10000, 99999)
        self.generated_ids.add(new_id)
        return {"new_id": new_id}

    def _entries(self) -> list[tuple[str, str]]:
        return [list(entry.items())[0] for entry in self.inbox]  # Quirk: an entry's first key only

    def list_users(self) -> dict[str, Any]:
        return {"user_list": list(self.user_map.keys())}

    def get_user_id(self, user: str) -> dict[str, Any]:
        if user not in self.user_map:
            return {"error": f"User '{user}' not found in the workspace."}
        return {"user_id": self.user_map.get(user)}

    def message_login(self, user_id: str) -> dict[str, Any]:
        if user_id not in list(self.user_map.values()):
            return {"login_status": False, "message": f"User ID '{user_id}' not found."}
        self.current_user = user_id
        return {"login_status": True, "message": f"User '{user_id}' logged in successfully."}

    def message_get_login_status(self) -> dict[str, Any]:
        return {"login_status": bool(self.current_user)}

    def send_message(self, receiver_id: str, message: str) -> dict[str, Any]:
        if not self.current_user:
            return dict(NOT_LOGGED_IN)
        if receiver_id not in self.user_map.values():
            return {"error": f"Receiver ID '{receiver_id}' not found."}
        message_id = self._new_id()
        self.inbox.append({receiver_id: message})
        self.message_count += 1
        return {"sent_status": True, "message_id": message_id, "message": f"Message sent to '{receiver_id}' successfully."}

    def delete_message(self, receiver_id: str) -> dict[str, Any]:
        if not self.current_user:  # an error and no change before login
            return dict(NOT_LOGGED_IN)
        for entry in reversed(self.inbox):
            receiver = list(entry.items())[0][0]
            if receiver == receiver_id:
                self.inbox.remove(entry)  # the first equal entry: the same list either way
                return {"deleted_status": True, "receiver_id": receiver,
                        "message": f"Receiver {receiver_id}'s latest message deleted successfully."}  # fmt: skip
        return {"error": f"Receiver ID {receiver_id} not found."}

    def view_messages_sent(self) -> dict[str, Any]:
        if not self.current_user:
            return dict(NOT_LOGGED_IN)
        grouped: dict[str, list[str]] = {}
        for receiver, text in self._entries():
            grouped.setdefault(receiver, []).append(text)
        return {"messages": grouped}

    def add_contact(self, user_name: str) -> dict[str, Any]:
        if user_name in self.user_map:
            return {"error": f"User name '{user_name}' already exists."}
        self.user_count += 1  # Quirk: counted even when the id below turns out to be taken
        user_id = f"USR{str(self.user_count).zfill(3)}"
        if user_id in self.user_map.values():
            return {"error": f"User ID '{user_id}' already exists."}
        self.user_map[user_name] = user_id
        return {"added_status": True, "user_id": user_id, "message": f"Contact '{user_name}' added successfully."}

    def search_messages(self, keyword: str) -> dict[str, Any]:
        if not self.current_user:
            return dict(NOT_LOGGED_IN)
        wanted = keyword.lower()
        return {"results": [{"receiver_id": r, "message": t} for r, t in self._entries() if wanted in t.lower()]}

    def get_message_stats(self) -> dict[str, Any]:
        if not self.current_user:
            return dict(NOT_LOGGED_IN)
        entries = self._entries()
        return {"stats": {"received_count": len(entries), "total_contacts": len({r for r, _ in entries})}}
