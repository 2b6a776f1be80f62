"""Retail orders: customers, products with stock, and orders that can be placed or cancelled."""

from __future__ import annotations

import random

from ..patterns import Draft, ask_for, call, refuse
from ..registry import register_env
from ..tool_world import State, ToolError, ToolWorld, get_row, next_id, tool

CUSTOMERS = ("Mia", "Noah", "Olga", "Pat", "Quinn", "Rosa", "Sam", "Tess")
PRODUCTS = ("lamp", "mug", "desk", "chair", "pen", "book", "rug", "clock")
STATUSES = ("pending", "pending", "shipped", "delivered")


@register_env("retail_orders")
class RetailOrdersEnv(ToolWorld):
    """Eight customers with one to three orders each over eight products."""

    def build_state(self, rng: random.Random) -> State:
        customers = {f"U{i + 1}": {"name": n} for i, n in enumerate(CUSTOMERS)}
        products = {f"P{i + 1}": {"name": n, "price": rng.randrange(5, 200, 5), "stock": rng.randrange(0, 12)}
                    for i, n in enumerate(PRODUCTS)}
        products["P1"]["stock"] = 0  # at least one product is sold out, for refusals
        orders, n = {}, 10
        for cid in customers:
            for _ in range(rng.randint(1, 3)):
                pid, qty = rng.choice(sorted(products)), rng.randint(1, 3)
                orders[f"O{n}"] = {"customer": cid, "product": pid, "quantity": qty,
                                   "total": qty * products[pid]["price"], "status": rng.choice(STATUSES)}
                n += 1
        return {"customers": customers, "products": products, "orders": orders}

    # --- tools ------------------------------------------------------------------------------------

    @tool("Find a customer's id by name.", {"name": "string"}, reads=("customers",))
    def find_customer(self, state: State, name: str) -> dict:
        for cid, row in state["customers"].items():
            if row["name"].lower() == name.strip().lower():
                return {"customer_id": cid}
        raise ToolError(f"no customer named {name}")

    @tool("List a customer's orders.", {"customer_id": "string"}, reads=("orders",))
    def list_orders(self, state: State, customer_id: str) -> list:
        get_row(state, "customers", customer_id)
        return [{"order_id": o, "status": r["status"]} for o, r in state["orders"].items() if r["customer"] == customer_id]

    @tool("Get an order's details.", {"order_id": "string"}, reads=("orders",))
    def get_order(self, state: State, order_id: str) -> dict:
        row = get_row(state, "orders", order_id)
        return {"order_id": order_id, **{k: row[k] for k in ("product", "quantity", "total", "status")}}

    @tool("Get a product's price and stock.", {"product_id": "string"}, reads=("products",))
    def get_product(self, state: State, product_id: str) -> dict:
        return {"product_id": product_id, **get_row(state, "products", product_id)}

    @tool("Cancel a pending order.", {"order_id": "string"}, writes=("orders", "products"))
    def cancel_order(self, state: State, order_id: str) -> dict:
        row = get_row(state, "orders", order_id)
        if row["status"] != "pending":
            raise ToolError(f"order {order_id} is {row['status']}, only pending orders can be cancelled")
        row["status"] = "cancelled"
        state["products"][row["product"]]["stock"] += row["quantity"]
        return {"order_id": order_id, "status": "cancelled"}

    @tool("Place an order for a customer.",
          {"customer_id": "string", "product_id": "string", "quantity": {"type": "integer", "minimum": 1}},
          writes=("orders", "products"))
    def place_order(self, state: State, customer_id: str, product_id: str, quantity: int) -> dict:
        get_row(state, "customers", customer_id)
        product = get_row(state, "products", product_id)
        if quantity < 1 or product["stock"] < quantity:
            raise ToolError(f"only {product['stock']} {product['name']} in stock")
        product["stock"] -= quantity
        oid = next_id(state, "orders", "O")
        state["orders"][oid] = {"customer": customer_id, "product": product_id, "quantity": quantity,
                                "total": quantity * product["price"], "status": "pending"}
        return {"order_id": oid, "total": quantity * product["price"]}

    # --- task drafts ------------------------------------------------------------------------------

    @staticmethod
    def _orders(state: State, status: str | None = None, customer: str | None = None) -> list[str]:
        return sorted(o for o, r in state["orders"].items()
                      if (status is None or r["status"] == status) and (customer is None or r["customer"] == customer))

    @staticmethod
    def _in_stock(rng: random.Random, state: State) -> tuple[str, int]:
        pid = rng.choice(sorted(p for p, r in state["products"].items() if r["stock"] >= 1))
        return pid, rng.randint(1, min(3, state["products"][pid]["stock"]))

    def draft_single(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            oid = rng.choice(self._orders(state))
            status = state["orders"][oid]["status"]
            return Draft("single", f"What is the status of order {oid}?", ((call("get_order", order_id=oid),),),
                         f"Order {oid} is {status}.", ("answer",), (status,))
        oid = rng.choice(self._orders(state, "pending"))
        return Draft("single", f"Cancel order {oid}.", ((call("cancel_order", order_id=oid),),),
                     f"Order {oid} is cancelled.", ("state",))

    def draft_lookup_write(self, rng: random.Random, state: State) -> Draft:
        cid = rng.choice(sorted(state["customers"]))
        name = state["customers"][cid]["name"]
        pid, qty = self._in_stock(rng, state)
        return Draft("lookup_write", f"Order {qty} {state['products'][pid]['name']} ({pid}) for {name}.",
                     ((call("find_customer", name=name),),
                      (call("place_order", customer_id=cid, product_id=pid, quantity=qty),)),
                     "The order is placed.", ("state",))

    def draft_multi_hop(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            one = [c for c in sorted(state["customers"]) if len(self._orders(state, "pending", c)) == 1]
            cid = rng.choice(one)
            (oid,) = self._orders(state, "pending", cid)
            name = state["customers"][cid]["name"]
            return Draft("multi_hop", f"Cancel {name}'s pending order.",
                         ((call("find_customer", name=name),), (call("list_orders", customer_id=cid),),
                          (call("cancel_order", order_id=oid),)), f"Order {oid} is cancelled.", ("state",))
        oid = rng.choice(self._orders(state))
        pid = state["orders"][oid]["product"]
        price = state["products"][pid]["price"]
        return Draft("multi_hop", f"What is the unit price of the product in order {oid}?",
                     ((call("get_order", order_id=oid),), (call("get_product", product_id=pid),)),
                     f"It costs {price}.", ("calls", "answer"), (str(price),))

    def draft_parallel(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            x, y = rng.sample(sorted(state["products"]), 2)
            sx, sy = state["products"][x]["stock"], state["products"][y]["stock"]
            return Draft("parallel", f"How many of {x} and {y} are in stock?",
                         ((call("get_product", product_id=x), call("get_product", product_id=y)),),
                         f"{x}: {sx} left, {y}: {sy} left.", ("calls", "answer"), (f"{x}: {sx}", f"{y}: {sy}"))
        x, y = rng.sample(self._orders(state, "pending"), 2)
        return Draft("parallel", f"Cancel orders {x} and {y}.",
                     ((call("cancel_order", order_id=x), call("cancel_order", order_id=y)),),
                     "Both orders are cancelled.", ("state", "calls"))

    def draft_missing_arg(self, rng: random.Random, state: State) -> Draft:
        cid, pid = rng.choice(sorted(state["customers"])), rng.choice(sorted(state["products"]))
        request, missing, tool_name = rng.choice((
            (f"Order product {pid} for customer {cid}.", "quantity", "place_order"),
            (f"Order {rng.randint(2, 5)} of {pid}, please.", "customer_id", "place_order"),
            ("Cancel my order.", "order_id", "cancel_order"),
        ))
        return ask_for(request, missing, tool_name)

    def draft_refuse(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            oid = rng.choice([o for o in self._orders(state) if state["orders"][o]["status"] in ("shipped", "delivered")])
            status = state["orders"][oid]["status"]
            return refuse(f"Cancel order {oid}.", [call("get_order", order_id=oid)], f"it is already {status}",
                          "cancel_order")
        pid = rng.choice(sorted(state["products"]))
        stock, cid = state["products"][pid]["stock"], rng.choice(sorted(state["customers"]))
        qty = stock + rng.randint(1, 5)
        return refuse(f"Order {qty} of {pid} for customer {cid}.", [call("get_product", product_id=pid)],
                      f"only {stock} in stock", "place_order")
