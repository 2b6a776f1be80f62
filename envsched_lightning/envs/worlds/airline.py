"""Airline: flights between cities with seat counts, and passenger bookings that can be changed."""

from __future__ import annotations

import random

from ..patterns import Draft, ask_for, call, refuse
from ..registry import register_env
from ..tool_world import State, ToolError, ToolWorld, get_row, next_id, tool

CITIES = ("Paris", "Rome", "Oslo", "Lima", "Cairo", "Tokyo")
PASSENGERS = ("Omar", "Lea", "Ravi", "Sofia", "Tom", "Uma", "Vic", "Wen")
DAYS = ("May 2", "May 3", "May 5", "May 8", "May 9")


@register_env("airline")
class AirlineEnv(ToolWorld):
    """A dozen flights (one route per city pair, some full) and one booking per passenger."""

    def build_state(self, rng: random.Random) -> State:
        routes = rng.sample([(a, b) for a in CITIES for b in CITIES if a != b], 12)
        flights = {f"F{10 + i}": {"origin": a, "dest": b, "day": rng.choice(DAYS), "seats": rng.choice((0, 1, 2, 3, 5))}
                   for i, (a, b) in enumerate(routes)}
        flights["F10"]["seats"] = 0  # at least one full flight, for refusals
        flights["F11"]["seats"] = max(flights["F11"]["seats"], 2)
        bookings = {f"B{i + 1}": {"passenger": p, "flight": rng.choice(sorted(flights)), "status": "booked"}
                    for i, p in enumerate(PASSENGERS[:6])}
        return {"flights": flights, "bookings": bookings}

    # --- tools ------------------------------------------------------------------------------------

    @tool("Search flights from one city to another.", {"origin": "string", "dest": "string"}, reads=("flights",))
    def search_flights(self, state: State, origin: str, dest: str) -> list:
        return [{"flight_id": f, "day": r["day"], "seats": r["seats"]} for f, r in state["flights"].items()
                if r["origin"].lower() == origin.lower() and r["dest"].lower() == dest.lower()]

    @tool("Get a flight's details.", {"flight_id": "string"}, reads=("flights",))
    def get_flight(self, state: State, flight_id: str) -> dict:
        return {"flight_id": flight_id, **get_row(state, "flights", flight_id)}

    @tool("Find a passenger's booking.", {"passenger": "string"}, reads=("bookings",))
    def find_booking(self, state: State, passenger: str) -> dict:
        for bid, row in state["bookings"].items():
            if row["passenger"].lower() == passenger.strip().lower() and row["status"] == "booked":
                return {"booking_id": bid, "flight_id": row["flight"]}
        raise ToolError(f"no booking for {passenger}")

    def _take_seat(self, state: State, flight_id: str) -> None:
        flight = get_row(state, "flights", flight_id)
        if flight["seats"] < 1:
            raise ToolError(f"flight {flight_id} is full")
        flight["seats"] -= 1

    @tool("Book a seat for a passenger.", {"passenger": "string", "flight_id": "string"},
          writes=("bookings", "flights"))
    def book_flight(self, state: State, passenger: str, flight_id: str) -> dict:
        self._take_seat(state, flight_id)
        bid = next_id(state, "bookings", "B")
        state["bookings"][bid] = {"passenger": passenger, "flight": flight_id, "status": "booked"}
        return {"booking_id": bid}

    @tool("Cancel a booking.", {"booking_id": "string"}, writes=("bookings", "flights"))
    def cancel_booking(self, state: State, booking_id: str) -> dict:
        row = get_row(state, "bookings", booking_id)
        if row["status"] != "booked":
            raise ToolError(f"booking {booking_id} is already cancelled")
        row["status"] = "cancelled"
        state["flights"][row["flight"]]["seats"] += 1
        return {"booking_id": booking_id, "status": "cancelled"}

    @tool("Move a booking to another flight.", {"booking_id": "string", "flight_id": "string"},
          writes=("bookings", "flights"))
    def change_flight(self, state: State, booking_id: str, flight_id: str) -> dict:
        row = get_row(state, "bookings", booking_id)
        self._take_seat(state, flight_id)
        state["flights"][row["flight"]]["seats"] += 1
        row["flight"] = flight_id
        return {"booking_id": booking_id, "flight_id": flight_id}

    # --- task drafts ------------------------------------------------------------------------------

    @staticmethod
    def _open(state: State, exclude: str = "") -> list[str]:
        return sorted(f for f, r in state["flights"].items() if r["seats"] >= 1 and f != exclude)

    @staticmethod
    def _booked(rng: random.Random, state: State) -> tuple[str, dict]:
        bid = rng.choice(sorted(state["bookings"]))
        return bid, state["bookings"][bid]

    def draft_single(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            fid = rng.choice(sorted(state["flights"]))
            seats = state["flights"][fid]["seats"]
            return Draft("single", f"How many seats are left on flight {fid}?", ((call("get_flight", flight_id=fid),),),
                         f"{seats} seats left.", ("answer",), (f"{seats} seats",))
        fid, who = rng.choice(self._open(state)), rng.choice(PASSENGERS)
        return Draft("single", f"Book flight {fid} for {who}.", ((call("book_flight", passenger=who, flight_id=fid),),),
                     f"{who} is booked on {fid}.", ("state",))

    def draft_lookup_write(self, rng: random.Random, state: State) -> Draft:
        bid, row = self._booked(rng, state)
        if rng.random() < 0.5:
            return Draft("lookup_write", f"Cancel {row['passenger']}'s booking.",
                         ((call("find_booking", passenger=row["passenger"]),), (call("cancel_booking", booking_id=bid),)),
                         "The booking is cancelled.", ("state",))
        fid = rng.choice(self._open(state, exclude=row["flight"]))
        return Draft("lookup_write", f"Move {row['passenger']} to flight {fid}.",
                     ((call("find_booking", passenger=row["passenger"]),),
                      (call("change_flight", booking_id=bid, flight_id=fid),)),
                     f"{row['passenger']} is now on {fid}.", ("state",))

    def draft_multi_hop(self, rng: random.Random, state: State) -> Draft:
        bid, row = self._booked(rng, state)
        who, flight = row["passenger"], state["flights"][row["flight"]]
        if rng.random() < 0.5:
            return Draft("multi_hop", f"On what day does {who} fly, and to where?",
                         ((call("find_booking", passenger=who),), (call("get_flight", flight_id=row["flight"]),)),
                         f"{who} flies to {flight['dest']} on {flight['day']}.", ("calls", "answer"),
                         (flight["dest"], flight["day"]))
        fid = rng.choice(self._open(state, exclude=row["flight"]))
        a, b = state["flights"][fid]["origin"], state["flights"][fid]["dest"]
        return Draft("multi_hop", f"Move {who} to the flight from {a} to {b}.",
                     ((call("find_booking", passenger=who), call("search_flights", origin=a, dest=b)),
                      (call("change_flight", booking_id=bid, flight_id=fid),)), f"{who} is now on {fid}.", ("state",))

    def draft_parallel(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            x, y = rng.sample(sorted(state["flights"]), 2)
            dx, dy = state["flights"][x]["day"], state["flights"][y]["day"]
            return Draft("parallel", f"On what days do flights {x} and {y} leave?",
                         ((call("get_flight", flight_id=x), call("get_flight", flight_id=y)),),
                         f"{x} leaves {dx}, {y} leaves {dy}.", ("calls", "answer"),
                         (f"{x} leaves {dx}", f"{y} leaves {dy}"))
        fid = rng.choice([f for f in self._open(state) if state["flights"][f]["seats"] >= 2])
        a, b = rng.sample(PASSENGERS, 2)
        return Draft("parallel", f"Book {a} and {b} on flight {fid}.",
                     ((call("book_flight", passenger=a, flight_id=fid), call("book_flight", passenger=b, flight_id=fid)),),
                     "Both are booked.", ("state", "calls"))

    def draft_missing_arg(self, rng: random.Random, state: State) -> Draft:
        who, city = rng.choice(PASSENGERS), rng.choice(CITIES)
        request, missing, tool_name = rng.choice((
            (f"Book a flight for {who}.", "flight_id", "book_flight"),
            (f"Find me flights to {city}.", "origin", "search_flights"),
            ("Please cancel my booking.", "booking_id", "cancel_booking"),
        ))
        return ask_for(request, missing, tool_name)

    def draft_refuse(self, rng: random.Random, state: State) -> Draft:
        fid = rng.choice(sorted(f for f, r in state["flights"].items() if r["seats"] == 0))
        if rng.random() < 0.5:
            who = rng.choice(PASSENGERS)
            return refuse(f"Book flight {fid} for {who}.", [call("get_flight", flight_id=fid)], f"{fid} is full",
                          "book_flight")
        bid, row = self._booked(rng, state)
        return refuse(f"Move booking {bid} to flight {fid}.", [call("get_flight", flight_id=fid)], f"{fid} is full",
                      "change_flight")
