"""tau-bench airline tools over `airline/data/{users,reservations,flights}.json`, as the official tools behave.

Each tool checks what the official one checks, in the same order, with the same error text, and makes
the same changes (so the same JSON key order in what it returns). Official quirks, kept by default:

* `book_reservation` never decrements `available_seats`; new ids are `HATHAT`, then `HATHAU`, then
  `HATHAV` (a fourth booking overwrites `HATHAV`); the payment total is compared with `!=` on floats;
  the reservation keeps the caller's extra keys in flights, passengers and payments.
* `cancel_reservation` does not look at the status: cancelling twice appends the refunds again
  (negated copies of every payment-history entry, refunds included); no balance is refunded.
* `update_reservation_baggages` and `update_reservation_flights` refuse certificates; gift-card
  amounts are subtracted unrounded; `update_reservation_flights` never changes `cabin`, prices a kept
  flight at its old price only when the cabin is unchanged, and a negative difference is appended as
  a negative payment (a gift card gains it back); the flights table is not updated.
* `get_reservation_details` says "Error: user not found" for an unknown reservation.
* `search_direct_flight` has no "date" key; `search_onestop_flight` dates an overnight second leg
  ``2024-05-{day+1}`` (unpadded) yet shows that leg's status/seats/prices for the first date.
* `send_certificate` uses `certificate_3221322`, `..323`, `..324`; a fourth one returns None, which
  makes the official `Env.step` raise (its harness then scores the task 0): our episode aborts.

`rules="training"` fixes the ones that would teach falsehoods (docs/benchmarks.md): a repeated cancel
is refused, `update_reservation_flights` records the new cabin, payments are compared in cents,
one-stop results show the second leg's real date and data, an unknown reservation is named, and a
fourth certificate is refused with an error instead of aborting.
"""

from __future__ import annotations

import datetime as dt
import json
from copy import deepcopy
from typing import Any, Literal, TypedDict

from .common import TauDomain, tool

Cabin = Literal["basic_economy", "economy", "business"]
AIRPORTS = dict(zip(
    "SFO JFK LAX ORD DFW DEN SEA ATL MIA BOS PHX IAH LAS MCO EWR CLT MSP DTW PHL LGA".split(),
    ["San Francisco", "New York", "Los Angeles", "Chicago", "Dallas", "Denver", "Seattle", "Atlanta", "Miami",
     "Boston", "Phoenix", "Houston", "Las Vegas", "Orlando", "Newark", "Charlotte", "Minneapolis", "Detroit",
     "Philadelphia", "LaGuardia"],
))  # fmt: skip
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = (3221322, 3221323, 3221324)
BAG_PRICE, INSURANCE_PRICE = 50, 30
CREATED_AT = "2024-05-15T15:00:00"  # tau-bench's fixed "now"


class FlightRef(TypedDict):
    flight_number: str
    date: str


class Passenger(TypedDict):
    first_name: str
    last_name: str
    dob: str


class Payment(TypedDict):
    payment_id: str
    amount: float


