"""A component that knows nothing about Quiver: world `acme:plain/scripted`
of tests/components/wit/plain.wit, built with componentize-py (build.sh).

componentize-py conventions: a class per exported interface, named after it
(`Text`, `Probe`) in the module given to `componentize` (`app`), with
snake_case methods (`read-file` is `read_file`); a record is a dataclass
(`text.Counts`), an enum an `Enum` (`text.LetterCase.UPPER`), `option<T>`
is the value or `None`; a `result<T, E>` returns T, and raising
`componentize_py_types.Err(value)` gives the error case.
"""

import os

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import text

LIMIT = 10_000

# Calls this instance has served.
CALLS = 0


class Text(exports.Text):
    def count(self, text_: str) -> text.Counts:
        return text.Counts(words=len(text_.split()), lines=1 + text_.count("\n"), chars=len(text_))

    def recase(self, text_: str, to: text.LetterCase) -> str:
        return text_.upper() if to == text.LetterCase.UPPER else text_.lower()

    def repeat(self, text_: str, times: int, separator: str | None) -> str:
        sep = " " if separator is None else separator
        length = len(text_) * times + len(sep) * max(times - 1, 0)
        if length > LIMIT:
            raise Err(f"the result would be {length} characters, more than {LIMIT}")
        return sep.join([text_] * times)


class Probe(exports.Probe):
    def read_file(self, path: str) -> str:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise Err(str(e))

    def env_var(self, name: str) -> str | None:
        return os.environ.get(name)

    def calls(self) -> int:
        global CALLS
        CALLS += 1
        return CALLS
