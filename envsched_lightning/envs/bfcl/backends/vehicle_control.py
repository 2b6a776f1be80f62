"""BFCL `VehicleControlAPI` (func-doc file `vehicle_control.json`), behaving as the official class
(bfcl-eval 2026.3.23) does.

State (compared by the checker): `fuelLevel`, `batteryVoltage`, `engine_state`,
`remainingUnlockedDoors`, `doorStatus`, `acTemperature`, `fanSpeed`, `acMode`, `humidityLevel`,
`headLightStatus`, `parkingBrakeStatus`, `brakePedalStatus`, `distanceToNextVehicle`,
`cruiseStatus`, `destination`, the four `*TirePressure`s and `long_context` (the flag `load` was
given).
The parking brake force, slope angle and brake pedal force are private upstream (not compared),
yet `displayCarStatus` shows them. A scenario names some keys differently from the attributes
(``engineState``, ``parkingBrakeForce``, ``slopeAngle``, ``brakePedalForce``); `defaults` is keyed
by the scenario's names. `get_outside_temperature_from_google` and `get_current_speed` draw from
`random.Random(random_seed)` (default 141053), one `uniform` each, as upstream does.

Arithmetic and comparisons are written in upstream's order and with its constants' types, so
results round alike and a wrong argument type fails with the same Python message (``'<' not
supported between instances of 'str' and 'int'``, ``unsupported operand type(s) for -: ...``).

Quirks kept: the scenario's `remainingUnlockedDoors` is ignored and recomputed as 4 minus the
locked doors; `startEngine` starts on an empty tank (it only refuses a negative fuel level) and
``ignitionMode="STOP"`` stops the engine, then still runs the door and brake checks and ends with
"Invalid ignition mode."; `lockDoors` counts only doors whose status changes and fails with a
KeyError on an unknown door after changing the ones before it; `adjustClimateControl` stores the
temperature before converting it (a bad type leaves the raw value stored) and answers the
temperature as given, not in Celsius; releasing the parking brake sets the slope angle to 10;
`setCruiseControl` converts both numbers first (distance first) and stores the distance even
when the speed is then refused; `set_navigation` stores the destination before building its
answer; `displayCarStatus("doors")` answers the live `doorStatus` dict.

Long-context mode (``load(config, long_context=True)``, upstream's ``_load_scenario(...,
long_context=True)``) changes answers only: `displayCarStatus` puts a 6,503-character car
`metadata` text first (an invalid option too), `check_tire_pressure` answers that text as
`car_info`, `activateParkingBrake` (engage or release) puts a 9,710-character
`parkingBrakeInstruction` first, `estimate_distance` adds 826 `intermediaryCities` (to its error
too), and `get_outside_temperature_from_google` answers 15 days of past weather with the drawn
`outsideTemperature` last (upstream writes it into its module-level dict and returns that dict;
nothing else reads it). The filler is upstream's (`long_context_data`).
``rules="training"`` behaves as "official".
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

from . import Backend
from .long_context_data import (
    CAR_STATUS_METADATA_EXTENSION,
    INTERMEDIARY_CITIES,
    LONG_WEATHER_EXTENSION,
    PARKING_BRAKE_INSTRUCTION,
)

MAX_FUEL_LEVEL = 50  # gallons; an int upstream
MIN_FUEL_LEVEL = 0.0
MILE_PER_GALLON = 20.0
MAX_BRAKE_FORCE = 1000  # newtons at a fully pressed pedal; an int upstream
DOORS = ("driver", "passenger", "rear_left", "rear_right")

# Scenario key -> attribute it loads into, where they differ.
ATTRIBUTE = {"engineState": "engine_state", "parkingBrakeForce": "_parkingBrakeForce",
             "slopeAngle": "_slopeAngle", "brakePedalForce": "_brakePedalForce"}  # fmt: skip

ZIPCODES = (
    ("Rivermist", "83214"), ("Stonebrook", "74532"), ("Maplecrest", "56108"), ("Silverpine", "62947"),
    ("Shadowridge", "71354"), ("Sunset Valley", "83462"), ("Oakendale", "47329"), ("Willowbend", "52013"),
    ("Crescent Hollow", "69238"), ("Autumnville", "51479"), ("San Francisco", "94016"),
)  # fmt: skip
DISTANCES = (
    ("83214", "74532", 750.0), ("56108", "62947", 320.0), ("71354", "83462", 450.0), ("47329", "52013", 290.0),
    ("69238", "51479", 630.0), ("94016", "83214", 980.0), ("94016", "94704", 600.0), ("94704", "08540", 2550.0),
    ("94016", "08540", 1950.0), ("62947", "47329", 1053.0), ("94016", "62947", 780.0), ("74532", "94016", 880.0),
)  # fmt: skip


class VehicleControlAPI(Backend):
    tool_names = frozenset(
        "activateParkingBrake adjustClimateControl check_tire_pressure displayCarStatus display_log estimate_distance "
        "estimate_drive_feasibility_by_mileage fillFuelTank find_nearest_tire_shop gallon_to_liter get_current_speed "
        "get_outside_temperature_from_google get_outside_temperature_from_weather_com get_zipcode_based_on_city "
        "liter_to_gallon lockDoors pressBrakePedal releaseBrakePedal setCruiseControl setHeadlights set_navigation "
        "startEngine".split()
    )
    # Upstream's defaults, in its loading order (which is also the order of `vars()`).
    defaults = {
        "fuelLevel": 0.0,
        "batteryVoltage": 12.6,
        "engineState": "stopped",
        "remainingUnlockedDoors": 4,
        "doorStatus": {door: "unlocked" for door in DOORS},
        "acTemperature": 25.0,
        "fanSpeed": 50,
        "acMode": "auto",
        "humidityLevel": 50.0,
        "headLightStatus": "off",
        "parkingBrakeStatus": "released",
        "parkingBrakeForce": 0.0,
        "slopeAngle": 0.0,
        "brakePedalStatus": "released",
        "brakePedalForce": 0.0,
        "distanceToNextVehicle": 50.0,
        "cruiseStatus": "inactive",
        "destination": "None",
        "frontLeftTirePressure": 32.0,
        "frontRightTirePressure": 32.0,
        "rearLeftTirePressure": 30.0,
        "rearRightTirePressure": 30.0,
    }
    DEFAULT_SEED = 141053

    def load(self, config: Mapping[str, Any], long_context: bool = False) -> None:
        """Upstream's `_load_scenario(config, long_context)`, reading the scenario's key names."""
        self._random = random.Random(config.get("random_seed", self.DEFAULT_SEED))
        for key, value in self.defaults.items():
            setattr(self, ATTRIBUTE.get(key, key), copy.deepcopy(config.get(key, value)))
        # Quirk: the scenario's count is ignored; any key beyond the four doors still counts against 4.
        locked = [1 for door in self.doorStatus.keys() if self.doorStatus[door] == "locked"]
        self.remainingUnlockedDoors = 4 - len(locked)
        self.long_context = long_context

    # ----------------------------------------------------------------------------- engine and fuel
    def startEngine(self, ignitionMode: str) -> dict[str, Any]:
        if ignitionMode == "STOP":
            self.engine_state = "stopped"  # Quirk: stops here, yet answers as if refused below
        if self.remainingUnlockedDoors > 0:
            unlocked = [door for door, status in self.doorStatus.items() if status == "unlocked"]
            return {"error": "All doors must be locked before starting the engine. Here are the unlocked doors: "
                             + ", ".join(unlocked)}  # fmt: skip
        if self.brakePedalStatus != "pressed":
            return {"error": "Brake pedal needs to be pressed when starting the engine."}
        if self._brakePedalForce != 1000.0:
            return {"error": "Must press the brake fully before starting the engine."}
        if self.fuelLevel < MIN_FUEL_LEVEL:  # Quirk: an empty tank (0.0) passes
            return {"error": "Fuel tank is empty."}
        if ignitionMode != "START":
            return {"error": "Invalid ignition mode."}
        self.engine_state = "running"
        return {"engineState": self.engine_state, "fuelLevel": self.fuelLevel, "batteryVoltage": self.batteryVoltage}

    def fillFuelTank(self, fuelAmount: float) -> dict[str, Any]:
        if fuelAmount < 0:
            return {"error": "Fuel amount cannot be negative."}
        if self.fuelLevel + fuelAmount > MAX_FUEL_LEVEL:
            return {"error": "Cannot fill gas above the tank capacity."}
        if self.fuelLevel + fuelAmount < MIN_FUEL_LEVEL:  # unreachable after the first check; kept for its arithmetic
            return {"error": "Fuel tank is empty. Min fuel level is 0 gallons."}
        self.fuelLevel += fuelAmount
        return {"fuelLevel": self.fuelLevel}

    def estimate_drive_feasibility_by_mileage(self, distance: float) -> dict[str, bool]:
        return {"canDrive": not (self.fuelLevel * MILE_PER_GALLON < distance)}

    def liter_to_gallon(self, liter: float) -> dict[str, Any]:
        return {"gallon": liter * 0.264172}

    def gallon_to_liter(self, gallon: float) -> dict[str, Any]:
        return {"liter": gallon * 3.78541}

    # ----------------------------------------------------------------------------- doors and brakes
    def lockDoors(self, unlock: bool, door: list[str]) -> dict[str, Any]:
        wanted = "unlocked" if unlock else "locked"
        step = 1 if unlock else -1
        for d in door:
            if self.doorStatus[d] == wanted:  # Quirk: an unknown door raises KeyError, earlier ones stay changed
                continue
            self.doorStatus[d] = wanted
            self.remainingUnlockedDoors += step
        return {"lockStatus": wanted, "remainingUnlockedDoors": self.remainingUnlockedDoors}

    def activateParkingBrake(self, mode: str) -> dict[str, Any]:
        if mode not in ["engage", "release"]:
            return {"error": "Invalid mode"}
        engage = mode == "engage"
        self.parkingBrakeStatus = "engaged" if engage else "released"
        self._parkingBrakeForce = 500.0 if engage else 0.0
        self._slopeAngle = 10.0  # Quirk: releasing sets the slope too
        answer = {"parkingBrakeInstruction": PARKING_BRAKE_INSTRUCTION} if self.long_context else {}
        return answer | {"parkingBrakeStatus": self.parkingBrakeStatus, "_parkingBrakeForce": self._parkingBrakeForce,
                         "_slopeAngle": 10.0}  # fmt: skip

    def pressBrakePedal(self, pedalPosition: float) -> dict[str, Any]:
        if not (0 <= pedalPosition <= 1):
            return {"error": "Pedal position must be between 0 and 1."}
        if pedalPosition == 0:
            return self.releaseBrakePedal()
        force = pedalPosition * MAX_BRAKE_FORCE  # stored unconverted (True gives the int 1000)
        self.brakePedalStatus = "pressed"
        self._brakePedalForce = force
        return {"brakePedalStatus": "pressed", "brakePedalForce": float(force)}

    def releaseBrakePedal(self) -> dict[str, Any]:
        self.brakePedalStatus = "released"
        self._brakePedalForce = 0.0
        return {"brakePedalStatus": "released", "brakePedalForce": 0.0}

    def setCruiseControl(self, speed: float, activate: bool, distanceToNextVehicle: float) -> dict[str, Any]:
        distanceToNextVehicle = float(distanceToNextVehicle)  # converted before speed: its error comes first
        speed = float(speed)
        if self.engine_state == "stopped":
            return {"error": "Start the engine before activating the cruise control."}
        self.distanceToNextVehicle = distanceToNextVehicle  # Quirk: stored even when the speed is refused
        if activate:
            if speed < 0 or speed > 120 or speed % 5 != 0:
                return {"error": "Invalid speed"}
            self.cruiseStatus = "active"
        else:
            self.cruiseStatus = "inactive"
        return {"cruiseStatus": self.cruiseStatus, "currentSpeed": speed,
                "distanceToNextVehicle": distanceToNextVehicle}  # fmt: skip

    def get_current_speed(self) -> dict[str, float]:
        return {"currentSpeed": self._random.uniform(0.0, 120.0)}

    # ----------------------------------------------------------------------------- cabin
    def adjustClimateControl(self, temperature: float, unit: str = "celsius", fanSpeed: int = 50,
                             mode: str = "auto") -> dict[str, Any]:  # fmt: skip
        if not (0 <= fanSpeed <= 100):
            return {"error": "Fan speed must be between 0 and 100."}
        self.acTemperature = temperature  # Quirk: set before a conversion that may raise
        if unit == "fahrenheit":
            self.acTemperature = (temperature - 32) * 5 / 9
        self.fanSpeed = fanSpeed
        self.acMode = mode
        # Quirk: the temperature as given, whatever its unit
        return {"currentACTemperature": temperature, "climateMode": mode, "humidityLevel": self.humidityLevel}

    def setHeadlights(self, mode: str) -> dict[str, str]:
        if mode not in ["on", "off", "auto"]:
            return {"error": "Invalid headlight mode."}
        self.headLightStatus = "on" if mode == "on" else "off"  # "auto" means off
        return {"headlightStatus": self.headLightStatus}

    def displayCarStatus(self, option: str) -> dict[str, Any]:
        metadata = {"metadata": CAR_STATUS_METADATA_EXTENSION} if self.long_context else {}
        return metadata | self._status(option)

    def _status(self, option: str) -> dict[str, Any]:
        if option == "fuel":
            return {"fuelLevel": self.fuelLevel}
        if option == "battery":
            return {"batteryVoltage": self.batteryVoltage}
        if option == "doors":
            return {"doorStatus": self.doorStatus}  # Quirk: the live dict, not a copy
        if option == "climate":
            return {"currentACTemperature": self.acTemperature, "fanSpeed": self.fanSpeed, "climateMode": self.acMode,
                    "humidityLevel": self.humidityLevel}  # fmt: skip
        if option == "headlights":
            return {"headlightStatus": self.headLightStatus}
        if option == "parkingBrake":
            return {"parkingBrakeStatus": self.parkingBrakeStatus, "parkingBrakeForce": self._parkingBrakeForce,
                    "slopeAngle": self._slopeAngle}  # fmt: skip
        if option == "brakePedal":
            return {"brakePedalStatus": self.brakePedalStatus, "brakePedalForce": self._brakePedalForce}
        if option == "engine":
            return {"engineState": self.engine_state}
        return {"error": "Invalid option"}

    def display_log(self, messages: list[str]) -> dict[str, Any]:
        return {"log": messages}

    def check_tire_pressure(self) -> dict[str, Any]:
        total = self.frontLeftTirePressure + self.frontRightTirePressure + self.rearLeftTirePressure \
            + self.rearRightTirePressure  # fmt: skip
        return {
            "frontLeftTirePressure": self.frontLeftTirePressure,
            "frontRightTirePressure": self.frontRightTirePressure,
            "rearLeftTirePressure": self.rearLeftTirePressure,
            "rearRightTirePressure": self.rearRightTirePressure,
            "healthy_tire_pressure": 30 <= total / 4 <= 35,
            "car_info": CAR_STATUS_METADATA_EXTENSION if self.long_context else {},
        }

    def find_nearest_tire_shop(self) -> dict[str, str]:
        return {"shopLocation": "456 Oakwood Avenue, Rivermist, 83214"}

    # ----------------------------------------------------------------------------- outside world
    def get_outside_temperature_from_google(self) -> dict[str, Any]:
        # Quirk: upstream writes the temperature into its module-level weather dict and answers that
        # dict itself; a fresh merged dict reads the same (the key lands last the first time, stays there).
        weather = LONG_WEATHER_EXTENSION if self.long_context else {}
        return weather | {"outsideTemperature": self._random.uniform(-10.0, 40.0)}

    def get_outside_temperature_from_weather_com(self) -> dict[str, int]:
        return {"error": 404}

    def get_zipcode_based_on_city(self, city: str) -> dict[str, str]:
        # compared with `==` one by one as upstream does (a dict lookup would raise on a list)
        return {"zipcode": next((code for name, code in ZIPCODES if city == name), "00000")}

    def estimate_distance(self, cityA: str, cityB: str) -> dict[str, Any]:
        found = next(({"distance": km} for a, b, km in DISTANCES
                      if (cityA == a and cityB == b) or (cityA == b and cityB == a)), None)  # fmt: skip
        answer = found or {"error": "distance not found in database."}
        if self.long_context:
            answer["intermediaryCities"] = INTERMEDIARY_CITIES
        return answer

    def set_navigation(self, destination: str) -> dict[str, str]:
        self.destination = destination  # Quirk: stored before the answer is built (a non-string raises after)
        return {"status": "Navigating to " + destination}
