"""ACEBench-Agent's phone sandboxes (device, messages, reminders, food delivery), written from their behaviour.

Upstream (chenchen0103/ACEBench, `model_inference/multi_step/scenariosen/phone_platform/`) runs the
agent's calls against four classes whose public methods are the tools. These classes behave the
same way for every call, wrong ones included (a missing argument or a wrong type fails the way
upstream's Python fails, before any state changes), so an end state reached here is the one upstream
reaches. Names of classes and attributes follow upstream's, because the possible answers name them.

Every class starts from the same fixed world (six users, their messages, three reminders, six
merchants) and reads two switches from a task's `initial_config`: `wifi` (default off) and
`logged_in` (default on); the food platform also reads `logged_in_users`.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

PEOPLE = ("Eve", "Frank", "Grace", "Helen", "Isaac", "Jack")
_OCCUPATIONS = ("Software Engineer", "Data Scientist", "Product Manager", "UX Designer", "DevOps Engineer",
                "Marketing Specialist")  # fmt: skip
_PHONES = ("123-456-7890", "234-567-8901", "345-678-9012", "456-789-0123", "567-890-1234", "678-901-2345")
_PASSWORDS = ("password123", "password456", "password789", "password321", "password654", "password654")
_BALANCES = (500.0, 300.0, 150.0, 800.0, 400.0, 120.0)

_INBOX = (  # (sender, receiver, text, date)
    ("USR100", "USR101", "Hey Frank, don't forget about our meeting on 2024-06-11 at 4 PM in Conference Room 1.", "2024-06-09"),
    ("USR101", "USR102", 'Can you help me order a "Margherita Pizza" delivery? The merchant is Domino\'s.', "2024-03-09"),
    ("USR102", "USR103", 'Please check the milk tea delivery options available from Heytea and purchase a cheaper milk '
                         'tea for me. After making the purchase, remember to reply to me with "Already bought."', "2023-12-05"),
    ("USR103", "USR102", "No problem Helen, I can assist you.", "2024-09-09"),
    ("USR104", "USR105", "Isaac, are you available for a call?", "2024-06-06"),
    ("USR105", "USR104", "Yes Jack, let's do it in 30 minutes.", "2024-01-15"),
)  # fmt: skip

_REMINDERS = (  # (reminder_id, title, description, time)
    (1001, "Doctor's Appointment", "Visit Dr. Smith for a checkup.", "2024-07-15 09:30"),
    (1002, "Team Meeting", "Monthly project review with the team.", "2024-07-17 11:00"),
    (1003, "To-do list", 'First, help Frank place a food delivery order at "Hema Fresh," ordering two "Fresh Gift '
                         'Packs." Then, send a message to Frank saying, "The price of the purchased goods is () yuan." '
                         "Replace the parentheses with the actual amount, keeping one decimal place.", "2024-07-16 11:00"),
)  # fmt: skip

_MERCHANTS = (  # (name, id, service, ((product, price), ...))
    ("Domino's", "M100", "Pizza", (("Margherita Pizza", 68.0), ("Super Supreme Pizza", 88.0))),
    ("Rice Village Bibimbap", "M101", "Bibimbap", (("Stone Pot Bibimbap", 35.0), ("Korean Beef Bibimbap", 45.0))),
    ("Haidilao", "M102", "Hotpot", (("Beef Rolls", 68.0), ("Seafood Platter", 88.0))),
    ("Heytea", "M103", "Milk Tea", (("Cheese Milk Tea", 25.0), ("Four Seasons Spring Milk Tea", 22.0))),
    ("Hema Fresh", "M104", "Fresh Grocery", (("Organic Vegetable Pack", 15.0), ("Fresh Gift Pack", 99.0))),
    ("Jiutian BBQ", "M105", "BBQ", (("Korean Grilled Beef", 128.0), ("Grilled Pork Belly", 78.0))),
)  # fmt: skip

Reply = dict[str, Any]


def _fail(message: str) -> Reply:
    return {"status": False, "message": message}


class BaseApi:
    """The device: Wi-Fi and the device login, which every phone app checks."""

    def __init__(self) -> None:
        self.wifi = False
        self.logged_in = True

    def _load_scenario(self, scenario: dict[str, Any], long_context: bool = False) -> None:
        self.wifi = scenario.get("wifi", False)
        self.logged_in = scenario.get("logged_in", True)

    def turn_on_wifi(self) -> Reply:
        self.wifi = True
        return {"status": True, "message": "Wi-Fi has been turned on"}

    def login_device(self) -> Reply:
        self.logged_in = True
        return {"status": True, "message": "Device has been logged in"}


class MessageApi(BaseApi):
    """Text messages between the six users; the inbox holds at most six."""

    def __init__(self) -> None:
        super().__init__()
        self.max_capacity = 6
        self.user_list = {name: {"user_id": f"USR{100 + i}", "phone_number": _PHONES[i], "occupation": _OCCUPATIONS[i]}
                          for i, name in enumerate(PEOPLE)}  # fmt: skip
        self.inbox: dict[int, dict[str, Any]] = {
            i: {"sender_id": s, "receiver_id": r, "message": text, "time": day} for i, (s, r, text, day) in enumerate(_INBOX, 1)
        }
        self.message_id_counter = len(_INBOX)

    def _id(self, name: str) -> str:
        return self.user_list[name]["user_id"]

    def send_message(self, sender_name: str, receiver_name: str, message: str) -> Reply:
        if not self.logged_in:
            return _fail("Device not logged in, unable to send message")
        if not self.wifi:
            return _fail("Wi-Fi is turned off, cannot send messages at this time")
        if len(self.inbox) >= self.max_capacity:
            return _fail("Inbox capacity is full. You need to ask the user which message to delete.")
        if sender_name not in self.user_list or receiver_name not in self.user_list:
            return _fail("Sender or receiver does not exist")
        self.message_id_counter += 1  # a sent message has no time (the latest/earliest queries then fail)
        self.inbox[self.message_id_counter] = {"sender_id": self._id(sender_name), "receiver_id": self._id(receiver_name),
                                               "message": message}  # fmt: skip
        return {"status": True, "message": f"Message successfully sent to {receiver_name}."}

    def delete_message(self, message_id: int) -> Reply:
        if not self.logged_in:
            return _fail("Device not logged in, unable to delete message")
        if message_id not in self.inbox:
            return _fail("Message ID does not exist")
        del self.inbox[message_id]
        return {"status": True, "message": f"Message ID {message_id} has been successfully deleted."}

    def view_messages_between_users(self, sender_name: str, receiver_name: str) -> Reply:
        if not self.logged_in:
            return _fail("Device not logged in, unable to view message information")
        if sender_name not in self.user_list:
            return _fail("Sender does not exist")
        if receiver_name not in self.user_list:
            return _fail("Receiver does not exist")
        pair = (self._id(sender_name), self._id(receiver_name))
        found = [{"id": i, "sender": sender_name, "receiver": receiver_name, "message": m["message"]}
                 for i, m in self.inbox.items() if (m["sender_id"], m["receiver_id"]) == pair]  # fmt: skip
        return {"status": True, "messages": found} if found else _fail("No related message records found")

    def search_messages(self, user_name: str, keyword: str) -> Reply:
        if user_name not in self.user_list:
            return _fail("User does not exist")
        user = self._id(user_name)
        found = [{"id": i, "sender_id": m["sender_id"], "receiver_id": m["receiver_id"], "message": m["message"]}
                 for i, m in self.inbox.items()
                 if user in (m["sender_id"], m["receiver_id"]) and keyword.lower() in m["message"].lower()]  # fmt: skip
        return {"status": True, "messages": found} if found else _fail("No messages found containing the keyword")

    def get_all_message_times_with_ids(self) -> dict[Any, Any]:
        if not self.logged_in:
            return _fail("Device not logged in, unable to retrieve all message times and their corresponding message IDs.")
        return {i: m["time"] for i, m in self.inbox.items()}

    def _extreme_message_id(self, which: str, pick: Any) -> Reply:
        if not self.logged_in:
            return _fail(f"Device not logged in, unable to retrieve the {which} sent message ID.")
        if not self.inbox:
            return _fail("No message records found")
        dated = [(datetime.strptime(m["time"], "%Y-%m-%d"), i) for i, m in self.inbox.items()]
        best = dated[0]
        for entry in dated[1:]:  # the first of equal dates wins
            if pick(entry[0], best[0]):
                best = entry
        return {"status": True, "message": f"The {which} message ID is {best[1]}", "message_id": best[1]}

    def get_latest_message_id(self) -> Reply:
        return self._extreme_message_id("latest", lambda a, b: a > b)

    def get_earliest_message_id(self) -> Reply:
        return self._extreme_message_id("earliest", lambda a, b: a < b)


class ReminderApi(BaseApi):
    """Reminders, at most six. (Upstream's class skips the device's constructor; its switches come from the
    task's config, which every task loads.)"""

    def __init__(self) -> None:
        super().__init__()
        self.max_capacity = 6
        self.reminder_list: dict[int, dict[str, Any]] = {
            i: {"reminder_id": rid, "title": title, "description": text, "time": when, "notified": False}
            for i, (rid, title, text, when) in enumerate(_REMINDERS, 1)
        }
        self.reminder_id_counter = len(_REMINDERS)

    def view_reminder_by_title(self, title: str) -> Reply:
        if not self.logged_in:
            return _fail("The device is not logged in, so you cannot view notifications")
        for reminder in self.reminder_list.values():
            if reminder["title"] == title:
                return {"status": True, "reminder": reminder}
        return _fail(f"No reminder found with the title '{title}'.")

    def add_reminder(self, title: str, description: str, time: Any) -> Reply:
        if not self.logged_in:
            return _fail("Device not logged in. Unable to add a new reminder.")
        if len(self.reminder_list) >= self.max_capacity:
            return _fail("Reminder capacity is full. Unable to add a new reminder.")
        self.reminder_id_counter += 1
        new_id = self.reminder_id_counter
        self.reminder_list[new_id] = {"reminder_id": new_id, "title": title, "description": description, "time": time,
                                      "notified": False}  # fmt: skip
        return {"status": True, "message": f"Reminder '{title}' was successfully added."}

    def delete_reminder(self, reminder_id: int) -> Reply:
        if not self.logged_in:
            return _fail("Device not logged in. Unable to delete the specified reminder.")
        if reminder_id not in self.reminder_list:
            return _fail("Reminder ID does not exist.")
        del self.reminder_list[reminder_id]
        return {"status": True, "message": f"Reminder ID {reminder_id} was successfully deleted."}

    def view_all_reminders(self) -> Reply:
        if not self.reminder_list:
            return _fail("No reminders found.")
        keep = ("title", "description", "time", "notified")
        return {"status": True, "reminders": [{k: r[k] for k in keep} for r in self.reminder_list.values()]}


class FoodPlatform(BaseApi):
    """Food delivery: platform logins (separate from the device's), balances, merchants' menus, orders."""

    def __init__(self) -> None:
        super().__init__()
        self.users = {name: {"user_id": f"U{100 + i}", "password": _PASSWORDS[i], "balance": _BALANCES[i]}
                      for i, name in enumerate(PEOPLE)}  # fmt: skip
        self.merchant_list = {
            name: {"merchant_id": mid, "service_type": kind, "menu": [{"product": p, "price": v} for p, v in menu]}
            for name, mid, kind, menu in _MERCHANTS
        }
        self.logged_in_users: list[str] = []
        self.orders: list[dict[str, Any]] = []

    def _load_scenario(self, scenario: dict[str, Any], long_context: bool = False) -> None:
        super()._load_scenario(scenario, long_context)
        self.logged_in_users = scenario.get("logged_in_users", [])

    def login_food_platform(self, username: str, password: str) -> Reply:
        if not self.wifi:
            return _fail("Wi-Fi is not enabled, unable to login")
        if username not in self.users:
            return _fail("User does not exist")
        if self.users[username]["password"] != password:
            return _fail("Incorrect password")
        if username in self.logged_in_users:
            return _fail(f"{username} is already logged in")
        self.logged_in_users.append(username)
        return {"status": True, "message": f"User {username} has successfully logged in!"}

    def view_logged_in_users(self) -> Reply:
        if not self.logged_in_users:
            return _fail("No users are currently logged in to the food platform")
        return {"status": True, "logged_in_users": self.logged_in_users}

    def check_balance(self, user_name: str) -> float:
        return self.users[user_name]["balance"] if user_name in self.users else 0.0

    def add_food_delivery_order(self, username: str, merchant_name: str, items: list[dict[str, Any]]) -> Reply:
        if username not in self.logged_in_users:
            return _fail(f"User {username} is not logged in to the food platform")
        if merchant_name not in self.merchant_list:
            return _fail("Merchant does not exist")
        menu = self.merchant_list[merchant_name]["menu"]
        total, lines = 0.0, []
        for item in items:
            product, quantity = item.get("product"), item.get("quantity", 1)
            if not isinstance(quantity, int) or quantity <= 0:
                return _fail(f"Invalid quantity {quantity} for product {product}")
            entry = next((m for m in menu if m["product"] == product), None)
            if entry is None:
                return _fail(f"Product {product} does not exist in {merchant_name}'s menu")
            total += entry["price"] * quantity
            lines.append({"product": product, "quantity": quantity, "price_per_unit": entry["price"]})
        if total > self.users[username]["balance"]:
            return _fail("Insufficient balance to place the order")
        self.users[username]["balance"] -= total
        self.orders.append({"user_name": username, "merchant_name": merchant_name, "items": lines, "total_price": total})
        return {"status": True, "message": f"Food delivery order successfully placed with {merchant_name}. Total amount: {total} yuan"}

    def get_products(self, merchant_name: str) -> Any:
        merchant = self.merchant_list.get(merchant_name)
        return copy.deepcopy(merchant["menu"]) if merchant else _fail(f"Merchant '{merchant_name}' does not exist")

    def view_orders(self, user_name: str) -> Reply:
        mine = [o for o in self.orders if o["user_name"] == user_name]
        return {"status": True, "orders": mine} if mine else _fail("User has no order records")

    def search_orders(self, keyword: str) -> Reply:
        found = [o for o in self.orders  # the keyword is read per order (no order: any keyword finds nothing)
                 if keyword.lower() in o["merchant_name"].lower()
                 or any(keyword.lower() in i["product"].lower() for i in o.get("items", []))]  # fmt: skip
        return {"status": True, "orders": found} if found else _fail("No matching orders found")
