"""tau-bench retail tools over `retail/data/{users,orders,products}.json`, named and shaped as upstream.

Written from tau-bench's documented tool list and the database schema; the domain policy (wiki.md)
is not enforced beyond what each action needs to be well defined (e.g. only pending orders can be
cancelled, only delivered ones returned).
"""

from __future__ import annotations

from typing import Any

from .tau_common import TauDomain, ToolError, find, tool

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


class RetailTools(TauDomain):
    files = ("users", "orders", "products")

    # ---- helpers
    def _order(self, order_id: str, status: str | None = None) -> dict[str, Any]:
        order = find(self.data["orders"], order_id, "Order")
        if status is not None and order["status"] != status:
            raise ToolError(f"non-{status} order cannot be modified")
        return order

    def _payment(self, order: dict[str, Any], payment_method_id: str) -> dict[str, Any]:
        user = self.data["users"][order["user_id"]]
        return find(user["payment_methods"], payment_method_id, "Payment method")

    def _variant(self, item_id: str) -> dict[str, Any]:
        for product in self.data["products"].values():
            if item_id in product["variants"]:
                return {**product["variants"][item_id], "product_id": product["product_id"], "name": product["name"]}
        raise ToolError(f"Item {item_id} not found")

    def _swap(self, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str]) -> float:
        """Validate an item-for-item swap within each product; returns the price difference."""
        if len(item_ids) != len(new_item_ids):
            raise ToolError("the number of items to be exchanged should match")
        held = [i["item_id"] for i in order["items"]]
        diff = 0.0
        for old, new in zip(item_ids, new_item_ids):
            if item_ids.count(old) > held.count(old):
                raise ToolError(f"{old} not found")
            current, wanted = self._variant(old), self._variant(new)
            if current["product_id"] != wanted["product_id"] or not wanted["available"]:
                raise ToolError(f"new item {new} not found or available")
            diff += wanted["price"] - current["price"]
        return round(diff, 2)

    @staticmethod
    def _address(address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict[str, str]:
        return {"address1": address1, "address2": address2, "city": city, "country": country, "state": state, "zip": zip}

    # ---- read tools
    @tool
    def find_user_id_by_email(self, email: str) -> str:
        """Find user id by email."""
        for user_id, user in self.data["users"].items():
            if user["email"].lower() == email.lower():
                return user_id
        raise ToolError("User not found")

    @tool
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        """Find user id by first name, last name, and zip code."""
        for user_id, user in self.data["users"].items():
            name = user["name"]
            if (name["first_name"].lower(), name["last_name"].lower(), user["address"]["zip"]) == (
                first_name.lower(), last_name.lower(), zip,
            ):  # fmt: skip
                return user_id
        raise ToolError("User not found")

    @tool
    def get_user_details(self, user_id: str) -> dict:
        """Get the details of a user, including their orders."""
        return find(self.data["users"], user_id, "User")

    @tool
    def get_order_details(self, order_id: str) -> dict:
        """Get the status and details of an order."""
        return self._order(order_id)

    @tool
    def get_product_details(self, product_id: str) -> dict:
        """Get the inventory details of a product."""
        return find(self.data["products"], product_id, "Product")

    @tool
    def list_all_product_types(self) -> dict:
        """List the name and product id of all product types."""
        return dict(sorted((p["name"], p["product_id"]) for p in self.data["products"].values()))

    # ---- write tools
    @tool
    def cancel_pending_order(self, order_id: str, reason: str) -> dict:
        """Cancel a pending order; reason is 'no longer needed' or 'ordered by mistake'. Refunds every payment."""
        order = self._order(order_id, "pending")
        if reason not in CANCEL_REASONS:
            raise ToolError("invalid reason")
        refunds = [{"transaction_type": "refund", "amount": p["amount"], "payment_method_id": p["payment_method_id"]}
                   for p in order["payment_history"] if p["transaction_type"] == "payment"]  # fmt: skip
        for refund in refunds:
            method = self._payment(order, refund["payment_method_id"])
            if method["source"] == "gift_card":
                method["balance"] = round(method["balance"] + refund["amount"], 2)
        order["payment_history"].extend(refunds)
        order["status"], order["cancel_reason"] = "cancelled", reason
        return order

    @tool
    def modify_pending_order_address(
        self, order_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str
    ) -> dict:
        """Modify the shipping address of a pending order."""
        order = self._order(order_id, "pending")
        order["address"] = self._address(address1, address2, city, state, country, zip)
        return order

    @tool
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict:
        """Change the payment method of a pending order (paid with a single payment)."""
        order = self._order(order_id, "pending")
        payments = [p for p in order["payment_history"] if p["transaction_type"] == "payment"]
        if len(payments) != 1 or payments[0]["payment_method_id"] == payment_method_id:
            raise ToolError("there should be exactly one payment, with a different method, for a pending order")
        method, amount = self._payment(order, payment_method_id), payments[0]["amount"]
        if method["source"] == "gift_card" and method["balance"] < amount:
            raise ToolError("insufficient gift card balance to pay for the order")
        old = self._payment(order, payments[0]["payment_method_id"])
        order["payment_history"] += [
            {"transaction_type": "payment", "amount": amount, "payment_method_id": payment_method_id},
            {"transaction_type": "refund", "amount": amount, "payment_method_id": payments[0]["payment_method_id"]},
        ]
        if method["source"] == "gift_card":
            method["balance"] = round(method["balance"] - amount, 2)
        if old["source"] == "gift_card":
            old["balance"] = round(old["balance"] + amount, 2)
        return order

    @tool
    def modify_pending_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str) -> dict:
        """Swap items of a pending order for other options of the same products; pays or refunds the difference."""
        order = self._order(order_id, "pending")
        diff = self._swap(order, item_ids, new_item_ids)
        method = self._payment(order, payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff:
            raise ToolError("insufficient gift card balance to pay for the new items")
        order["payment_history"].append({"transaction_type": "payment" if diff > 0 else "refund",
                                         "amount": abs(diff), "payment_method_id": payment_method_id})  # fmt: skip
        if method["source"] == "gift_card":
            method["balance"] = round(method["balance"] - diff, 2)
        for old, new in zip(item_ids, new_item_ids):
            item = next(i for i in order["items"] if i["item_id"] == old)
            variant = self._variant(new)
            item.update(item_id=new, price=variant["price"], options=variant["options"])
        order["status"] = "pending (item modified)"
        return order

    @tool
    def modify_user_address(self, user_id: str, address1: str, address2: str, city: str, state: str, country: str, zip: str) -> dict:
        """Modify the default address of a user."""
        user = find(self.data["users"], user_id, "User")
        user["address"] = self._address(address1, address2, city, state, country, zip)
        return user

    @tool
    def return_delivered_order_items(self, order_id: str, item_ids: list[str], payment_method_id: str) -> dict:
        """Request a return of delivered items; the refund goes to the original payment method or a gift card."""
        order = self._order(order_id, "delivered")
        method = self._payment(order, payment_method_id)
        original = order["payment_history"][0]["payment_method_id"]
        if method["source"] != "gift_card" and payment_method_id != original:
            raise ToolError("payment method should be either the original payment method or a gift card")
        held = [i["item_id"] for i in order["items"]]
        if any(item_ids.count(i) > held.count(i) for i in item_ids) or not item_ids:
            raise ToolError("some item not found")
        order["status"] = "return requested"
        order["return_items"], order["return_payment_method_id"] = sorted(item_ids), payment_method_id
        return order

    @tool
    def exchange_delivered_order_items(self, order_id: str, item_ids: list[str], new_item_ids: list[str], payment_method_id: str) -> dict:
        """Request an exchange of delivered items for other options of the same products."""
        order = self._order(order_id, "delivered")
        diff = self._swap(order, item_ids, new_item_ids)
        method = self._payment(order, payment_method_id)
        if method["source"] == "gift_card" and method["balance"] < diff:
            raise ToolError("insufficient gift card balance to pay for the price difference")
        order["status"] = "exchange requested"
        order["exchange_items"], order["exchange_new_items"] = sorted(item_ids), sorted(new_item_ids)
        order["exchange_payment_method_id"], order["exchange_price_difference"] = payment_method_id, diff
        return order
