"""Banking: accounts with balances and payment cards; deposits, withdrawals, transfers, card freezes."""

from __future__ import annotations

import random

from ..patterns import Draft, ask_for, call, refuse
from ..registry import register_env
from ..tool_world import State, ToolError, ToolWorld, get_row, tool

OWNERS = ("Ana", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivan", "Jo")


@register_env("banking")
class BankingEnv(ToolWorld):
    """Ten customers, one account each, one or two cards per account."""

    def build_state(self, rng: random.Random) -> State:
        ids = rng.sample(range(100, 1000), len(OWNERS))
        accounts = {f"A{i}": {"owner": o, "balance": rng.randrange(50, 501, 10)} for i, o in zip(ids, OWNERS)}
        cards, n = {}, 10
        for acc in accounts:
            for _ in range(rng.choice((1, 1, 2))):
                cards[f"C{n}"] = {"account": acc, "status": "active"}
                n += 1
        return {"accounts": accounts, "cards": cards}

    # --- tools ------------------------------------------------------------------------------------

    @staticmethod
    def _amount(amount: float) -> None:
        if amount <= 0:
            raise ToolError("amount must be positive")

    @tool("Find a customer's account id.", {"owner": "string"}, reads=("accounts",))
    def find_account(self, state: State, owner: str) -> dict:
        for acc, row in state["accounts"].items():
            if row["owner"].lower() == owner.strip().lower():
                return {"account_id": acc}
        raise ToolError(f"no account for {owner}")

    @tool("Get an account's balance.", {"account_id": "string"}, reads=("accounts",))
    def get_balance(self, state: State, account_id: str) -> dict:
        return {"account_id": account_id, "balance": get_row(state, "accounts", account_id)["balance"]}

    @tool("Add money to an account.", {"account_id": "string", "amount": "number"}, writes=("accounts",))
    def deposit(self, state: State, account_id: str, amount: float) -> dict:
        self._amount(amount)
        acc = get_row(state, "accounts", account_id)
        acc["balance"] += amount
        return {"balance": acc["balance"]}

    @tool("Take money from an account.", {"account_id": "string", "amount": "number"}, writes=("accounts",))
    def withdraw(self, state: State, account_id: str, amount: float) -> dict:
        self._amount(amount)
        acc = get_row(state, "accounts", account_id)
        if acc["balance"] < amount:
            raise ToolError(f"insufficient funds in {account_id}")
        acc["balance"] -= amount
        return {"balance": acc["balance"]}

    @tool("Move money between accounts.", {"from_id": "string", "to_id": "string", "amount": "number"},
          writes=("accounts",))
    def transfer(self, state: State, from_id: str, to_id: str, amount: float) -> dict:
        get_row(state, "accounts", to_id)
        self.withdraw(state, from_id, amount)
        state["accounts"][to_id]["balance"] += amount
        return {"from_balance": state["accounts"][from_id]["balance"]}

    @tool("List the cards of an account.", {"account_id": "string"}, reads=("cards",))
    def list_cards(self, state: State, account_id: str) -> list:
        return [{"card_id": c, "status": r["status"]} for c, r in state["cards"].items() if r["account"] == account_id]

    @tool("Freeze a card.", {"card_id": "string"}, writes=("cards",))
    def freeze_card(self, state: State, card_id: str) -> dict:
        get_row(state, "cards", card_id)["status"] = "frozen"
        return {"card_id": card_id, "status": "frozen"}

    # --- task drafts ------------------------------------------------------------------------------

    @staticmethod
    def _pick(rng: random.Random, state: State, k: int = 1) -> list[str]:
        return rng.sample(sorted(state["accounts"]), k)

    def draft_single(self, rng: random.Random, state: State) -> Draft:
        (acc,) = self._pick(rng, state)
        if rng.random() < 0.5:
            bal = state["accounts"][acc]["balance"]
            return Draft("single", f"What is the balance of account {acc}?", ((call("get_balance", account_id=acc),),),
                         f"The balance of {acc} is {bal}.", ("answer",), (str(bal),))
        amount = rng.randrange(5, 101, 5)
        return Draft("single", f"Deposit {amount} into account {acc}.",
                     ((call("deposit", account_id=acc, amount=amount),),), f"Deposited {amount}.", ("state",))

    def draft_lookup_write(self, rng: random.Random, state: State) -> Draft:
        (acc,) = self._pick(rng, state)
        owner, bal = state["accounts"][acc]["owner"], state["accounts"][acc]["balance"]
        verb, tool_name, amount = rng.choice((("Deposit", "deposit", rng.randrange(5, 101, 5)),
                                              ("Withdraw", "withdraw", rng.randrange(5, min(bal, 100) + 1, 5))))
        prep = "into" if tool_name == "deposit" else "from"
        return Draft("lookup_write", f"{verb} {amount} {prep} {owner}'s account.",
                     ((call("find_account", owner=owner),), (call(tool_name, account_id=acc, amount=amount),)),
                     "Done.", ("state",))

    def draft_multi_hop(self, rng: random.Random, state: State) -> Draft:
        if rng.random() < 0.5:
            holders = [r["account"] for r in state["cards"].values()]
            acc = rng.choice(sorted(a for a in state["accounts"] if holders.count(a) == 1))
            card = next(c for c, r in state["cards"].items() if r["account"] == acc)
            owner = state["accounts"][acc]["owner"]
            return Draft("multi_hop", f"Freeze {owner}'s card.",
                         ((call("find_account", owner=owner),), (call("list_cards", account_id=acc),),
                          (call("freeze_card", card_id=card),)), f"Card {card} is frozen.", ("state",))
        src, dst = self._pick(rng, state, 2)
        a, b = state["accounts"][src]["owner"], state["accounts"][dst]["owner"]
        amount = rng.randrange(5, min(state["accounts"][src]["balance"], 100) + 1, 5)
        return Draft("multi_hop", f"Send {amount} from {a} to {b}.",
                     ((call("find_account", owner=a), call("find_account", owner=b)),
                      (call("transfer", from_id=src, to_id=dst, amount=amount),)), "Sent.", ("state",))

    def draft_parallel(self, rng: random.Random, state: State) -> Draft:
        x, y = self._pick(rng, state, 2)
        if rng.random() < 0.5:
            bx, by = state["accounts"][x]["balance"], state["accounts"][y]["balance"]
            return Draft("parallel", f"What are the balances of {x} and {y}?",
                         ((call("get_balance", account_id=x), call("get_balance", account_id=y)),),
                         f"{x} has {bx} and {y} has {by}.", ("calls", "answer"), (str(bx), str(by)))
        m, n = rng.randrange(5, 101, 5), rng.randrange(5, 101, 5)
        return Draft("parallel", f"Deposit {m} into {x} and {n} into {y}.",
                     ((call("deposit", account_id=x, amount=m), call("deposit", account_id=y, amount=n)),),
                     "Both deposits are done.", ("state", "calls"))

    def draft_missing_arg(self, rng: random.Random, state: State) -> Draft:
        x, y = self._pick(rng, state, 2)
        request, missing, tool_name = rng.choice((
            (f"Transfer money from {x} to {y}.", "amount", "transfer"),
            (f"Deposit {rng.randrange(5, 101, 5)} please.", "account_id", "deposit"),
            (f"Withdraw some cash from {x}.", "amount", "withdraw"),
        ))
        return ask_for(request, missing, tool_name)

    def draft_refuse(self, rng: random.Random, state: State) -> Draft:
        x, y = self._pick(rng, state, 2)
        bal = state["accounts"][x]["balance"]
        amount = bal + rng.randrange(10, 501, 10)
        request, write = rng.choice(((f"Withdraw {amount} from {x}.", "withdraw"),
                                     (f"Transfer {amount} from {x} to {y}.", "transfer")))
        return refuse(request, [call("get_balance", account_id=x)], f"{x} has only {bal}", write)
