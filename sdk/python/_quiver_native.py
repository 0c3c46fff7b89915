"""Stand-ins for the bindings componentize-py generates from `wit/`, so that
`quiver_plugin` imports natively and a plugin's actions can be unit-tested
without building a component. Same names and shapes; nothing else."""

from dataclasses import dataclass
from enum import Enum
from types import SimpleNamespace
from typing import List, Optional


class Err(Exception):
    """The failure case of a WIT `result`."""

    def __init__(self, value):
        super().__init__(value)
        self.value = value


class Kind(Enum):
    TOOL = 0
    CONNECTOR = 1
    DATABASE = 2


class Access(Enum):
    READ = 0
    WRITE = 1
    ADMIN = 2


@dataclass
class Action:
    name: str
    description: str
    input_schema: str
    output_schema: Optional[str]
    access: Access


@dataclass
class Manifest:
    name: str
    version: str
    kind: Kind
    description: str
    categories: List[str]
    actions: List[Action]


@dataclass
class Error_InvalidInput:
    value: str


@dataclass
class Error_NotFound:
    value: str


@dataclass
class Error_Denied:
    value: str


@dataclass
class Error_Unavailable:
    value: str


@dataclass
class Error_Failed:
    value: str


wit = SimpleNamespace(
    Kind=Kind,
    Access=Access,
    Action=Action,
    Manifest=Manifest,
    Error_InvalidInput=Error_InvalidInput,
    Error_NotFound=Error_NotFound,
    Error_Denied=Error_Denied,
    Error_Unavailable=Error_Unavailable,
    Error_Failed=Error_Failed,
)


class _Plugin:
    """The protocol class the component exports subclass."""


exports = SimpleNamespace(Plugin=_Plugin)
