"""BFCL `TradingBot` (func-doc file `trading_bot.json`), behaving as the official class
(bfcl-eval 2026.3.23) does.

State (compared by the checker): `orders` (keyed by **int** id where the scenario's key is a
digit string; other keys, such as the scenarios' stray ``"order_type": "Buy"``, stay as given),
`account_info`, `authenticated`, `market_status`, `order_counter`, `stocks`, `watch_list`,
`transaction_history`, and `long_context` (the flag `load` was given). Defaults for keys the scenario
omits are upstream's: two orders, a 10000.0 balance, eleven stocks, NVDA watched, closed market.

Time is simulated: "now" is 2024-09-01 10:30 (naive, local time). A deposit or withdrawal is
stamped with a time drawn from `random.Random(seed)` (seed `random_seed`, default 1053520) as
upstream draws it: `randint` over the Unix seconds of the next 24 hours, turned back into local
time, so both checker instances and the official class stamp the same transactions alike.

Quirks kept: `trading_login` accepts any credentials; `place_order` stores status "Open" but
answers "Pending", checks funds only for "buy" orders (any case) and stores `amount` as given;
`cancel_order` cancels an already cancelled order again; without a login `get_watchlist` answers
a list of one string and `get_order_history`/`get_transaction_history` a list of one error dict;
`add_to_watchlist` and the filters need no login; `get_stock_info`, `get_order_details` and
`get_account_info` hand out the live state dicts; bad argument types raise what upstream's
comparisons raise (TypeError, AttributeError, ValueError from `strptime`). `rules="training"`
changes nothing here.

Long-context mode (``load(config, long_context=True)``, upstream's ``_load_scenario(...,
long_context=True)``) changes answers only, never the state: `get_stock_info` answers a copy of
the stock with 2,000-value `MA(5)`/`MA(20)` lists, `get_order_details` a copy of the order with
eight `metadata` paragraphs naming its symbol, `get_available_stocks` 1,000 more symbols per
sector, `get_transaction_history` the 1,000 filler transactions after the matching ones (whatever
the dates), and Quirk: `get_watchlist` a bare *list* (the watch list then 1,000 filler symbols and
a final Ellipsis) instead of ``{"watchlist": [...]}``. The filler is upstream's
(`long_context_data`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from . import Backend
from .long_context_data import (
    AUTOMOBILE_EXTENSION,
    MA_5_EXTENSION,
    MA_20_EXTENSION,
    ORDER_DETAIL_EXTENSION,
    TECHNOLOGY_EXTENSION,
    TRANSACTION_HISTORY_EXTENSION,
    WATCH_LIST_EXTENSION,
)

NOW = datetime(2024, 9, 1, 10, 30)  # upstream's fixed simulated time
DEFAULT_SEED = 1053520

SYMBOLS = {
    "Apple": "AAPL", "Google": "GOOG", "Tesla": "TSLA", "Microsoft": "MSFT", "Nvidia": "NVDA",
    "Zeta Corp": "ZETA", "Alpha Tech": "ALPH", "Omega Industries": "OMEG", "Quasar Ltd.": "QUAS",
    "Neptune Systems": "NEPT", "Synex Solutions": "SYNX", "Amazon": "AMZN", "Gorilla": "GORI",
}  # fmt: skip


def _stock(price: float, change: float, volume: float, ma5: float, ma20: float) -> dict[str, float]:
    return {"price": price, "percent_change": change, "volume": volume, "MA(5)": ma5, "MA(20)": ma20}


def _login_error(action: str) -> str:
    return f"User not authenticated. Please log in to {action}."


class TradingBot(Backend):
    tool_names = frozenset(
        "add_to_watchlist cancel_order filter_stocks_by_price fund_account get_account_info get_available_stocks "
        "get_current_time get_order_details get_order_history get_stock_info get_symbol_by_name "
        "get_transaction_history get_watchlist notify_price_change place_order remove_stock_from_watchlist "
        "trading_get_login_status trading_login trading_logout withdraw_funds".split()
    )
    defaults = {
        "orders": {
            12345: {"id": 12345, "order_type": "Buy", "symbol": "AAPL", "price": 210.65, "amount": 10,
                    "status": "Completed"},
            12446: {"id": 12446, "order_type": "Sell", "symbol": "GOOG", "price": 2840.56, "amount": 5,
                    "status": "Pending"},
        },
        "account_info": {"account_id": 12345, "balance": 10000.0, "binding_card": 1974202140965533},
        "authenticated": False,
        "market_status": "Closed",
        "order_counter": 12446,
        "stocks": {
            "AAPL": _stock(227.16, 0.17, 2.552, 227.11, 227.09),
            "GOOG": _stock(2840.34, 0.24, 1.123, 2835.67, 2842.15),
            "TSLA": _stock(667.92, -0.12, 1.654, 671.15, 668.20),
            "MSFT": _stock(310.23, 0.09, 3.234, 309.88, 310.11),
            "NVDA": _stock(220.34, 0.34, 1.234, 220.45, 220.67),
            "ALPH": _stock(1320.45, -0.08, 1.567, 1321.12, 1325.78),
            "OMEG": _stock(457.23, 0.12, 2.345, 456.78, 458.12),
            "QUAS": _stock(725.89, -0.03, 1.789, 726.45, 728.00),
            "NEPT": _stock(88.34, 0.19, 0.654, 88.21, 88.67),
            "SYNX": _stock(345.67, 0.11, 2.112, 345.34, 346.12),
            "ZETA": _stock(22.09, -0.05, 0.789, 22.12, 22.34),
        },
        "watch_list": ["NVDA"],
        "transaction_history": [],
    }  # fmt: skip

    def load(self, config: Mapping[str, Any], long_context: bool = False) -> None:
        super().load(config)
        self.orders = {int(k) if isinstance(k, str) and k.isdigit() else k: v for k, v in self.orders.items()}
        self.long_context = long_context  # public upstream too, so the checker compares it
        self._random = random.Random(config.get("random_seed", DEFAULT_SEED))

    def _timestamp(self) -> str:
        """A random moment in the day after `NOW`, drawn exactly as upstream draws it."""
        low, high = int(NOW.timestamp()), int((NOW + timedelta(days=1)).timestamp())
        return datetime.fromtimestamp(self._random.randint(low, high)).strftime("%Y-%m-%d %H:%M:%S")

    def _record(self, kind: str, amount: float) -> None:
        self.transaction_history.append({"type": kind, "amount": amount, "timestamp": self._timestamp()})

    def _price(self, symbol: str) -> Any:
        """A stock's price, 0 for an unknown symbol (an unhashable one raises, as upstream)."""
        return self.stocks.get(symbol, {}).get("price", 0)

    # ------------------------------------------------------------------ session
    def trading_login(self, username: str, password: str) -> dict[str, str]:
        if self.authenticated:
            return {"status": "Already logged in"}
        self.authenticated = True  # Quirk: any username and password will do
        return {"status": "Logged in successfully"}

    def trading_get_login_status(self) -> dict[str, bool]:
        return {"status": bool(self.authenticated)}

    def trading_logout(self) -> dict[str, str]:
        if not self.authenticated:
            return {"status": "No user is currently logged in"}
        self.authenticated = False
        return {"status": "Logged out successfully"}

    def get_current_time(self) -> dict[str, str]:
        return {"current_time": NOW.strftime("%I:%M %p")}

    # ------------------------------------------------------------------ market data (no login)
    def get_symbol_by_name(self, name: str) -> dict[str, str]:
        return {"symbol": SYMBOLS.get(name, "Stock not found")}

    def get_stock_info(self, symbol: str) -> dict[str, Any]:
        if symbol not in self.stocks:
            return {"error": f"Stock with symbol '{symbol}' not found."}
        if self.long_context:
            stock = self.stocks[symbol].copy()
            stock["MA(5)"], stock["MA(20)"] = MA_5_EXTENSION, MA_20_EXTENSION
            return stock
        return self.stocks[symbol]  # Quirk: the live dict

    def get_available_stocks(self, sector: str) -> dict[str, list[str]]:
        sectors = {"Technology": ["AAPL", "GOOG", "MSFT", "NVDA"], "Automobile": ["TSLA", "F", "GM"]}
        if self.long_context:
            sectors["Technology"] += TECHNOLOGY_EXTENSION
            sectors["Automobile"] += AUTOMOBILE_EXTENSION
        return {"stock_list": sectors.get(sector, [])}

    def filter_stocks_by_price(self, stocks: list[str], min_price: float, max_price: float) -> dict[str, list[str]]:
        # Same comparisons, same operand order as upstream: a bad type raises the same TypeError.
        kept = [s for s in stocks if self._price(s) >= min_price and self._price(s) <= max_price]
        return {"filtered_stocks": kept}

    def notify_price_change(self, stocks: list[str], threshold: float) -> dict[str, str]:
        moved = [s for s in stocks if s in self.stocks and abs(self.stocks[s]["percent_change"]) >= threshold]
        if moved:
            return {"notification": f"Stocks {', '.join(moved)} have significant price changes."}
        return {"notification": "No significant price changes in the selected stocks."}

    # ------------------------------------------------------------------ watch list
    def add_to_watchlist(self, stock: str) -> dict[str, list[str]]:
        if stock not in self.watch_list and stock in self.stocks:  # Quirk: no login needed
            self.watch_list.append(stock)
        return {"watchlist": self.watch_list}

    def remove_stock_from_watchlist(self, symbol: str) -> dict[str, str]:
        if not self.authenticated:
            return {"error": _login_error("modify the watchlist")}
        if symbol not in self.watch_list:
            return {"error": f"Stock {symbol} not found in watchlist."}
        self.watch_list.remove(symbol)
        return {"status": f"Stock {symbol} removed from watchlist successfully."}

    def get_watchlist(self) -> Any:
        if not self.authenticated:
            return ["Error: " + _login_error("view the watchlist")]  # Quirk: a list, not a dict
        if self.long_context:
            watch = self.watch_list.copy()
            watch.extend(WATCH_LIST_EXTENSION)
            return watch  # Quirk: a bare list here too
        return {"watchlist": self.watch_list}

    # ------------------------------------------------------------------ orders
    def get_order_details(self, order_id: int) -> Any:
        if order_id not in self.orders:
            return {"error": f"Order with ID {order_id} not found.Here is the list of orders_id: {list(self.orders)}"}
        if self.long_context:
            order = self.orders[order_id].copy()  # a stray "Buy" entry raises AttributeError here
            symbol = order["symbol"]
            order["metadata"] = {key: text.format(symbol=symbol) for key, text in ORDER_DETAIL_EXTENSION.items()}
            return order
        return self.orders[order_id]  # Quirk: the live entry, whatever it is (a stray "Buy" too)

    def cancel_order(self, order_id: int) -> dict[str, Any]:
        if order_id not in self.orders:
            return {"error": f"Order with ID {order_id} not found."}
        if self.orders[order_id]["status"] == "Completed":
            return {"error": f"Can't cancel order {order_id}. Order is already completed."}
        self.orders[order_id]["status"] = "Cancelled"  # Quirk: a cancelled order cancels again
        return {"order_id": order_id, "status": "Cancelled"}

    def place_order(self, order_type: str, symbol: str, price: float, amount: int) -> dict[str, Any]:
        if not self.authenticated:
            return {"error": _login_error("place an order")}
        if symbol not in self.stocks:
            return {"error": f"Invalid stock symbol: {symbol}"}
        if price <= 0 or amount <= 0:
            return {"error": "Price and amount must be positive values."}
        if order_type.lower() == "buy":  # Quirk: only buys are checked, and against truncated shares
            cost = float(price) * int(amount)
            balance = self.account_info.get("balance", 0)
            if cost > balance:
                return {"error": f"Insufficient funds: required ${cost:.2f} but only ${balance:.2f} available."}
        price = float(price)
        order_id = self.order_counter
        self.orders[order_id] = {"id": order_id, "order_type": order_type, "symbol": symbol, "price": price,
                                 "amount": amount, "status": "Open"}  # fmt: skip
        self.order_counter += 1
        # Quirk: stored as "Open" but answered as "Pending"
        return {"order_id": order_id, "order_type": order_type, "status": "Pending", "price": price, "amount": amount}

    def get_order_history(self) -> Any:
        if not self.authenticated:
            return [{"error": _login_error("view order history")}]  # Quirk: a list
        return {"history": list(self.orders.keys())}

    # ------------------------------------------------------------------ account
    def get_account_info(self) -> dict[str, Any]:
        if not self.authenticated:
            return {"error": _login_error("view account information")}
        return self.account_info

    def fund_account(self, amount: float) -> dict[str, Any]:
        if not self.authenticated:
            return {"error": _login_error("fund the account")}
        if amount <= 0:
            return {"error": "Funding amount must be positive."}
        self.account_info["balance"] += amount
        self._record("deposit", amount)
        return {"status": "Account funded successfully", "new_balance": self.account_info["balance"]}

    def withdraw_funds(self, amount: float) -> dict[str, Any]:
        if not self.authenticated:
            return {"error": _login_error("make a transaction")}
        if self.market_status != "Open":
            return {"error": "Market is closed. Transactions are not allowed."}
        if amount <= 0:
            return {"error": "Transaction amount must be positive."}
        if amount > self.account_info["balance"]:
            return {"error": "Insufficient funds for withdrawal."}
        self.account_info["balance"] -= amount
        self._record("withdrawal", amount)
        return {"status": "Withdrawal successful", "new_balance": self.account_info["balance"]}

    def get_transaction_history(self, start_date: str | None = None, end_date: str | None = None) -> Any:
        if not self.authenticated:
            return [{"error": _login_error("view transaction history")}]  # Quirk: a list
        start = datetime.strptime(start_date, "%Y-%m-%d") if start_date else datetime.min
        end = datetime.strptime(end_date, "%Y-%m-%d") if end_date else datetime.max
        # Quirk: `end_date` means its midnight, so that day's own transactions are left out
        kept = [t for t in self.transaction_history
                if start <= datetime.strptime(t["timestamp"], "%Y-%m-%d %H:%M:%S") <= end]  # fmt: skip
        if self.long_context:
            kept += TRANSACTION_HISTORY_EXTENSION  # unfiltered
        return {"transaction_history": kept}
