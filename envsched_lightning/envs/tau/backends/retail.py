"""tau-bench retail tools over `retail/data/{users,orders,products}.json`, as the official tools behave.

Each tool checks what the official one checks, in the same order, with the same error text, and makes
the same changes in the same order (so the JSON it returns has the same key order). Official quirks,
kept in both rule sets (none of them teaches a falsehood):

* A payment method counts as a gift card for refunds when its *id* contains "gift_card"; balance
  checks look at its `source`. Gift-card balances are rounded to cents after each change.
* `modify_pending_order_items` records `abs(difference)` unrounded (e.g. 12.340000000000003) as a
  "payment" if positive, else a "refund" (a zero difference adds a refund of 0); the status becomes
  "pending (item modified)", after which no pending-order tool accepts the order.
* `cancel_pending_order` refunds every payment-history entry.
* `modify_pending_order_payment` refuses an order whose history has more than one entry.
* `return_delivered_order_items` accepts an empty item list; item ids are checked after the payment.
* `modify_pending_order_items` checks the old items before the two lists' lengths; the exchange
  difference is rounded, the modification difference is not.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from .common import TauDomain, tool


class RetailTools(TauDomain):
    domain = "retail"
    files = ("users", "orders", "products")

    # ---- helpers
    def _order(self, order_id: str, status: str, verb: str) -> tuple[dict[str, Any] | None, str | None]:
        orders = self.data["orders"]
        if order_id not in orders:
            return None, "Error: order not found"
        order = orders[order_id]
        if order["status"] != status:
            return None, f"Error: non-{status} order cannot be {verb}"
        return order, None

    def _methods(self, order: dict[str, Any]) -> Any:
        return self.data["users"][order["user_id"]]["payment_methods"]

    def _swap_difference(self, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str]) -> tuple[Any, str | None]:
        """Price difference of swapping items for other variants of the same products, or why not."""
        held = [item["item_id"] for item in order["items"]]
        for item_id in item_ids:  # duplicates allowed as long as the order holds that many
            if item_ids.count(item_id) > held.count(item_id):
                return None, f"Error: {item_id} not found"
        if len(item_ids) != len(new_item_ids):
            return None, "Error: the number of items to be exchanged should match"
        products, diff = self.data["products"], 0
        for item_id, new_item_id in zip(item_ids, new_item_ids):
            item = [i for i in order["items"] if i["item_id"] == item_id][0]
            variants = products[item["product_id"]]["variants"]
            if not (new_item_id in variants and variants[new_item_id]["available"]):
                return None, f"Error: new item {new_item_id} not found or available"
            diff += variants[new_item_id]["price"] - item["price"]
        return diff, None

    @staticmethod
    def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict[str, str]:
        return {"address1": address1, "address2": address2, "city": city, "state": state, "country": country, "zip": zip}

    # ---- read tools
    @tool
    def find_user_id_by_email(self, email: str) -> str:
        """Find a user id by email (case-insensitive)."""
        for user_id, user in self.data["users"].peek_items():
            if user["email"].lower() == email.lower():
                return user_id
        return "Error: user not found"

    @tool
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        """Find a user id by first name, last name (case-insensitive) and zip code."""
        for user_id, user in self.data["users"].peek_items():
            name = user["name"]
            if (name["first_name"].lower() == first_name.lower() and name["last_name"].lower() == last_name.lower()
                    and user["address"]["zip"] == zip):  # fmt: skip
                return user_id
        return "Error: user not found"

    @tool
    def get_user_details(self, user_id: str) -> str:
        """Get the details of a user, including their payment methods and orders."""
        users = self.data["users"]
        return json.dumps(users[user_id]) if user_id in users else "Error: user not found"

    @tool
    def get_order_details(self, order_id: str) -> str:
        """Get the status and details of an order."""
        orders = self.data["orders"]
        return json.dumps(orders[order_id]) if order_id in orders else "Error: order not found"

    @tool
    def get_product_details(self, product_id: str) -> str:
        """Get the inventory details (variants, availability, prices) of a product."""
        products = self.data["products"]
        return json.dumps(products[product_id]) if product_id in products else "Error: product not found"

    @tool
    def list_all_product_types(self) -> str:
        """List the name and product id of every product type, sorted by name."""
        names = {product["name"]: product["product_id"] for product in self.data["products"].peek_values()}
        return json.dumps(dict(sorted(names.items())))

    # ---- write tools
    @tool
    def cancel_pending_order(self, order_id: str, reason: Literal["no longer needed", "ordered by mistake"]) -> str:
        """Cancel a pending order; every payment is refunded (gift cards at once)."""
        order, problem = self._order(order_id, "pending", "cancelled")
        if problem is not None:
            return problem
        if reason not in ["no longer needed", "ordered by mistake"]:
            return "Error: invalid reason"
        refunds = []
        for payment in order["payment_history"]:
            method_id = payment["payment_method_id"]
            refunds.append({"transaction_type": "refund", "amount": payment["amount"], "payment_method_id": method_id})
            if "gift_card" in method_id:
                method = self.data["users"][order["user_id"]]["payment_methods"][method_id]
                method["balance"] += payment["amount"]
                method["balance"] = round(method["balance"], 2)
        order["status"], order["cancel_reason"] = "cancelled", reason
        order["payment_history"].extend(refunds)
        return json.dumps(order)

    @tool
    def modify_pending_order_address(
        self, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> str:
        """Modify the shipping address of a pending order."""
        order, problem = self._order(order_id, "pending", "modified")
        if problem is not None:
            return problem
        order["address"] = self._address(address1, address2, city, state, country, zip)
        return json.dumps(order)

    def _priced_swap(self, order_id: str, state: tuple[str, str], item_ids: list[str], new_item_ids: list[str],
                     payment_method_id: str, rounded: bool, paying_for: str) -> tuple[Any, float, Any, str | None]:
        """The checks both item swaps make, in the official order: the order and its status, the items
        and their new variants, the payment method, the gift card's balance. (order, diff, method, problem)."""
        order, problem = self._order(order_id, *state)
        if problem is not None:
            return order, 0.0, None, problem
        diff, problem = self._swap_difference(order, item_ids, new_item_ids)
        if problem is not None:
            return order, 0.0, None, problem
        diff = round(diff, 2) if rounded else diff  # Quirk: only the exchange rounds the difference
        method = self._methods(order).get(payment_method_id)
        if method is None:
            return order, diff, None, "Error: payment method not found"
        if method["source"] == "gift_card" and method["balance"] < diff:
            return order, diff, method, f"Error: insufficient gift card balance to pay for {paying_for}"
        return order, diff, method, None

    @tool
    def modify_pending_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str) -> str:
        """Swap items of a pending order for other options of the same products (once per order); pays or refunds the difference."""
        order, diff, method, problem = self._priced_swap(order_id, ("pending", "modified"), item_ids, new_item_ids,
                                                         payment_method_id, rounded=False, paying_for="the new item")  # fmt: skip
        if problem is not None:
            return problem
        order["payment_history"].append({"transaction_type": "payment" if diff > 0 else "refund", "amount": abs(diff),
                                         "payment_method_id": payment_method_id})  # fmt: skip
        if method["source"] == "gift_card":
            method["balance"] -= diff
            method["balance"] = round(method["balance"], 2)
        products = self.data["products"]
        for item_id, new_item_id in zip(item_ids, new_item_ids):
            item = [i for i in order["items"] if i["item_id"] == item_id][0]
            variant = products[item["product_id"]]["variants"][new_item_id]
            item["item_id"], item["price"], item["options"] = new_item_id, variant["price"], variant["options"]
        order["status"] = "pending (item modified)"
        return json.dumps(order)

    @tool
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> str:
        """Pay a pending order with another payment method (the order must have exactly one payment)."""
        order, problem = self._order(order_id, "pending", "modified")
        if problem is not None:
            return problem
        methods = self._methods(order)
        if payment_method_id not in methods:
            return "Error: payment method not found"
        history = order["payment_history"]
        if len(history) > 1 or history[0]["transaction_type"] != "payment":
            return "Error: there should be exactly one payment for a pending order"
        old_id = history[0]["payment_method_id"]
        if old_id == payment_method_id:
            return "Error: the new payment method should be different from the current one"
        amount, method = history[0]["amount"], methods[payment_method_id]
        if method["source"] == "gift_card" and method["balance"] < amount:
            return "Error: insufficient gift card balance to pay for the order"
        history.extend([
            {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
            {"transaction_type": "refund", "amount": amount, "payment_method_id": old_id},
        ])  # fmt: skip
        if method["source"] == "gift_card":
            method["balance"] -= amount
            method["balance"] = round(method["balance"], 2)
        if "gift_card" in old_id:
            old = methods[old_id]
            old["balance"] += amount
            old["balance"] = round(old["balance"], 2)
        return json.dumps(order)

    @tool
    def modify_user_address(self, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str) -> str:
        """Modify the default address of a user."""
        users = self.data["users"]
        if user_id not in users:
            return "Error: user not found"
        user = users[user_id]
        user["address"] = self._address(address1, address2, city, state, country, zip)
        return json.dumps(user)

    @tool
    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> str:
        """Request a return of delivered items; the refund goes to the original payment method or a gift card."""
        order, problem = self._order(order_id, "delivered", "returned")
        if problem is not None:
            return problem
        if payment_method_id not in self._methods(order):
            return "Error: payment method not found"
        if "gift_card" not in payment_method_id and payment_method_id != order["payment_history"][0]["payment_method_id"]:
            return "Error: payment method should be either the original payment method or a gift card"
        held = [item["item_id"] for item in order["items"]]
        for item_id in item_ids:
            if item_ids.count(item_id) > held.count(item_id):
                return "Error: some item not found"
        order["status"] = "return requested"
        order["return_items"], order["return_payment_method_id"] = sorted(item_ids), payment_method_id
        return json.dumps(order)

    @tool
    def exchange_delivered_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str) -> str:
        """Request an exchange of delivered items for other options of the same products."""
        order, diff, _, problem = self._priced_swap(order_id, ("delivered", "exchanged"), item_ids, new_item_ids,
                                                    payment_method_id, rounded=True, paying_for="the price difference")  # fmt: skip
        if problem is not None:
            return problem
        order["status"] = "exchange requested"
        order["exchange_items"], order["exchange_new_items"] = sorted(item_ids), sorted(new_item_ids)
        order["exchange_payment_method_id"], order["exchange_price_difference"] = payment_method_id, diff
        return json.dumps(order)