class AirlineTools(TauDomain):
    domain = "airline"
    files = ("users", "reservations", "flights")

    # ---- helpers
    def _price_leg(self, leg: dict[str, Any], cabin: str, passengers: Any) -> str | None:
        """Fill a leg's price/origin/destination from the flights table, or say why it cannot be booked."""
        number = leg["flight_number"]
        if number not in self.data["flights"]:
            return f"Error: flight {number} not found"
        flight = self.data["flights"][number]
        if leg["date"] not in flight["dates"]:
            return f"Error: flight {number} not found on date {leg['date']}"
        day = flight["dates"][leg["date"]]
        if day["status"] != "available":
            return f"Error: flight {number} not available on date {leg['date']}"
        if day["available_seats"][cabin] < len(passengers):  # len() only here, as upstream
            return f"Error: not enough seats on flight {number}"
        leg["price"], leg["origin"], leg["destination"] = day["prices"][cabin], flight["origin"], flight["destination"]
        return None

    def _update_payment(self, reservation: dict[str, Any], payment_id: str, amount: Any) -> tuple[dict[str, Any] | None, str | None]:
        """The method an update is charged to (certificates refused, gift cards need the amount)."""
        methods = self.data["users"][reservation["user_id"]]["payment_methods"]
        if payment_id not in methods:
            return None, "Error: payment method not found"
        method = methods[payment_id]
        if method["source"] == "certificate":
            return None, "Error: certificate cannot be used to update reservation"
        if method["source"] == "gift_card" and method["amount"] < amount:
            return None, "Error: gift card balance is not enough"
        return method, None

    # ---- read tools
    @tool
    def get_user_details(self, user_id: str) -> str:
        """Get the details of a user, including their payment methods and reservations."""
        users = self.data["users"]
        return json.dumps(users[user_id]) if user_id in users else "Error: user not found"

    @tool
    def get_reservation_details(self, reservation_id: str) -> str:
        """Get the details of a reservation."""
        reservations = self.data["reservations"]
        if reservation_id in reservations:
            return json.dumps(reservations[reservation_id])
        # Official quirk: the message says "user" for an unknown reservation.
        return "Error: reservation not found" if self.training else "Error: user not found"

    @tool
    def list_all_airports(self) -> str:
        """List all airports (IATA code -> city)."""
        return json.dumps(AIRPORTS)

    @tool
    def search_direct_flight(self, origin: str, destination: str, date: str) -> str:
        """Search direct flights between two airports on a date (YYYY-MM-DD)."""
        found = []
        for flight in self.data["flights"].peek_values():
            if flight["origin"] == origin and flight["destination"] == destination:
                if date in flight["dates"] and flight["dates"][date]["status"] == "available":
                    found.append({k: v for k, v in flight.items() if k != "dates"} | flight["dates"][date])
        return json.dumps(found)

    @tool
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> str:
        """Search one-stop connections between two airports departing on a date (YYYY-MM-DD)."""
        flights = list(self.data["flights"].peek_values())
        found = []
        for first in flights:
            if first["origin"] != origin:
                continue
            for second in flights:
                if second["destination"] != destination or first["destination"] != second["origin"]:
                    continue
                overnight = "+1" in first["scheduled_arrival_time_est"]
                if self.training:
                    date2 = (dt.date.fromisoformat(date) + dt.timedelta(days=overnight)).isoformat()
                else:  # Official quirk: May only, and the day is not zero-padded ("2024-05-6").
                    date2 = f"2024-05-{int(date[-2:]) + 1}" if overnight else date
                if first["scheduled_arrival_time_est"] > second["scheduled_departure_time_est"]:
                    continue
                if date not in first["dates"] or date2 not in second["dates"]:
                    continue
                if first["dates"][date]["status"] != "available" or second["dates"][date2]["status"] != "available":
                    continue
                # Official quirk: the second leg shows its status/seats/prices for the FIRST leg's date
                # (a KeyError, reported as "Error: '<date>'", when it does not fly that day).
                shown = date2 if self.training else date
                legs = [{k: v for k, v in f.items() if k != "dates"} | f["dates"][d] | {"date": day}
                        for f, d, day in ((first, date, date), (second, shown, date2))]  # fmt: skip
                found.append(legs)
        return json.dumps(found)

    # ---- write tools
    @tool
    def book_reservation(
        self, user_id: str, origin: str, destination: str, flight_type: Literal["one_way", "round_trip"], cabin: Cabin,
        flights: list[FlightRef], passengers: list[Passenger], payment_methods: list[Payment], total_baggages: int,
        nonfree_baggages: int, insurance: Literal["yes", "no"],
    ) -> str:  # fmt: skip
        """Book a reservation; the payments must add up to the seats, insurance and non-free bags."""
        users, reservations = self.data["users"], self.data["reservations"]
        if user_id not in users:
            return "Error: user not found"
        user = users[user_id]
        reservation_id = next((r for r in NEW_RESERVATION_IDS if r not in reservations), NEW_RESERVATION_IDS[-1])
        reservation = {
            "reservation_id": reservation_id, "user_id": user_id, "origin": origin, "destination": destination,
            "flight_type": flight_type, "cabin": cabin, "flights": deepcopy(flights), "passengers": passengers,
            "payment_history": payment_methods, "created_at": CREATED_AT, "total_baggages": total_baggages,
            "nonfree_baggages": nonfree_baggages, "insurance": insurance,
        }  # fmt: skip
        total = 0
        for leg in reservation["flights"]:
            if (problem := self._price_leg(leg, cabin, passengers)) is not None:
                return problem
            total += leg["price"] * len(passengers)
        if insurance == "yes":
            total += INSURANCE_PRICE * len(passengers)
        total += BAG_PRICE * nonfree_baggages
        for payment in payment_methods:
            payment_id, amount = payment["payment_id"], payment["amount"]
            if payment_id not in user["payment_methods"]:
                return f"Error: payment method {payment_id} not found"
            method = user["payment_methods"][payment_id]
            if method["source"] in ("gift_card", "certificate") and method["amount"] < amount:
                return f"Error: not enough balance in payment method {payment_id}"
        paid = sum(payment["amount"] for payment in payment_methods)
        # Official: exact float comparison; training compares cents (0.1 + 0.2 pays 0.3).
        if (round(paid, 2) != round(total, 2)) if self.training else paid != total:
            return f"Error: payment amount does not add up, total price is {total}, but paid {paid}"
        for payment in payment_methods:
            method = user["payment_methods"][payment["payment_id"]]
            if method["source"] == "gift_card":
                method["amount"] -= payment["amount"]  # unrounded, as upstream
            elif method["source"] == "certificate":
                del user["payment_methods"][payment["payment_id"]]
        # Official quirk: available_seats is not decremented (in either mode).
        reservations[reservation_id] = reservation
        user["reservations"].append(reservation_id)
        return json.dumps(reservation)

    @tool
    def cancel_reservation(self, reservation_id: str) -> str:
        """Cancel the whole reservation; every payment is reversed in its payment history."""
        reservations = self.data["reservations"]
        if reservation_id not in reservations:
            return "Error: reservation not found"
        reservation = reservations[reservation_id]
        if self.training and reservation.get("status") == "cancelled":
            return "Error: reservation is already cancelled"
        # Official quirk: no status check, so a second cancel appends the (negated) history again.
        reservation["payment_history"].extend(
            [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
        )
        reservation["status"] = "cancelled"
        return json.dumps(reservation)

    @tool
    def update_reservation_baggages(self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str) -> str:
        """Update the baggage counts of a reservation; added non-free bags are charged to payment_id."""
        reservations = self.data["reservations"]
        if reservation_id not in reservations:
            return "Error: reservation not found"
        reservation = reservations[reservation_id]
        cost = BAG_PRICE * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        method, problem = self._update_payment(reservation, payment_id, cost)
        if problem is not None:
            return problem
        reservation["total_baggages"], reservation["nonfree_baggages"] = total_baggages, nonfree_baggages
        if method["source"] == "gift_card":
            method["amount"] -= cost
        if cost != 0:
            reservation["payment_history"].append({"payment_id": payment_id, "amount": cost})
        return json.dumps(reservation)

    @tool
    def update_reservation_flights(self, reservation_id: str, cabin: Cabin, flights: list[FlightRef], payment_id: str) -> str:
        """Replace the flights (the ENTIRE new itinerary, unchanged legs included) and cabin of a reservation."""
        reservations = self.data["reservations"]
        if reservation_id not in reservations:
            return "Error: reservation not found"
        reservation = reservations[reservation_id]
        travellers, legs, total = len(reservation["passengers"]), deepcopy(flights), 0
        for leg in legs:
            kept = [f for f in reservation["flights"]
                    if f["flight_number"] == leg["flight_number"] and f["date"] == leg["date"] and cabin == reservation["cabin"]]  # fmt: skip
            if kept:  # an unchanged leg in an unchanged cabin keeps its old price, even if unavailable now
                leg["price"], leg["origin"], leg["destination"] = kept[0]["price"], kept[0]["origin"], kept[0]["destination"]
            elif (problem := self._price_leg(leg, cabin, reservation["passengers"])) is not None:
                return problem
            total += leg["price"] * travellers
        total -= sum(f["price"] for f in reservation["flights"]) * travellers
        method, problem = self._update_payment(reservation, payment_id, total)
        if problem is not None:
            return problem
        if method["source"] == "gift_card":
            method["amount"] -= total  # a negative difference credits the gift card
        reservation["flights"] = legs
        if self.training:  # Official quirk: the cabin field keeps the old cabin.
            reservation["cabin"] = cabin
        if total != 0:
            reservation["payment_history"].append({"payment_id": payment_id, "amount": total})
        return json.dumps(reservation)  # the flights table is not updated (upstream: "it takes time")

    @tool
    def update_reservation_passengers(self, reservation_id: str, passengers: list[Passenger]) -> str:
        """Replace the passenger details of a reservation (the number of passengers cannot change)."""
        reservations = self.data["reservations"]
        if reservation_id not in reservations:
            return "Error: reservation not found"
        reservation = reservations[reservation_id]
        if len(passengers) != len(reservation["passengers"]):
            return "Error: number of passengers does not match"
        reservation["passengers"] = passengers
        return json.dumps(reservation)

    @tool
    def send_certificate(self, user_id: str, amount: float) -> str | None:
        """Send a travel certificate of the given amount to a user as compensation."""
        users = self.data["users"]
        if user_id not in users:
            return "Error: user not found"
        methods = users[user_id]["payment_methods"]
        for number in NEW_CERTIFICATE_IDS:
            payment_id = f"certificate_{number}"
            if payment_id not in methods:
                methods[payment_id] = {"source": "certificate", "amount": amount, "id": payment_id}
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        if self.training:
            return "Error: no more certificates can be sent in this conversation"
        return None  # Official quirk: a fourth certificate returns None, which crashes the official run (scored 0).
