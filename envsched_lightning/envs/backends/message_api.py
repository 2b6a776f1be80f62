"""BFCL `MessageAPI`, rewritten from `multi_turn_func_doc/message_api.json`.

The scenario may omit keys; `defaults` then supplies the official class's default workspace (four
users, Alice..Daniel). Message ids come from `message_count`, not from a seeded RNG as upstream, so
the model and ground-truth instances agree whenever they send the same messages in the same order.
"""

from __future__ import annotations

from typing import Any

from . import Backend


class MessageAPI(Backend):
    tool_names = frozenset(
        "add_contact delete_message get_message_stats get_user_id list_users message_get_login_status "
        "message_login search_messages send_message view_messages_sent".split()
    )
    defaults = {
        "user_count": 4,
        "user_map": {"Alice": "USR001", "Bob": "USR002", "Catherine": "USR003", "Daniel": "USR004"},
        "inbox": [{"USR002": "My name is Alice. I want to connect."}, {"USR003": "Could you upload the file?"}],
        "message_count": 0,
        "current_user": None,
    }

    def _messages(self) -> list[tuple[str, str]]:
        """(receiver, text) pairs; scenario inbox values may be one string or a list of strings."""
        pairs = []
        for entry in self.inbox:
            for receiver, texts in entry.items():
                pairs += [(receiver, t) for t in (texts if isinstance(texts, list) else [texts])]
        return pairs

    def list_users(self) -> dict[str, Any]:
        return {"user_list": list(self.user_map)}

    def get_user_id(self, user: str) -> dict[str, Any]:
        if user not in self.user_map:
            return {"error": f"User '{user}' not found in the workspace."}
        return {"user_id": self.user_map[user]}

    def message_login(self, user_id: str) -> dict[str, Any]:
        if user_id not in self.user_map.values():
            return {"login_status": False, "message": f"User ID '{user_id}' not found."}
        self.current_user = user_id
        return {"login_status": True, "message": f"User '{user_id}' logged in successfully."}

    def message_get_login_status(self) -> dict[str, Any]:
        return {"login_status": self.current_user is not None}

    def add_contact(self, user_name: str) -> dict[str, Any]:
        if user_name in self.user_map:
            return {"added_status": False, "user_id": self.user_map[user_name], "message": f"User '{user_name}' already exists."}
        self.user_count += 1
        self.user_map[user_name] = f"USR{self.user_count:03d}"
        return {"added_status": True, "user_id": self.user_map[user_name], "message": f"Contact '{user_name}' added successfully."}

    def send_message(self, receiver_id: str, message: str) -> dict[str, Any]:
        if self.current_user is None:
            return {"error": "No user is currently logged in."}
        if receiver_id not in self.user_map.values():
            return {"error": f"Receiver ID '{receiver_id}' not found."}
        self.message_count += 1
        self.inbox.append({receiver_id: message})
        return {"sent_status": True, "message_id": self.message_count, "message": f"Message sent to '{receiver_id}' successfully."}

    def delete_message(self, receiver_id: str, message_id: int | None = None) -> dict[str, Any]:
        """Deletes the latest message to `receiver_id` (the doc's behaviour; `message_id` is echoed)."""
        for i in range(len(self.inbox) - 1, -1, -1):
            if receiver_id in self.inbox[i]:
                del self.inbox[i]
                return {"deleted_status": True, "message_id": message_id, "message": f"Message to '{receiver_id}' deleted successfully."}
        return {"deleted_status": False, "message_id": message_id, "message": f"No message to '{receiver_id}' found."}

    def view_messages_sent(self) -> dict[str, Any]:
        grouped: dict[str, list[str]] = {}
        for receiver, text in self._messages():
            grouped.setdefault(receiver, []).append(text)
        return {"messages": grouped}

    def search_messages(self, keyword: str) -> dict[str, Any]:
        hits = [{"receiver_id": r, "message": t} for r, t in self._messages() if keyword.lower() in t.lower()]
        return {"results": hits}

    def get_message_stats(self) -> dict[str, Any]:
        pairs = self._messages()
        return {"stats": {"sent_count": len(pairs), "total_contacts": len({r for r, _ in pairs})}}
