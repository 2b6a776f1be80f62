"""BFCL `TicketAPI` (func-doc file `ticket_api.json`), behaving as the official class
(bfcl-eval 2026.3.23) does.

State (compared by the checker): `ticket_queue` (a list of ticket dicts: ``id``, ``title``,
``description``, ``status``, ``priority``, ``created_by``, plus ``resolution`` once resolved),
`ticket_counter` (the next id; default 1, not derived from the queue), `current_user` (default
None). Nothing is random. Upstream's `_load_scenario` has no long-context behaviour, so `load`
is all there is.

Quirks kept: `create_ticket` and `get_ticket` return the stored ticket dict itself; ids come from
`ticket_counter` alone, so a scenario queue can end up with two tickets of one id (the first is
the one found); `ticket_login` accepts any non-empty username and password; `create_ticket`
checks the priority's range with ``<``/``>`` only (a string fails with Python's TypeError, a float
passes), `edit_ticket` checks nothing about values (any status, any priority) and skips None
values; `get_user_tickets` answers a one-element *list* holding the error dict when nobody is
logged in, and fails with KeyError on a scenario ticket without ``created_by``; ids compare with
``==`` (``True`` finds ticket 1, ``"1"`` finds nothing), and a scenario ticket without ``id``
(some scenarios key tickets as ``{"ticket_001": {...}}``) makes a lookup that reaches it fail with
KeyError; `get_user_tickets(status="None")` (the doc's default, as text) filters for "none"; the
invalid-field error lists the fields in Python's set order. Closing a resolved ticket and
resolving a closed one are both allowed.
`rules="training"` changes nothing here.
"""

from __future__ import annotations

from typing import Any

from . import Backend

EDITABLE = frozenset({"title", "description", "status", "priority"})


def _not_found(ticket_id: Any) -> dict[str, str]:
    return {"error": f"Ticket with ID {ticket_id} not found."}


class TicketAPI(Backend):
    tool_names = frozenset(
        "close_ticket create_ticket edit_ticket get_ticket get_user_tickets logout resolve_ticket "
        "ticket_get_login_status ticket_login".split()
    )
    defaults = {"ticket_queue": [], "ticket_counter": 1, "current_user": None}

    def _find(self, ticket_id: Any) -> dict[str, Any] | None:
        """The first queued ticket whose id `==` `ticket_id` (a ticket without ``id`` raises KeyError)."""
        return next((t for t in self.ticket_queue if t["id"] == ticket_id), None)

    def ticket_login(self, username: str, password: str) -> dict[str, bool]:
        if username and password:  # Quirk: any non-empty pair logs in, as that username
            self.current_user = username
            return {"success": True}
        return {"success": False}

    def ticket_get_login_status(self) -> dict[str, bool]:
        return {"login_status": bool(self.current_user)}

    def logout(self) -> dict[str, bool]:
        if not self.current_user:
            return {"success": False}
        self.current_user = None
        return {"success": True}

    def create_ticket(self, title: str, description: str = "", priority: int = 1) -> dict[str, Any]:
        if not self.current_user:
            return {"error": "User not authenticated. Please log in to create a ticket."}
        if priority < 1 or priority > 5:  # Quirk: no type check; a str raises TypeError here
            return {"error": "Invalid priority. Priority must be between 1 and 5."}
        ticket = {"id": self.ticket_counter, "title": title, "description": description, "status": "Open",
                  "priority": priority, "created_by": self.current_user}  # fmt: skip
        self.ticket_queue.append(ticket)
        self.ticket_counter += 1
        return ticket  # Quirk: the stored dict itself

    def get_ticket(self, ticket_id: int) -> dict[str, Any]:
        ticket = self._find(ticket_id)
        return _not_found(ticket_id) if ticket is None else ticket

    def close_ticket(self, ticket_id: int) -> dict[str, str]:
        ticket = self._find(ticket_id)
        if ticket is None:
            return _not_found(ticket_id)
        if ticket["status"] == "Closed":
            return {"error": f"Ticket with ID {ticket_id} is already closed."}
        ticket["status"] = "Closed"
        return {"status": f"Ticket {ticket_id} has been closed successfully."}

    def resolve_ticket(self, ticket_id: int, resolution: str) -> dict[str, str]:
        ticket = self._find(ticket_id)
        if ticket is None:
            return _not_found(ticket_id)
        if ticket["status"] == "Resolved":
            return {"error": f"Ticket with ID {ticket_id} is already resolved."}
        ticket["status"] = "Resolved"
        ticket["resolution"] = resolution
        return {"status": f"Ticket {ticket_id} has been resolved successfully."}

    def edit_ticket(self, ticket_id: int, updates: dict[str, str | int | None]) -> dict[str, str]:
        ticket = self._find(ticket_id)
        if ticket is None:
            return _not_found(ticket_id)
        # Quirk: the fields are listed in the order of this set difference (hash order), as upstream
        # computes it; a non-dict `updates` fails on `.keys()`, a non-str field name in the join.
        unknown = set(updates.keys()) - EDITABLE
        if unknown:
            return {"error": f"Invalid fields for update: {', '.join(unknown)}"}
        for key, value in updates.items():
            if value is not None:  # Quirk: None means "leave as is"; other values are not checked
                ticket[key] = value
        return {"status": f"Ticket {ticket_id} has been updated successfully."}

    def get_user_tickets(self, status: str | None = None) -> list[dict[str, Any]]:
        if not self.current_user:
            return [{"error": "User not authenticated. Please log in to view tickets."}]  # Quirk: a list
        mine = [t for t in self.ticket_queue if t["created_by"] == self.current_user]
        if status:
            # Quirk: the ticket's status is lowered first, so a non-str one fails before `status` does
            mine = [t for t in mine if t["status"].lower() == status.lower()]
        return mine
