"""Calendar: one person's week of events with hourly slots; create, move, delete, invite."""

from __future__ import annotations

import random

from ..patterns import Draft, ask_for, call, refuse
from ..registry import register_env
from ..tool_world import State, ToolError, ToolWorld, get_row, next_id, tool

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri")
TITLES = ("standup", "budget review", "lunch", "gym", "1:1 with Kai", "design sync", "dentist", "demo",
          "planning", "retro")
NEW_TITLES = ("coffee", "call mom", "interview", "offsite prep", "yoga", "haircut")
PEOPLE = ("Kai", "Zoe", "Max", "Ida", "Leo")
HOURS = tuple(range(9, 18))
DAY = {"type": "string", "enum": list(DAYS)}
HOUR = {"type": "integer", "minimum": 0, "maximum": 23}


@register_env("calendar")
class CalendarEnv(ToolWorld):
    """Ten distinct events spread over Monday to Friday, at most one per hour."""

    def build_state(self, rng: random.Random) -> State:
        slots = rng.sample([(d, h) for d in DAYS for h in HOURS], len(TITLES))
        events = {f"E{i + 1}": {"title": t, "day": d, "start": h, "attendees": rng.sample(PEOPLE, rng.randint(0, 2))}
                  for i, (t, (d, h)) in enumerate(zip(TITLES, slots))}
        return {"events": events}

    # --- tools ------------------------------------------------------------------------------------

    @staticmethod
    def _free(state: State, day: str, start: int, skip: str = "") -> None:
        for eid, row in state["events"].items():
            if eid != skip and row["day"] == day and row["start"] == start:
                raise ToolError(f"{day} {start}:00 is taken by {row['title']}")

    @tool("List events on a day.", {"day": DAY}, reads=("events",))
    def list_events(self, state: State, day: str) -> list:
        rows = sorted((r["start"], e, r["title"]) for e, r in state["events"].items() if r["day"] == day)
        return [{"event_id": e, "title": t, "start": s} for s, e, t in rows]

    @tool("Get an event's details.", {"event_id": "string"}, reads=("events",))
    def get_event(self, state: State, event_id: str) -> dict:
        return {"event_id": event_id, **get_row(state, "events", event_id)}

    @tool("Find an event by title.", {"title": "string"}, reads=("events",))
    def find_event(self, state: State, title: str) -> dict:
        for eid, row in state["events"].items():
            if row["title"].lower() == title.strip().lower():
                return {"event_id": eid, "day": row["day"], "start": row["start"]}
        raise ToolError(f"no event titled {title}")

    @tool("Create an event.", {"title": "string", "day": DAY, "start": HOUR}, writes=("events",))
    def create_event(self, state: State, title: str, day: str, start: int) -> dict:
        self._free(state, day, start)
        eid = next_id(state, "events", "E")
        state["events"][eid] = {"title": title, "day": day, "start": start, "attendees": []}
        return {"event_id": eid}

    @tool("Move an event to another slot.", {"event_id": "string", "day": DAY, "start": HOUR}, writes=("events",))
    def move_event(self, state: State, event_id: str, day: str, start: int) -> dict:
        row = get_row(state, "events", event_id)
        self._free(state, day, start, skip=event_id)
        row.update(day=day, start=start)
        return {"event_id": event_id, "day": day, "start": start}

    @tool("Delete an event.", {"event_id": "string"}, writes=("events",))
    def delete_event(self, state: State, event_id: str) -> dict:
        get_row(state, "events", event_id)
        del state["events"][event_id]
        return {"deleted": event_id}

    @tool("Invite a person to an event.", {"event_id": "string", "name": "string"}, writes=("events",))
    def add_attendee(self, state: State, event_id: str, name: str) -> dict:
        row = get_row(state, "events", event_id)
        if name not in row["attendees"]:
            row["attendees"].append(name)
        return {"event_id": event_id, "attendees": row["attendees"]}

    # --- task drafts ------------------------------------------------------------------------------

    @staticmethod
    def _slot(rng: random.Random, state: State, free: bool = True) -> tuple[str, int]:
        taken = {(r["day"], r["start"]) for r in state["events"].values()}
        return rng.choice(sorted((d, h) for d in DAYS for h in HOURS if ((d, h) in taken) != free))

    @staticmethod
    def _event(rng: random.Random, state: State) -> tuple[str, dict]:
        eid = rng.choice(sorted(state["events"]))
        return eid, state["events"][eid]

    def draft_single(self, rng: random.Random, state: State) -> Draft:
        eid, row = self._event(rng, state)
        if rng.random() < 0.5:
            return Draft("single", f"On which day is event {eid}?", ((call("get_event", event_id=eid),),),
                         f"It is on {row['day']}.", ("answer",), (row["day"],))
        return Draft("single", f"Delete event {eid}.", ((call("delete_event", event_id=eid),),),
                     f"Deleted {eid}.", ("state",))

    def draft_lookup_write(self, rng: random.Random, state: State) -> Draft:
        eid, row = self._event(rng, state)
        find = (call("find_event", title=row["title"]),)
        if rng.random() < 0.5:
            day, hour = self._slot(rng, state)
            return Draft("lookup_write", f"Move the {row['title']} to {day} at {hour}:00.",
                         (find, (call("move_event", event_id=eid, day=day, start=hour),)), "Moved.", ("state",))
        who = rng.choice([p for p in PEOPLE if p not in row["attendees"]])
        return Draft("lookup_write", f"Invite {who} to the {row['title']}.",
                     (find, (call("add_attendee", event_id=eid, name=who),)), f"{who} is invited.", ("state",))

    def draft_multi_hop(self, rng: random.Random, state: State) -> Draft:
        day = rng.choice(sorted({r["day"] for r in state["events"].values()}))
        listed = self.list_events(state, day)
        first = listed[0]["event_id"]
        row = state["events"][first]
        hop = (call("list_events", day=day),)
        if row["attendees"] and rng.random() < 0.5:
            names = " and ".join(row["attendees"])
            return Draft("multi_hop", f"Who attends my first event on {day}?",
                         (hop, (call("get_event", event_id=first),)), f"{names}.", ("calls", "answer"),
                         tuple(row["attendees"]))
        who = rng.choice([p for p in PEOPLE if p not in row["attendees"]])
        return Draft("multi_hop", f"Invite {who} to my first event on {day}.",
                     (hop, (call("add_attendee", event_id=first, name=who),)), f"{who} is invited.", ("state",))

    def draft_parallel(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            a, b = rng.sample(DAYS, 2)
            titles = tuple(r["title"] for r in state["events"].values() if r["day"] in (a, b))
            answer = ", ".join(titles) if titles else "Nothing is planned."
            return Draft("parallel", f"What is on my calendar on {a} and {b}?",
                         ((call("list_events", day=a), call("list_events", day=b)),), answer, ("calls", "answer"), titles)
        (d1, h1), (d2, h2) = self._slot(rng, state), self._slot(rng, state)
        while (d2, h2) == (d1, h1):
            d2, h2 = self._slot(rng, state)
        t1, t2 = rng.sample(NEW_TITLES, 2)
        return Draft("parallel", f"Add {t1} on {d1} at {h1}:00 and {t2} on {d2} at {h2}:00.",
                     ((call("create_event", title=t1, day=d1, start=h1),
                       call("create_event", title=t2, day=d2, start=h2)),),
                     "Both are on the calendar.", ("state", "calls"))

    def draft_missing_arg(self, rng: random.Random, state: State) -> Draft:
        eid, row = self._event(rng, state)
        title, day = rng.choice(NEW_TITLES), rng.choice(DAYS)
        request, missing, tool_name = rng.choice((
            (f"Schedule {title} on {day}.", "start", "create_event"),
            (f"Move event {eid} to {rng.choice(HOURS)}:00.", "day", "move_event"),
            ("Delete my event, please.", "event_id", "delete_event"),
        ))
        return ask_for(request, missing, tool_name)

    def draft_refuse(self, rng: random.Random, state: State) -> Draft:
        day, hour = self._slot(rng, state, free=False)
        taken = next(r["title"] for r in state["events"].values() if (r["day"], r["start"]) == (day, hour))
        look = [call("list_events", day=day)]
        if rng.random() < 0.5:
            title = rng.choice(NEW_TITLES)
            return refuse(f"Add {title} on {day} at {hour}:00.", look, f"{taken} is at that time", "create_event")
        eid = rng.choice(sorted(e for e, r in state["events"].items() if (r["day"], r["start"]) != (day, hour)))
        return refuse(f"Move event {eid} to {day} at {hour}:00.", look, f"{taken} is at that time", "move_event")
