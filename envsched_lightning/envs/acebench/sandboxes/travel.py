"""ACEBench-Agent's airline sandbox (`Travel`), written from its behaviour.

Upstream (chenchen0103/ACEBench, `model_inference/multi_step/scenariosen/travel.py`) exposes every public
method as a tool, helpers included. The behaviour kept here on purpose, because the official end state
depends on it: booking fails (before anything changes) when the password is wrong or the cabin is not
"Economy Class"/"Business Class"; a cancellation refunds to the cash balance and leaves the
reservation in place; a modification applies its parts in order (flight, cabin, baggage) and keeps
the parts done before one that fails; the cabin price difference is read from the original flight.
The clock is fixed at 2024-07-14 06:00 for cancellations.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

_NOW = datetime(2024, 7, 14, 6, 0, 0)
_STAMP = "%Y-%m-%d %H:%M:%S"
_FREE_BAGS = {"regular": {"Economy Class": 1, "Business Class": 2}, "silver": {"Economy Class": 2, "Business Class": 3},
              "gold": {"Economy Class": 3, "Business Class": 3}}  # fmt: skip
_BAG_FEE = 50
_AIRLINE_CANCELLED = "The airline has canceled the flight."

_USERS = (  # (user id, name, password, cash, bank, membership)
    ("user1", "Eve", "password123", 2000.0, 50000.0, "regular"),
    ("user2", "Frank", "password456", 8000.0, 8000.0, "silver"),
    ("user3", "Grace", "password789", 1000.0, 5000.0, "gold"),
)
_FLIGHTS = (  # (number, origin, destination, departs, arrives, seats, economy, business)
    ("CA1234", "Beijing", "Shanghai", "2024-07-15 08:00:00", "2024-07-15 10:30:00", 5, 1200, 3000),
    ("MU5678", "Shanghai", "Beijing", "2024-07-16 09:00:00", "2024-07-16 11:30:00", 3, 1900, 3000),
    ("CZ4321", "Shanghai", "Beijing", "2024-07-16 20:00:00", "2024-07-16 22:00:00", 8, 2500, 4000),
    ("CZ4352", "Shanghai", "Beijing", "2024-07-17 20:00:00", "2024-07-17 22:00:00", 8, 1600, 2500),
    ("MU3561", "Beijing", "Nanjing", "2024-07-18 08:00:00", "2024-07-18 10:00:00", 8, 1500, 4000),
    ("MU1566", "Beijing", "Nanjing", "2024-07-18 20:00:00", "2024-07-18 22:00:00", 8, 1500, 4000),
    ("CZ1765", "Nanjing", "Shenzhen", "2024-07-17 20:30:00", "2024-07-17 22:00:00", 8, 1500, 2500),
    ("CZ1765", "Nanjing", "Shenzhen", "2024-07-18 12:30:00", "2024-07-18 15:00:00", 8, 1500, 2500),
    ("MH1765", "Xiamen", "Chengdu", "2024-07-17 12:30:00", "2024-07-17 15:00:00", 8, 1500, 2500),
    ("MH2616", "Chengdu", "Xiamen", "2024-07-18 18:30:00", "2024-07-18 21:00:00", 8, 1500, 2500),
    ("MH2616", "Chengdu", "Fuzhou", "2024-07-16 18:30:00", "2024-07-16 21:00:00", 8, 1500, 2500),
)
_RESERVATIONS = (  # (id, user, flight, payment, cabin, bags, origin, destination)
    ("res_1", "user1", "CA1234", "bank", "Economy Class", 1, "Beijing", "Shanghai"),
    ("res_2", "user1", "MU5678", "bank", "Business Class", 1, "Shanghai", "Beijing"),
    ("res_3", "user2", "MH1765", "bank", "Business Class", 1, "Xiamen", "Chengdu"),
    ("res_4", "user2", "MU2616", "bank", "Business Class", 1, "Chengdu", "Xiamen"),  # (no such flight: as upstream)
)
_FLIGHT_KEYS = ("flight_no", "origin", "destination", "depart_time", "arrival_time", "status", "seats_available",
                "economy_price", "business_price")  # fmt: skip
_AUTH_FAILED = {"status": "error", "message": "Incorrect username or password."}


class Travel:
    """Flights, three users with cash and bank balances, and their reservations."""

    def __init__(self) -> None:
        self.users = {uid: {"user_name": name, "password": pw, "cash_balance": cash, "bank_balance": bank,
                            "membership_level": level} for uid, name, pw, cash, bank, level in _USERS}  # fmt: skip
        self.flights = [dict(zip(_FLIGHT_KEYS, (no, a, b, dep, arr, "available", seats, eco, bus)))
                        for no, a, b, dep, arr, seats, eco, bus in _FLIGHTS]  # fmt: skip
        keys = ("reservation_id", "user_id", "flight_no", "payment_method", "cabin", "baggage", "origin", "destination")
        self.reservations = [dict(zip(keys, r)) for r in _RESERVATIONS]

    def _load_scenario(self, scenario: dict[str, Any], long_context: bool = False) -> None:
        """The airline world takes nothing from a task's config."""

    def _flight(self, number: Any, available_only: bool = False) -> dict[str, Any] | None:
        return next((f for f in self.flights if f["flight_no"] == number and (not available_only or f["status"] == "available")), None)

    def _reservation(self, reservation_id: Any, user_id: Any) -> dict[str, Any] | None:
        return next((r for r in self.reservations if r["reservation_id"] == reservation_id and r["user_id"] == user_id), None)

    def get_flight_details(self, origin: str | None = None, destination: str | None = None) -> Any:
        found = [f for f in self.flights if (not origin or f["origin"] == origin)
                 and (not destination or f["destination"] == destination)]  # fmt: skip
        if not found:
            return "There are no direct flights that meet the criteria."
        return [{k: f[k] for k in _FLIGHT_KEYS} for f in found]

    def get_user_details(self, user_id: str, password: str) -> dict[str, Any]:
        user = self.users.get(user_id)
        if user and user["password"] == password:
            return {k: v for k, v in user.items() if k != "password"}
        return dict(_AUTH_FAILED)

    def get_reservation_details(self, reservation_id: str | None = None, user_id: str | None = None) -> Any:
        if reservation_id:
            mine = [r for r in self.reservations if r["reservation_id"] == reservation_id]
        elif user_id:
            mine = [r for r in self.reservations if r["user_id"] == user_id]
        else:
            return {"status": "error", "message": "Please provide a valid reservation ID or user ID"}
        return [{**r, "flight_info": self._flight(r["flight_no"])} for r in mine]

    def authenticate_user(self, user_id: str, password: str) -> dict[str, Any]:
        user = self.users.get(user_id)
        return user if user and user["password"] == password else dict(_AUTH_FAILED)

    def get_baggage_allowance(self, membership_level: str, cabin_class: str) -> int:
        return _FREE_BAGS.get(membership_level, {}).get(cabin_class, 0)

    def find_transfer_flights(self, origin_city: str, transfer_city: str, destination_city: str) -> Any:
        def legs(a: str, b: str) -> list[dict[str, Any]]:
            return [f for f in self.flights if f["origin"] == a and f["destination"] == b and f["status"] == "available"]

        pairs = [{"first_leg": first, "second_leg": second}
                 for first in legs(origin_city, transfer_city) for second in legs(transfer_city, destination_city)
                 if datetime.strptime(first["arrival_time"], _STAMP) < datetime.strptime(second["depart_time"], _STAMP)]  # fmt: skip
        return pairs or "No connecting flights that meet the criteria were found."

    def calculate_baggage_fee(self, membership_level: str, cabin_class: str, baggage_count: int) -> int:
        return max(baggage_count - _FREE_BAGS[membership_level][cabin_class], 0) * _BAG_FEE

    def update_balance(self, user: dict[str, Any], payment_method: str, amount: float) -> bool:
        """Move `amount` on the user's cash or bank balance; False (nothing moved) if it would go below zero."""
        account = {"cash": "cash_balance", "bank": "bank_balance"}.get(payment_method)
        if account is None:
            return True
        if user[account] + amount < 0:
            return False
        user[account] += amount
        return True

    def reserve_flight(self, user_id: str, password: str, flight_no: str, cabin: str, payment_method: str,
                       baggage_count: int) -> str:  # fmt: skip
        user = self.authenticate_user(user_id, password)  # a failed login gives a record without a membership
        flight = self._flight(flight_no, available_only=True)
        price = flight["economy_price"] if cabin == "Economy Class" else flight["business_price"]  # type: ignore[index]
        total = price + self.calculate_baggage_fee(user["membership_level"], cabin, baggage_count)
        if payment_method not in ("cash", "bank"):
            return "Invalid payment method"
        account = f"{payment_method}_balance"
        if total > self.users.get(user_id)[account]:  # type: ignore[index]
            return f"Your {payment_method} balance is insufficient. Please consider using another payment method."
        self.users.get(user_id)[account] -= total  # type: ignore[index]
        flight["seats_available"] -= 1  # type: ignore[index]
        reservation_id = f"res_{len(self.reservations) + 1}"
        self.reservations.append({"reservation_id": reservation_id, "user_id": user_id, "flight_no": flight_no,
                                  "payment_method": payment_method, "cabin": cabin, "baggage": baggage_count})  # fmt: skip
        return f"Booking successful. Reservation ID: {reservation_id}. Total cost: {total} yuan (including baggage fees)."

    def modify_flight(self, user_id: str, reservation_id: str, new_flight_no: str | None = None,
                      new_cabin: str | None = None, add_baggage: int = 0, new_payment_method: str | None = None) -> str:  # fmt: skip
        reservation = self._reservation(reservation_id, user_id)
        if not reservation:
            return "Reservation not found or user ID does not match."
        flight = self._flight(reservation["flight_no"])
        if not flight:
            return "Flight information not found."
        payment = new_payment_method or reservation["payment_method"]
        user = self.users[user_id]
        said = []
        if new_flight_no and new_flight_no != reservation["flight_no"]:
            new = self._flight(new_flight_no)
            if not (new and (new["origin"], new["destination"]) == (flight["origin"], flight["destination"])):
                return "Flight change failed: Invalid new flight number or destination does not match."
            reservation["flight_no"] = new_flight_no
            said.append("Flight number has been changed.")
        if new_cabin and new_cabin != reservation.get("cabin"):
            difference = self.calculate_price_difference(flight, reservation["cabin"], new_cabin)
            reservation["cabin"] = new_cabin
            if difference > 0:
                paid = self.update_balance(user, payment, -difference)
                said.append(f"Cabin change successful. Price difference paid: {difference}." if paid
                            else "Insufficient balance to pay the cabin price difference.")  # fmt: skip
            elif difference < 0:
                self.update_balance(user, payment, -difference)
                said.append(f"Cabin change successful. Price difference refunded: {-difference}.")
        if add_baggage > 0:
            bags = reservation.get("baggage", 0) + add_baggage
            cost = max(0, bags - self.get_baggage_allowance(user["membership_level"], reservation["cabin"])) * _BAG_FEE
            if cost > 0:
                paid = self.update_balance(user, payment, -cost)
                said.append(f"Baggage has been added. Additional fee to be paid: {cost}." if paid
                            else "Insufficient balance to pay the additional baggage fees.")  # fmt: skip
            reservation["baggage"] = bags
        return " ".join(said) or "Modification completed with no additional fees."

    def cancel_reservation(self, user_id: str, reservation_id: str, reason: str) -> str:
        user = self.users.get(user_id, None)
        if not user:
            return "Invalid user ID."
        reservation = self._reservation(reservation_id, user_id)
        if not reservation:
            return "Invalid reservation ID or it does not belong to the user."
        flight = self._flight(reservation["flight_no"])
        if not flight:
            return "Invalid flight information."
        departs = datetime.strptime(flight["depart_time"], _STAMP)
        if _NOW > departs:
            return "The flight segment has been used and cannot be canceled."
        price = flight["economy_price"] if reservation["cabin"] == "Economy Class" else flight["business_price"]
        if reason == _AIRLINE_CANCELLED:
            self.process_refund(user, price)
            return f"The flight has been canceled. Your reservation will be canceled free of charge, and {price} yuan has been refunded."
        if departs - _NOW > timedelta(days=1):
            self.process_refund(user, price)
            return f"More than 24 hours before departure. Free cancellation successful, {price} yuan has been refunded."
        fee = price * 0.1
        self.process_refund(user, price - fee)
        return (f"Less than 24 hours before departure. A cancellation fee of {fee} yuan has been deducted, and "
                f"{price - fee} yuan has been refunded.")  # fmt: skip

    def process_refund(self, user: dict[str, Any], amount: float) -> None:
        """Add `amount` to the user's cash balance (refunds always go to cash)."""
        user["cash_balance"] += amount

    def calculate_price_difference(self, flight: dict[str, Any], old_cabin: str, new_cabin: str) -> float:
        prices = {"Economy Class": flight["economy_price"], "Business Class": flight["business_price"]}
        return prices.get(new_cabin, 0) - prices.get(old_cabin, 0)
