"""BFCL `TravelAPI` (func-doc file `travel_booking.json`), behaving as the official class
(bfcl-eval 2026.3.23) does.

State (compared by the checker): `credit_card_list` (card id -> card dict with a `balance`),
`booking_record` (booking id -> booking dict), `access_token`, `token_type`, `token_expires_in`,
`token_scope`, `user_first_name`, `user_last_name`, `budget_limit`, and `long_context` (the flag
`load` was given). Every default is empty or None. Ids, tokens and new card balances are drawn from
`random.Random(seed)` in upstream's order (seed `random_seed`, default 141053): a 6-digit token per
`authenticate_travel`, a 12-digit card id then a 5-digit balance per `register_credit_card`, a
7-digit booking id then an 8-digit transaction id per `book_flight`, a 9-digit insurance id per
`purchase_insurance`. Fares, airports and exchange rates are upstream's tables.

Long-context mode (``load(config, long_context=True)``, upstream's ``_load_scenario(...,
long_context=True)``): upstream's 22 filler cards and 16 filler bookings (`long_context_data`) are
added after the scenario's, each only where the scenario has no entry of that id;
`get_flight_cost` answers the fare of every route in upstream's table order (after the same route
and class checks) at the asked class and date; `book_flight` answers the whole live
`booking_record` as `booking_history` instead of ``{}``. Quirk: upstream inserts its module-level
card dicts themselves, so a booking, refund or insurance on a filler card changes that card for
every instance in the Python process: the model's and the ground truth's alike (the checker then
sees equal balances), and every later entry. We share the filler cards through `Backend._shared`
(one per checker run, one per episode), which reproduces a checker run's verdicts but not the
leak from one entry into the next; under `rules="training"` each instance gets its own copies.

Upstream's private fare cache (`_flight_cost_lookup`) is not kept: `book_flight` always finds the
fare it has just computed (in long-context mode the cache holds every route at the booking's class
and date), so nothing observable depends on it. Upstream's private `_set_card_balance` is not a
tool and is not provided. Apart from the filler cards, `rules="training"` changes nothing here.

Quirks kept (each marked `# Quirk:` below): a token check is `access_token == self.access_token`
only, so before any login (token None) ``access_token=None`` passes, and a loaded token never
expires (`token_expires_in` stays at its value; only 0 means expired); `register_credit_card`
looks the card *number* up among card *ids*; `book_flight` refuses when the card's balance is
below the budget limit (not the fare), and `purchase_insurance` compares the limit with the
insurance cost and debits without checking the balance (no insurance is recorded);
`retrieve_invoice` ignores `insurance_id`; an unknown location's airport is "Unknown"; a date whose
digits sum to an even number doubles the fare; `compute_exchange_rate` answers a dict (USD->X
unrounded, X->USD rounded to 2 places) and raises ValueError for any other pair; the
verification failure for another user lacks a space ("...another user.Expected A B, got C D");
`book_flight`'s invalid-class error shows a set (its order is Python's string-hash order, as
upstream's); wrong argument types fail as upstream's expressions fail (TypeError/AttributeError/
ValueError with Python's own message).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from copy import deepcopy
from datetime import datetime
from typing import Any

from . import Backend
from .long_context_data import BOOKING_RECORD_EXTENSION, CREDIT_CARD_EXTENSION

DEFAULT_SEED = 141053

AIRPORTS = (
    "RMS SBK MPC SVP SHD CDG LHR SSV OKD WLB PEK HND HKG CIA CRH ATV PHV GFD SFO LAX JFK ORD BOS"
).split()  # the order `list_all_airports` answers

CITY_AIRPORTS = {
    "Rivermist": "RMS", "Stonebrook": "SBK", "Maplecrest": "MPC", "Silverpine": "SVP", "Shadowridge": "SHD",
    "London": "LHR", "Paris": "CDG", "Sunset Valley": "SSV", "Oakendale": "OKD", "Willowbend": "WLB",
    "Crescent Hollow": "CRH", "Autumnville": "ATV", "Pinehaven": "PHV", "Greenfield": "GFD",
    "San Francisco": "SFO", "Los Angeles": "LAX", "New York": "JFK", "Chicago": "ORD", "Boston": "BOS",
    "Beijing": "PEK", "Hong Kong": "HKG", "Rome": "CIA", "Tokyo": "HND",
}  # fmt: skip

# One-way economy base fares in USD, "FROM TO fare TO fare ..." per line, in upstream's table order
# (long-context `get_flight_cost` lists them all in it). Routes are directed: the reverse of a
# listed route has no fare. (JFK->PVG is priced although PVG is not an airport.)
_FARES = """
SFO LAX 200 JFK 500 ORD 400 BOS 450 RMS 300 SBK 350 MPC 370 SVP 320 SHD 330 SSV 340 OKD 360 WLB 310 CRH 380 ATV 390 PHV 420 GFD 430 CIA 700
LAX SFO 100 JFK 600 ORD 500 BOS 550 RMS 310 SBK 320 MPC 330 SVP 340 SHD 350 SSV 360 OKD 370 WLB 380 CRH 390 ATV 400 PHV 410 GFD 420 HND 430
JFK ORD 300 BOS 250 RMS 450 SBK 460 MPC 470 SVP 480 SHD 490 SSV 500 OKD 510 WLB 520 CRH 530 ATV 540 PHV 550 GFD 560 LAX 570 HND 800 PVG 950 PEK 1000
ORD LAX 180 BOS 200 RMS 350 SBK 360 MPC 370 SVP 380 SHD 390 SSV 400 OKD 410 WLB 420 CRH 430 ATV 440 PHV 450 GFD 460
BOS RMS 400 SBK 410 MPC 420 SVP 430 SHD 440 SSV 450 OKD 460 WLB 470 CRH 480 ATV 490 PHV 500 GFD 510
RMS BOS 200 JFK 210 SBK 220 MPC 230 SVP 240 SHD 250 SSV 260 OKD 270 WLB 280 CRH 290 ATV 300 PHV 310 GFD 320 LAX 330
SBK MPC 200 SVP 210 SHD 220 SSV 230 OKD 240 WLB 250 CRH 260 ATV 270 PHV 280 GFD 290
MPC SVP 210 SHD 220 SSV 230 OKD 240 WLB 250 CRH 260 ATV 270 PHV 280 GFD 290
SVP SHD 230 SSV 240 OKD 250 WLB 260 CRH 270 ATV 280 PHV 290 GFD 300
SHD SSV 220 OKD 230 WLB 240 CRH 250 ATV 260 PHV 270 GFD 280
SSV OKD 240 WLB 250 CRH 260 ATV 270 PHV 280 GFD 290
OKD WLB 230 CRH 240 ATV 250 PHV 260 GFD 270
WLB CRH 250 ATV 260 PHV 270 GFD 280
CRH ATV 240 PHV 250 GFD 260 SFO 270 RMS 280 HKG 290 JFK 300
ATV PHV 230 GFD 240
PHV GFD 220
LHR CDG 100
OKD LAX 220
"""


def _parse_fares(text: str) -> dict[tuple[str, str], int]:
    fares: dict[tuple[str, str], int] = {}
    for line in text.split("\n"):
        if line.strip():
            origin, *rest = line.split()
            fares.update({(origin, rest[i]): int(rest[i + 1]) for i in range(0, len(rest), 2)})
    return fares


BASE_FARES = _parse_fares(_FARES)
CLASS_FACTORS = (("economy", 1), ("business", 2), ("first", 5))  # compared with ==, never hashed
TRAVEL_CLASSES = {"economy", "business", "first"}  # printed as upstream prints it: a set, in no defined order
# (other, rate): 1 USD = rate other. Pairs are matched with == in this order, as upstream does.
USD_RATES = (("RMB", 7), ("EUR", 0.8), ("JPY", 110), ("GBP", 0.7), ("CAD", 1.3), ("AUD", 1.4),
             ("INR", 70), ("RUB", 60), ("BRL", 3.8), ("MXN", 20))  # fmt: skip
INVOICE_FIELDS = ("travel_date", "travel_from", "travel_to", "travel_class", "travel_cost", "transaction_id")
SUPPORT_REPLY = ("Thank you for contacting customer support. Your message has been received and we will get back "
                 "to you shortly.")  # fmt: skip


class TravelAPI(Backend):
    tool_names = frozenset(
        "authenticate_travel book_flight cancel_booking compute_exchange_rate contact_customer_support "
        "get_all_credit_cards get_booking_history get_budget_fiscal_year get_credit_card_balance get_flight_cost "
        "get_nearest_airport_by_city list_all_airports purchase_insurance register_credit_card retrieve_invoice "
        "set_budget_limit travel_get_login_status verify_traveler_information".split()
    )
    defaults = {
        "credit_card_list": {},
        "booking_record": {},
        "access_token": None,
        "token_type": None,
        "token_expires_in": None,
        "token_scope": None,
        "user_first_name": None,
        "user_last_name": None,
        "budget_limit": None,
    }

    def load(self, config: Mapping[str, Any], long_context: bool = False) -> None:
        self._random = random.Random(config.get("random_seed", DEFAULT_SEED))
        super().load(config)
        self.long_context = long_context  # public upstream too, so the checker compares it
        if long_context:
            if self._rules == "official":  # Quirk: one set of filler cards for every instance (see above)
                cards = self._shared.setdefault("TravelAPI.long_context.cards", deepcopy(CREDIT_CARD_EXTENSION))
            else:
                cards = deepcopy(CREDIT_CARD_EXTENSION)
            for card_id, card in cards.items():
                self.credit_card_list.setdefault(card_id, card)
            for booking_id, booking in deepcopy(BOOKING_RECORD_EXTENSION).items():
                self.booking_record.setdefault(booking_id, booking)

    def _token_error(self, access_token: Any) -> str | None:
        """Why a secured call is refused, or None."""
        if self.token_expires_in == 0:
            return "Token expired"
        if access_token != self.access_token:  # Quirk: None matches before any login
            return "Invalid access token"
        return None

    def _scale(self, travel_from: Any, travel_to: Any, travel_date: Any, travel_class: Any) -> int:
        """What the base fare is multiplied by, raising upstream's ValueErrors (route first, then class)."""
        if (travel_from, travel_to) not in BASE_FARES:
            raise ValueError("No available route for the given airports.")
        factor = next((f for name, f in CLASS_FACTORS if travel_class == name), None)
        if factor is None:
            raise ValueError("Invalid travel class. Options are: economy, business, first.")
        digit_sum = sum(int(c) for c in travel_date if c.isdigit())
        return factor * (2 if digit_sum % 2 == 0 else 1)  # Quirk: even digit sum doubles

    def _fare(self, travel_from: Any, travel_to: Any, travel_date: Any, travel_class: Any) -> float:
        """The fare upstream computes (integers until the final float, as upstream's)."""
        scale = self._scale(travel_from, travel_to, travel_date, travel_class)  # raises before the lookup
        return float(BASE_FARES[(travel_from, travel_to)] * scale)

    def authenticate_travel(self, client_id: str, client_secret: str, refresh_token: str, grant_type: str,
                            user_first_name: str, user_last_name: str) -> dict[str, Any]:  # fmt: skip
        self.token_expires_in = 2
        self.access_token = str(self._random.randint(100000, 999999))
        self.token_type = "Bearer"
        self.token_scope = grant_type
        self.user_first_name = user_first_name
        self.user_last_name = user_last_name
        return {"expires_in": 2, "access_token": self.access_token, "token_type": "Bearer", "scope": grant_type}

    def travel_get_login_status(self) -> dict[str, bool]:
        return {"status": not (self.token_expires_in is None or self.token_expires_in == 0)}

    def get_budget_fiscal_year(self, lastModifiedAfter: str | None = None,  # noqa: N803 - upstream's names
                               includeRemoved: str | None = None) -> dict[str, str]:  # noqa: N803
        return {"budget_fiscal_year": "2018"}

    def register_credit_card(self, access_token: str, card_number: str, expiration_date: str, cardholder_name: str,
                             card_verification_number: int) -> dict[str, Any]:  # fmt: skip
        if self.token_expires_in is None:
            return {"error": "Token not initialized"}
        if error := self._token_error(access_token):
            return {"error": error}
        if card_number in self.credit_card_list:  # Quirk: a card number looked up among card ids
            return {"error": "Card already registered"}
        card_id = str(self._random.randint(100000000000, 999999999999))
        self.credit_card_list[card_id] = {
            "card_number": card_number,
            "expiration_date": expiration_date,
            "cardholder_name": cardholder_name,
            "card_verification_number": card_verification_number,
            "balance": self._random.randint(10000, 99999),
        }
        return {"card_id": card_id}

    def get_flight_cost(self, travel_from: str, travel_to: str, travel_date: str, travel_class: str) -> dict[str, list[float]]:
        if self.long_context:  # every route, at this class and date
            scale = self._scale(travel_from, travel_to, travel_date, travel_class)
            return {"travel_cost_list": [float(base * scale) for base in BASE_FARES.values()]}
        return {"travel_cost_list": [self._fare(travel_from, travel_to, travel_date, travel_class)]}

    def get_credit_card_balance(self, access_token: str, card_id: str) -> dict[str, Any]:
        if error := self._token_error(access_token):
            return {"error": error}
        if card_id not in self.credit_card_list:
            return {"error": f"Card not registered. Here are a list of card_id's: {list(self.credit_card_list.keys())}"}
        return {"card_balance": self.credit_card_list[card_id]["balance"]}

    def book_flight(self, access_token: str, card_id: str, travel_date: str, travel_from: str, travel_to: str,
                    travel_class: str) -> dict[str, Any]:  # fmt: skip
        def refuse(error: str) -> dict[str, Any]:
            return {"booking_status": False, "error": error}

        if error := self._token_error(access_token):
            return refuse(error)
        if card_id not in self.credit_card_list:
            return refuse("Card not registered")
        card = self.credit_card_list[card_id]
        if "balance" not in card:
            return refuse("Balance not found")
        if travel_from not in AIRPORTS:
            return refuse(f"Invalid departure airport code: {travel_from}")
        if travel_to not in AIRPORTS:
            return refuse(f"Invalid destination airport code: {travel_to}")
        try:
            datetime.strptime(travel_date, "%Y-%m-%d")  # a non-string raises TypeError, as upstream
        except ValueError:
            return refuse("Invalid date format. Use YYYY-MM-DD.")
        if travel_class not in TRAVEL_CLASSES:
            return refuse(f"Invalid travel class. Must be one of {TRAVEL_CLASSES}")
        try:
            cost = self._fare(travel_from, travel_to, travel_date, travel_class)
        except ValueError as exc:
            return refuse(str(exc))
        if card["balance"] < cost:
            return refuse("Insufficient funds")
        if self.budget_limit is not None and card["balance"] < self.budget_limit:  # Quirk: balance vs limit
            return refuse("Balance is less than budget limit")
        card["balance"] -= cost
        booking_id = str(self._random.randint(1000000, 9999999))
        transaction_id = str(self._random.randint(10000000, 99999999))
        self.booking_record[booking_id] = {
            "card_id": card_id,
            "travel_date": travel_date,
            "travel_from": travel_from,
            "travel_to": travel_to,
            "travel_class": travel_class,
            "travel_cost": cost,
            "transaction_id": transaction_id,
        }
        history = self.booking_record if self.long_context else {}  # the live dict, as upstream
        return {"booking_id": booking_id, "transaction_id": transaction_id, "booking_status": True,
                "booking_history": history}  # fmt: skip

    def retrieve_invoice(self, access_token: str, booking_id: str | None = None,
                         insurance_id: str | None = None) -> dict[str, Any]:  # fmt: skip
        if error := self._token_error(access_token):
            return {"error": error}
        if booking_id not in self.booking_record:  # Quirk: insurance_id is never looked at
            return {"error": "Booking not found"}
        booking = self.booking_record[booking_id]
        return {"invoice": {"booking_id": booking_id, **{field: booking[field] for field in INVOICE_FIELDS}}}

    def get_booking_history(self, access_token: str) -> dict[str, Any]:
        if error := self._token_error(access_token):
            return {"error": error}
        return {"booking_history": deepcopy(self.booking_record)}

    def list_all_airports(self) -> list[str]:
        return list(AIRPORTS)

    def cancel_booking(self, access_token: str, booking_id: str) -> dict[str, Any]:
        if error := self._token_error(access_token):
            return {"cancel_status": False, "error": error}
        if booking_id not in self.booking_record:
            return {"cancel_status": False, "error": "Booking not found"}
        booking = self.booking_record[booking_id]
        card_id, cost = booking["card_id"], booking["travel_cost"]
        self.credit_card_list[card_id]["balance"] += cost
        del self.booking_record[booking_id]
        return {"cancel_status": True}

    def compute_exchange_rate(self, base_currency: str, target_currency: str, value: float) -> dict[str, float]:
        for other, rate in USD_RATES:
            if base_currency == "USD" and target_currency == other:
                return {"exchanged_value": float(value * rate)}
            if base_currency == other and target_currency == "USD":
                return {"exchanged_value": round(value / rate, 2)}  # Quirk: only this direction is rounded
        raise ValueError("No available exchange rate for the given currencies.")

    def verify_traveler_information(self, first_name: str, last_name: str, date_of_birth: str,
                                    passport_number: str) -> dict[str, Any]:  # fmt: skip
        def fail(reason: str) -> dict[str, Any]:
            return {"verification_status": False, "verification_failure": reason}

        if self.user_first_name != first_name or self.user_last_name != last_name:
            return fail("Cannot book flight information for another user."  # Quirk: no space before "Expected"
                        f"Expected {self.user_first_name} {self.user_last_name}, got {first_name} {last_name}")
        try:
            born = datetime.strptime(date_of_birth, "%Y-%m-%d")
        except ValueError:
            return fail("Invalid date of birth format. Please use YYYY-MM-DD.")
        today = datetime.today()
        if today.year - born.year - ((today.month, today.day) < (born.month, born.day)) < 18:
            return fail("Traveler must be at least 18 years old.")
        if not passport_number.startswith("US"):
            return fail("Passport must be issued by the United States.")
        return {"verification_status": True}

    def set_budget_limit(self, access_token: str, budget_limit: float) -> dict[str, Any]:
        if error := self._token_error(access_token):
            return {"error": error}
        self.budget_limit = float(budget_limit)
        return {"budget_limit": self.budget_limit}

    def get_nearest_airport_by_city(self, location: str) -> dict[str, str]:
        return {"nearest_airport": CITY_AIRPORTS.get(location, "Unknown")}

    def purchase_insurance(self, access_token: str, insurance_type: str, booking_id: str, insurance_cost: float,
                           card_id: str) -> dict[str, Any]:  # fmt: skip
        def refuse(error: str) -> dict[str, Any]:
            return {"insurance_status": False, "error": error}

        if error := self._token_error(access_token):
            return refuse(error)
        if self.budget_limit is not None and self.budget_limit < insurance_cost:
            return refuse("Exceeded budget limit")
        if booking_id not in self.booking_record:
            return refuse("Booking not found")
        if card_id not in self.credit_card_list:
            return refuse("Credit card not registered")
        self.credit_card_list[card_id]["balance"] -= insurance_cost  # Quirk: no balance check, nothing recorded
        return {"insurance_id": str(self._random.randint(100000000, 999999999)), "insurance_status": True}

    def contact_customer_support(self, booking_id: str, message: str) -> dict[str, str]:
        if booking_id not in self.booking_record:
            return {"error": "Booking not found"}
        return {"customer_support_message": SUPPORT_REPLY}

    def get_all_credit_cards(self) -> dict[str, Any]:
        return {"credit_card_list": self.credit_card_list}
