"""tau-bench airline tools over `airline/data/{users,reservations,flights}.json`, named as upstream.

Prices follow the database (per-cabin seat prices per flight date); a non-free bag costs 50 and
travel insurance 30 per passenger, as tau-bench's airline policy states. New reservation and
certificate ids are derived from the table sizes, so replaying the same actions on a fresh copy gives
the same database (which the hash check relies on).
"""

from __future__ import annotations

from typing import Any

from .tau_common import TauDomain, ToolError, find, tool

BAG_PRICE, INSURANCE_PRICE = 50, 30
CREATED_AT = "2024-05-15T15:00:00"  # tau-bench's fixed "now"


class AirlineTools(TauDomain):
    files = ("users", "reservations", "flights")

    # ---- helpers
    def _available(self, flight_number: str, date: str) -> tuple[dict[str, Any], dict[str, Any]]:
        flight = find(self.data["flights"], flight_number, f"Flight {flight_number}")
        day = flight["dates"].get(date)
        if day is None or day.get("status") != "available":
            raise ToolError(f"flight {flight_number} not available on date {date}")
        return flight, day

    def _charge(self, user: dict[str, Any], payment_id: str, amount: float) -> dict[str, Any]:
        """Validate and apply one payment; certificates are used up, gift cards debited."""
        method = find(user["payment_methods"], payment_id, f"payment method {payment_id}")
        if method["source"] in ("gift_card", "certificate") and method.get("balance", method.get("amount", 0)) < amount:
            raise ToolError(f"not enough balance in payment method {payment_id}")
        return method

    def _apply(self, user: dict[str, Any], payment_id: str, amount: float) -> None:
        method = user["payment_methods"][payment_id]
        if method["source"] == "gift_card":
            method["amount"] = round(method["amount"] - amount, 2)
        elif method["source"] == "certificate":
            del user["payment_methods"][payment_id]

    # ---- read tools
    @tool
    def get_user_details(self, user_id: str) -> dict:
        """Get the details of a user, including their reservations."""
        return find(self.data["users"], user_id, "User")

    @tool
    def get_reservation_details(self, reservation_id: str) -> dict:
        """Get the details of a reservation."""
        return find(self.data["reservations"], reservation_id, "Reservation")

    @tool
    def list_all_airports(self) -> list:
        """List all airports served (IATA codes)."""
        return sorted({f[k] for f in self.data["flights"].values() for k in ("origin", "destination")})

    @tool
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list:
        """Search direct flights between two cities on a date (YYYY-MM-DD)."""
        out = []
        for f in self.data["flights"].values():
            day = f["dates"].get(date, {})
            if (f["origin"], f["destination"]) == (origin, destination) and day.get("status") == "available":
                out.append({k: v for k, v in f.items() if k != "dates"} | {"date": date, **day})
        return out

    @tool
    def search_onestop_flight(self, origin: str, destination: str, date: str) -> list:
        """Search one-stop connections (same day, second leg departs after the first lands)."""
        pairs = []
        legs = [f for f in self.data["flights"].values() if f["dates"].get(date, {}).get("status") == "available"]
        for a in legs:
            for b in legs:
                if a["origin"] == origin and b["destination"] == destination and a["destination"] == b["origin"]:
                    if b["scheduled_departure_time_est"] > a["scheduled_arrival_time_est"]:
                        pairs.append([{k: v for k, v in f.items() if k != "dates"} | {"date": date, **f["dates"][date]} for f in (a, b)])
        return pairs

    # ---- write tools
    @tool
    def book_reservation(
        self, user_id: str, origin: str, destination: str, flight_type: str, cabin: str, flights: list[dict],
        passengers: list[dict], payment_methods: list[dict], total_baggages: int, nonfree_baggages: int, insurance: str,
    ) -> dict:  # fmt: skip
        """Book a reservation; payments must sum to seat prices x passengers plus bags and insurance."""
        user = find(self.data["users"], user_id, "User")
        legs, total = [], 0.0
        for leg in flights:
            flight, day = self._available(leg["flight_number"], leg["date"])
            if day["available_seats"][cabin] < len(passengers):
                raise ToolError(f"not enough seats on flight {leg['flight_number']}")
            price = day["prices"][cabin]
            legs.append({"origin": flight["origin"], "destination": flight["destination"],
                         "flight_number": leg["flight_number"], "date": leg["date"], "price": price})  # fmt: skip
            total += price * len(passengers)
        total += BAG_PRICE * nonfree_baggages + (INSURANCE_PRICE * len(passengers) if insurance == "yes" else 0)
        paid = sum(p["amount"] for p in payment_methods)
        if round(paid, 2) != round(total, 2):
            raise ToolError(f"payment amount does not add up, total price is {total}, but paid {paid}")
        for p in payment_methods:
            self._charge(user, p["payment_id"], p["amount"])
        for p in payment_methods:
            self._apply(user, p["payment_id"], p["amount"])
        for leg in legs:
            self.data["flights"][leg["flight_number"]]["dates"][leg["date"]]["available_seats"][cabin] -= len(passengers)
        reservation_id = f"NEW{len(self.data['reservations']):03d}"
        reservation = {
            "reservation_id": reservation_id, "user_id": user_id, "origin": origin, "destination": destination,
            "flight_type": flight_type, "cabin": cabin, "flights": legs, "passengers": [dict(p) for p in passengers],
            "payment_history": [dict(p) for p in payment_methods], "created_at": CREATED_AT,
            "total_baggages": total_baggages, "nonfree_baggages": nonfree_baggages, "insurance": insurance,
        }  # fmt: skip
        self.data["reservations"][reservation_id] = reservation
        user["reservations"].append(reservation_id)
        return reservation

    @tool
    def cancel_reservation(self, reservation_id: str) -> dict:
        """Cancel a reservation; every payment is refunded to its method."""
        reservation = find(self.data["reservations"], reservation_id, "Reservation")
        if reservation.get("status") == "cancelled":
            raise ToolError("reservation is already cancelled")
        refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"
        return reservation

    @tool
    def update_reservation_baggages(self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str) -> dict:
        """Update the bag counts of a reservation; extra non-free bags are charged to payment_id."""
        reservation = find(self.data["reservations"], reservation_id, "Reservation")
        user = self.data["users"][reservation["user_id"]]
        cost = BAG_PRICE * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        self._charge(user, payment_id, cost)
        reservation["total_baggages"], reservation["nonfree_baggages"] = total_baggages, nonfree_baggages
        if cost:
            self._apply(user, payment_id, cost)
            reservation["payment_history"].append({"payment_id": payment_id, "amount": cost})
        return reservation

    @tool
    def update_reservation_passengers(self, reservation_id: str, passengers: list[dict]) -> dict:
        """Replace the passenger details of a reservation (the number of passengers cannot change)."""
        reservation = find(self.data["reservations"], reservation_id, "Reservation")
        if len(passengers) != len(reservation["passengers"]):
            raise ToolError("number of passengers does not match")
        reservation["passengers"] = [dict(p) for p in passengers]
        return reservation

    @tool
    def update_reservation_flights(self, reservation_id: str, cabin: str, flights: list[dict], payment_id: str) -> dict:
        """Change the flights/cabin of a reservation; the price difference is charged or refunded."""
        reservation = find(self.data["reservations"], reservation_id, "Reservation")
        user = self.data["users"][reservation["user_id"]]
        n, legs = len(reservation["passengers"]), []
        for leg in flights:
            kept = next((f for f in reservation["flights"] if (f["flight_number"], f["date"]) == (leg["flight_number"], leg["date"])), None)
            if kept is not None and cabin == reservation["cabin"]:
                legs.append(dict(kept))
                continue
            flight, day = self._available(leg["flight_number"], leg["date"])
            legs.append({"origin": flight["origin"], "destination": flight["destination"], "flight_number": leg["flight_number"],
                         "date": leg["date"], "price": day["prices"][cabin]})  # fmt: skip
        diff = (sum(f["price"] for f in legs) - sum(f["price"] for f in reservation["flights"])) * n
        self._charge(user, payment_id, max(diff, 0))
        if diff > 0:
            self._apply(user, payment_id, diff)
        reservation["flights"], reservation["cabin"] = legs, cabin
        if diff:
            reservation["payment_history"].append({"payment_id": payment_id, "amount": diff})
        return reservation

    @tool
    def send_certificate(self, user_id: str, amount: int) -> str:
        """Send a travel certificate of the given amount to a user (compensation)."""
        user = find(self.data["users"], user_id, "User")
        cert_id = f"certificate_{len(user['payment_methods']) + 9000000}"
        user["payment_methods"][cert_id] = {"source": "certificate", "amount": amount, "id": cert_id}
        return f"Certificate {cert_id} added to user {user_id} with amount {amount}."
