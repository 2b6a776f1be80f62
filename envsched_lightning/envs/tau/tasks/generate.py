"""Write our tau-bench task files deterministically from the shipped databases, verifying each task.

Usage: ``python -m envsched_lightning.envs.tau.tasks.generate /path/to/data`` (the folder holding
`tau_bench/`). Records are picked in sorted-id order with a fixed seed, so the files are
reproducible. A task is kept only if replaying its actions raises no tool error and, for write
tasks, changes the database hash: a task whose ground truth is a no-op would reward doing nothing.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

from envsched_lightning.envs.tau.environment import READ_ONLY, TauEnvironment, default_task_dir, failed

PER_TEMPLATE = 8
Task = dict[str, Any]


def _act(name: str, **kwargs: Any) -> dict[str, Any]:
    return {"name": name, "kwargs": kwargs}


def _name(user: dict[str, Any]) -> str:
    return f"{user['name']['first_name']} {user['name']['last_name']}"


# ---------------------------------------------------------------- retail
def retail_tasks(db: dict[str, Any], rng: random.Random) -> Iterator[tuple[str, str, Task]]:
    users, orders, products = db["users"], db["orders"], db["products"]
    by_status: dict[str, list[str]] = {}
    for oid in sorted(orders):
        by_status.setdefault(orders[oid]["status"], []).append(oid)
    streets = ["12 Elm Street", "48 Harbor Lane", "301 Pine Avenue", "7 Birch Court"]

    for oid in rng.sample(by_status["pending"], 20):
        o, u = orders[oid], users[orders[oid]["user_id"]]
        reason = rng.choice(["no longer needed", "ordered by mistake"])
        yield "cancel", o["user_id"], {
            "instruction": f"Hi, I'm {_name(u)}, zip code {u['address']['zip']}. Please cancel my order {oid}; the reason is: {reason}.",
            "actions": [_act("find_user_id_by_name_zip", first_name=u["name"]["first_name"], last_name=u["name"]["last_name"], zip=u["address"]["zip"]),
                        _act("get_order_details", order_id=oid), _act("cancel_pending_order", order_id=oid, reason=reason)],
            "outputs": []}  # fmt: skip
    for uid in rng.sample(sorted(users), 20):
        u = users[uid]
        street = rng.choice(streets)
        addr = {"address1": street, "address2": "", "city": u["address"]["city"], "state": u["address"]["state"],
                "country": "USA", "zip": u["address"]["zip"]}  # fmt: skip
        yield "address", uid, {
            "instruction": f"My email is {u['email']}. Please change my default address to {street}, {addr['city']}, {addr['state']} {addr['zip']}, USA (no second line).",
            "actions": [_act("find_user_id_by_email", email=u["email"]), _act("modify_user_address", user_id=uid, **addr)],
            "outputs": []}  # fmt: skip
        yield "count", uid, {
            "instruction": f"My user id is {uid}. How many orders have I placed in total? Just tell me the number.",
            "actions": [_act("get_user_details", user_id=uid)], "outputs": [str(len(u["orders"]))]}  # fmt: skip
    for oid in rng.sample(by_status["delivered"], 20):
        o = orders[oid]
        item = o["items"][0]
        pm = o["payment_history"][0]["payment_method_id"]
        yield "return", o["user_id"], {
            "instruction": f"My user id is {o['user_id']}. I want to return the {item['name']} (item {item['item_id']}) from my delivered order {oid}, refunded to the original payment method.",
            "actions": [_act("get_order_details", order_id=oid), _act("return_delivered_order_items", order_id=oid, item_ids=[item["item_id"]], payment_method_id=pm)],
            "outputs": []}  # fmt: skip
        variants = products[item["product_id"]]["variants"]
        new = next((v for k, v in sorted(variants.items()) if k != item["item_id"] and v["available"]), None)
        if new is not None:
            options = ", ".join(f"{k} {v}" for k, v in new["options"].items())
            yield "exchange", o["user_id"], {
                "instruction": f"My user id is {o['user_id']}. In delivered order {oid}, exchange my {item['name']} (item {item['item_id']}) for the one with {options} (item {new['item_id']}); settle any difference with {pm}.",
                "actions": [_act("get_order_details", order_id=oid), _act("get_product_details", product_id=item["product_id"]),
                            _act("exchange_delivered_order_items", order_id=oid, item_ids=[item["item_id"]], new_item_ids=[new["item_id"]], payment_method_id=pm)],
                "outputs": []}  # fmt: skip


# ---------------------------------------------------------------- airline
def airline_tasks(db: dict[str, Any], rng: random.Random) -> Iterator[tuple[str, str, Task]]:
    users, reservations, flights = db["users"], db["reservations"], db["flights"]
    open_ids = sorted(r for r, v in reservations.items() if v.get("status") != "cancelled")
    for rid in rng.sample(open_ids, 40):
        r, u = reservations[rid], users[reservations[rid]["user_id"]]
        yield "cancel", r["user_id"], {
            "instruction": f"My user id is {r['user_id']}. Please cancel reservation {rid} and refund it.",
            "actions": [_act("get_reservation_details", reservation_id=rid), _act("cancel_reservation", reservation_id=rid)], "outputs": []}  # fmt: skip
        card = next((k for k, m in sorted(u["payment_methods"].items()) if m["source"] == "credit_card"), None)
        if card is not None:
            total, nonfree = r["total_baggages"] + 1, r["nonfree_baggages"] + 1
            yield "bags", r["user_id"], {
                "instruction": f"My user id is {r['user_id']}. Add one checked bag (a paid one) to reservation {rid}, so {total} bags in total with {nonfree} non-free; charge {card}.",
                "actions": [_act("get_reservation_details", reservation_id=rid),
                            _act("update_reservation_baggages", reservation_id=rid, total_baggages=total, nonfree_baggages=nonfree, payment_id=card)],
                "outputs": []}  # fmt: skip
        p0 = r["passengers"][0]
        fixed = [{**p0, "dob": "1985-06-15"}, *r["passengers"][1:]]
        yield "passengers", r["user_id"], {
            "instruction": f"My user id is {r['user_id']}. On reservation {rid}, the date of birth of {p0['first_name']} {p0['last_name']} is wrong: it should be 1985-06-15. Keep everything else.",
            "actions": [_act("get_reservation_details", reservation_id=rid), _act("update_reservation_passengers", reservation_id=rid, passengers=fixed)],
            "outputs": []}  # fmt: skip
        paid = sum(p["amount"] for p in r["payment_history"])
        yield "total", r["user_id"], {
            "instruction": f"My user id is {r['user_id']}. How much have I paid in total for reservation {rid}? Give the dollar amount.",
            "actions": [_act("get_reservation_details", reservation_id=rid)], "outputs": [str(paid)]}  # fmt: skip
    for uid in rng.sample(sorted(users), 40):
        u = users[uid]
        card = next((k for k, m in sorted(u["payment_methods"].items()) if m["source"] == "credit_card"), None)
        fnum = rng.choice(sorted(flights))
        f = flights[fnum]
        day = next((d for d, v in sorted(f["dates"].items()) if v.get("status") == "available" and v["available_seats"]["economy"] > 0), None)
        if card is None or day is None:
            continue
        price = f["dates"][day]["prices"]["economy"]
        me = {"first_name": u["name"]["first_name"], "last_name": u["name"]["last_name"], "dob": u["dob"]}
        yield "book", uid, {
            "instruction": f"My user id is {uid}. Book me (just me) a one-way economy seat on flight {fnum} from {f['origin']} to {f['destination']} on {day}, no bags, no insurance, paid with {card}.",
            "actions": [_act("search_direct_flight", origin=f["origin"], destination=f["destination"], date=day),
                        _act("book_reservation", user_id=uid, origin=f["origin"], destination=f["destination"], flight_type="one_way", cabin="economy",
                             flights=[{"flight_number": fnum, "date": day}], passengers=[me], payment_methods=[{"payment_id": card, "amount": price}],
                             total_baggages=0, nonfree_baggages=0, insurance="no")],
            "outputs": []}  # fmt: skip


GENERATORS: dict[str, Callable[[dict[str, Any], random.Random], Iterator[tuple[str, str, Task]]]] = {
    "retail": retail_tasks, "airline": airline_tasks,
}  # fmt: skip


def build(domain: str, data_dir: str) -> list[Task]:
    """Up to PER_TEMPLATE verified tasks per template, numbered in generation order."""
    env = TauEnvironment(domain, data_dir, tasks_path=None)
    db = env.fresh_tools().data
    kept: list[Task] = []
    per_template: dict[str, int] = {}
    for template, user_id, task in GENERATORS[domain](db, random.Random(f"tau:{domain}:0")):
        if per_template.get(template, 0) >= PER_TEMPLATE:
            continue
        tools = env.fresh_tools()
        before = tools.hash()
        outs = [tools.execute(a["name"], a["kwargs"]) for a in task["actions"]]
        writes = any(a["name"] not in READ_ONLY for a in task["actions"])
        if any(failed(o) for o in outs) or writes == (tools.hash() == before):
            continue
        per_template[template] = per_template.get(template, 0) + 1
        kept.append({"task_id": f"{domain}_{template}_{per_template[template]}", "annotator": "generated",
                     "user_id": user_id, **task})  # fmt: skip
    return kept


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit("usage: python -m envsched_lightning.envs.tau.tasks.generate DATA_DIR")
    for domain in GENERATORS:
        tasks = build(domain, argv[0])
        path = default_task_dir() / f"{domain}.jsonl"
        path.write_text("".join(json.dumps(t, sort_keys=True) + "\n" for t in tasks), encoding="utf-8")
        print(f"{path}: {len(tasks)} tasks")


if __name__ == "__main__":
    main(sys.argv[1:])
